import * as net from 'node:net';

/**
 * A slow-loris client: it opens a connection to `url`, sends `head` (a request line and some
 * headers, or a whole head and part of a body) and then one more `drip` every `everyMs`, for as
 * long as the server keeps the connection open, up to `giveUpMs`. Resolves with what the server
 * answered and how long the connection stayed open; `closedByServer` false means it never closed.
 */
export function slowClient(
  url: string,
  options: { head: string; drip: string; everyMs: number; giveUpMs: number },
): Promise<{ closedByServer: boolean; openMs: number; answer: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    const socket = net.connect({ host: hostname, port: Number(port) });
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ closedByServer, openMs: Date.now() - started, answer });
    };
    const giveUp = setTimeout(() => finish(false), options.giveUpMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server closing mid-write reads as a reset here; anything else is the test's fault.
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error);
    });
    socket.on('connect', () => {
      socket.write(options.head);
      timer = setInterval(() => socket.writable && socket.write(options.drip), options.everyMs);
    });
  });
}
