import { defineConfig } from 'rollout-studio';
import { settings } from './settings';

// The currency tutorial's settings with agent.py, the same agent as a Python script: one process
// per rollout, run in this folder, the row on its stdin and the session's endpoint in
// OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL.
export default defineConfig({ ...settings, name: 'currency-python', agent: { command: ['python3', 'agent.py'] } });
