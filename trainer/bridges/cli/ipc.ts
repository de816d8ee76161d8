import { PROTOCOL_VERSION, type TrainerMessage, type Unstamped } from '../../contract/protocol';

/** True when the process was started with an IPC channel (by the extension). */
export function hasParent(): boolean {
  return typeof process.send === 'function' && process.connected;
}

/**
 * Send one protocol message to the parent process and wait until it is handed to the OS. The
 * protocol version is stamped here: callers build the message without it.
 */
export function sendToParent(message: Unstamped<TrainerMessage>): Promise<void> {
  const stamped = { protocol: PROTOCOL_VERSION, ...message } as TrainerMessage;
  if (!hasParent())
    throw new Error('--ipc was given but this process has no IPC channel; it must be started by the extension.');
  return new Promise((resolve, reject) =>
    process.send!(stamped, undefined, {}, (error) => (error ? reject(error) : resolve())),
  );
}
