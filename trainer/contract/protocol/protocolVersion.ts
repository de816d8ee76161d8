/**
 * The protocol version spoken between the trainer process, the extension and the webviews.
 * Bump it when a message or record changes incompatibly; receivers reject other versions
 * with an error that names both.
 */
export const PROTOCOL_VERSION = 1;
