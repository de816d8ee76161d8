/** The messages between the trainer and an agent host process (agentHost.ts, agentProcess.ts). */

export type AgentHostMessage =
  | { type: 'load'; file: string; code: string; exportName: string | undefined }
  | { type: 'run'; id: number; row: unknown; context: { baseURL: string; apiKey: string; model: string } }
  | { type: 'abort'; id: number }
  | { type: 'ping' };

export type AgentHostReply =
  | { type: 'loaded' }
  | { type: 'load-failed'; message: string }
  | { type: 'done'; id: number; value: unknown }
  | { type: 'error'; id: number; message: string }
  | { type: 'pong' };
