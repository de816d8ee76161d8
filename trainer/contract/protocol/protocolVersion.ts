/**
 * The protocol version spoken between the trainer process, the extension and the webviews.
 * Bump it when a message or record changes incompatibly; receivers reject other versions
 * with an error that names both.
 */
export const PROTOCOL_VERSION = 1;

/**
 * A protocol message as its sender builds it: everything but the version, which the one helper
 * that sends it adds — the trainer's RunReporter.emit and sendToParent (cli/ipc.ts), the
 * extension's protocolStamp.ts.
 */
export type Unstamped<M> = M extends { protocol: unknown } ? Omit<M, 'protocol'> : never;
