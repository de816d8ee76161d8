import { defineConfig } from 'rollout-studio';
import { settings } from './settings';

// The currency tutorial's settings with agent-ai-sdk.ts, the same agent on the Vercel AI SDK: its
// generateText loop runs as it is, its model calls answered by the policy being trained.
export default defineConfig({ ...settings, name: 'currency-ai-sdk', agent: './agent-ai-sdk.ts' });
