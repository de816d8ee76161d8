import { defineConfig } from 'rollout-studio';
import { settings } from './settings';

// The currency tutorial's settings with agent-openai-agents.ts, the same agent on the OpenAI Agents
// SDK: its Runner runs as it is, its model calls answered by the policy being trained.
export default defineConfig({ ...settings, name: 'currency-openai-agents', agent: './agent-openai-agents.ts' });
