import { z } from 'zod';
import { PROTOCOL_VERSION } from './protocolVersion';
import { EnvironmentReport } from './environment';
import { TrainingEvent } from './live';
import { AuthoringEvent } from './authoring';

/**
 * Messages the trainer process sends to whoever launched it (the extension, over Node's IPC
 * channel). Every message carries the protocol version; `parseTrainerMessage` checks it.
 */
export const TrainerMessage = z.discriminatedUnion('type', [
  z.object({ protocol: z.literal(PROTOCOL_VERSION), type: z.literal('environment.report'), report: EnvironmentReport }),
  z.object({
    protocol: z.literal(PROTOCOL_VERSION),
    type: z.literal('fatal'),
    /** What went wrong, for the user. */
    message: z.string(),
    stack: z.string().optional(),
  }),
  ...TrainingEvent.options,
  ...AuthoringEvent.options,
]);
export type TrainerMessage = z.infer<typeof TrainerMessage>;

/** Messages between an extension host panel and its webview, both directions. */
export const EnvironmentPanelToWebview = z.discriminatedUnion('type', [
  z.object({ type: z.literal('checking') }),
  z.object({ type: z.literal('report'), report: EnvironmentReport }),
  z.object({ type: z.literal('failed'), title: z.string(), detail: z.string() }),
]);
export type EnvironmentPanelToWebview = z.infer<typeof EnvironmentPanelToWebview>;

export const EnvironmentWebviewToPanel = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('recheck') }),
  z.object({ type: z.literal('copyJson') }),
]);
export type EnvironmentWebviewToPanel = z.infer<typeof EnvironmentWebviewToPanel>;
