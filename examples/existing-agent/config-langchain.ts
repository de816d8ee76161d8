import { defineConfig } from 'rollout-studio';
import { settings } from './settings';

// The currency tutorial's settings with agent-langchain.ts, the same agent on LangChain.js: its
// ChatOpenAI tool loop runs as it is, its model calls answered by the policy being trained.
export default defineConfig({ ...settings, name: 'currency-langchain', agent: './agent-langchain.ts' });
