/**
 * The adapter outside VS Code: over a TCP port (tests connect a DAP client to it in-process)
 * or over stdin/stdout (`node standalone.js`, or `--server=4711`), for other DAP clients and
 * for debugging the adapter itself.
 */
import * as net from 'node:net';
import { DebugSession } from '@vscode/debugadapter';
import { RolloutDebugSession, type SessionHost } from './debugSession';

export interface AdapterServer {
  port: number;
  close(): Promise<void>;
}

/** Serve one adapter session per connection on 127.0.0.1 (`port` 0: any free port); `host` enables live training. */
export function serveAdapter(port = 0, host: SessionHost = {}): Promise<AdapterServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const session = new RolloutDebugSession(host);
    session.setRunAsServer(true);
    session.start(socket, socket);
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Over stdin/stdout: replay only (no trainer is configured). */
class ReplayOnlySession extends RolloutDebugSession {
  constructor() {
    super({});
  }
}

if (require.main === module) DebugSession.run(ReplayOnlySession);
