import * as crypto from 'node:crypto';
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the local servers (`serve-tools`, `serve`, a training's agent endpoint) share beyond the guard. */

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Whether a secret a client sent is the expected one, compared in constant time (no timing oracle). */
export function sameSecret(given: string | undefined, expected: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * Listens on `host:port` (0: any free port); returns `http://host:port` and a `close` that ends
 * every connection (agents and SDKs keep theirs alive) before the server. A port in use fails with
 * a message that says to choose another with --port.
 */
export async function listen(
  server: http.Server,
  host: string,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  }).catch((error: NodeJS.ErrnoException) => {
    throw new Error(
      error.code === 'EADDRINUSE'
        ? `port ${port} on ${host} is in use; choose another with --port`
        : `cannot listen on ${host}:${port}: ${error.message}`,
    );
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
