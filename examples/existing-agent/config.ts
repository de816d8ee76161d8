import { defineConfig } from 'rollout-studio';
import { settings } from './settings';

// The currency tutorial's settings (../currency-agent/config.ts), with the agent of agent.ts: it
// runs as it is, its model calls answered by the policy being trained.
export default defineConfig({ ...settings, name: 'currency-openai-sdk', agent: './agent.ts' });
