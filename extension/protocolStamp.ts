import { PROTOCOL_VERSION, type Unstamped } from '../trainer/contract/protocol';

/**
 * The one place the extension writes the protocol version onto a message it sends: the
 * trainer's control messages (TrainerProcess.send) and tool-session requests (ToolSession).
 * Call sites build a message without `protocol` and hand it to their send helper, which stamps
 * it here; the trainer's parseWith refuses a version it does not speak. The panel messages
 * (trainer/contract/protocol/panels.ts) carry no version: the host and its webviews ship in one
 * bundle. They leave through one helper each way too: RunPanelHost.post and the webview's
 * panelApp `post`.
 */

/** `message` with this build's protocol version. */
export function stamped<M extends { protocol: typeof PROTOCOL_VERSION }>(message: Unstamped<M>): M {
  return { ...message, protocol: PROTOCOL_VERSION } as unknown as M;
}
