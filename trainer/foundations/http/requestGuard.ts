import * as http from 'node:http';
import * as os from 'node:os';

/**
 * What keeps `serve-tools` closed to web pages and bounded in what it reads, checked before any
 * route runs.
 *
 * A page in the user's browser can send requests to 127.0.0.1 (and, by DNS rebinding, make a
 * name it controls resolve there and read the answers). So, as the MCP specification asks of a
 * local server:
 * - the `Host` header must name the address the server listens on (loopback names by default),
 *   else 403: a rebound name (`attacker.example:8808`) never matches;
 * - an `Origin` header, which browsers send on every cross-site request and on every POST, must
 *   be on an allowlist (empty by default: the server's clients — verl, MCP clients, scripts —
 *   are not browsers and send none), else 403;
 * - a POST body must be `application/json`: a page can send `text/plain` across sites without a
 *   CORS preflight, never `application/json`;
 * - the body and the batch have stated maxima: a request past them is refused with 413 before
 *   it is parsed, so one request cannot hold gigabytes;
 * - the headers and the whole request must arrive within stated times (`boundedServer`), so a
 *   client that sends a byte now and then (slow loris) cannot hold a connection for ever.
 */

export interface GuardLimits {
  /** Largest request body, in bytes. */
  maxBodyBytes: number;
  /** Most items in one `/reward` request, and most messages in one JSON-RPC batch at `/mcp`. */
  maxBatch: number;
  /** Longest wait for a request's headers, in milliseconds. */
  headersTimeoutMs: number;
  /** Longest wait for a whole request, body included (not its answer: a generation may take longer). */
  requestTimeoutMs: number;
}

export const DEFAULT_LIMITS: GuardLimits = {
  maxBodyBytes: 8 * 1024 * 1024,
  maxBatch: 1024,
  // Generous for a largest body over a slow link (8 MB in a minute is 140 kB/s); Node's own
  // defaults (60 s, 300 s) are checked only every 30 s.
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
};

/**
 * An HTTP server whose clients must send their headers and their request within the limits'
 * times; past them Node answers 408 and closes the connection. Idle keep-alive connections are
 * bounded separately (`keepAliveTimeout`).
 */
export function boundedServer(limits: GuardLimits, handler: http.RequestListener): http.Server {
  const requestTimeout = limits.requestTimeoutMs;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(limits.headersTimeoutMs, requestTimeout);
  return http.createServer(
    // Timeouts are checked on this interval: a tenth of the shorter one, so they hold to within 10 %.
    { requestTimeout, headersTimeout, connectionsCheckingInterval: Math.max(10, Math.round(headersTimeout / 10)) },
    handler,
  );
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** A request the guard refuses: the HTTP status and what to say. */
export class RefusedRequest extends Error {
  constructor(
    readonly status: 403 | 413 | 415,
    message: string,
  ) {
    super(message);
    this.name = 'RefusedRequest';
  }
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

/** The host names a client may put in `Host` for a server listening on `listenHost` (lower case, IPv6 without brackets). */
export function allowedHostNames(listenHost: string, extra: readonly string[] = []): Set<string> {
  const names = new Set<string>([...LOOPBACK_NAMES, ...extra].map((n) => n.toLowerCase()));
  if (isWildcard(listenHost)) {
    // Every address of the machine is served: its own names and addresses are what clients use.
    names.add(os.hostname().toLowerCase());
    for (const list of Object.values(os.networkInterfaces()))
      for (const address of list ?? []) names.add(address.address.toLowerCase());
  } else names.add(listenHost.replace(/^\[|\]$/g, '').toLowerCase());
  return names;
}

/** The host name of a `Host` header value (`name:port`, `[v6]:port`), lower case; undefined when unreadable. */
export function hostNameOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (v6) return v6[1].toLowerCase();
  const plain = /^([^:\s]+)(?::\d+)?$/.exec(header);
  return plain ? plain[1].toLowerCase() : undefined;
}

/** Refuse a request from a web page: a foreign `Host` (DNS rebinding) or an `Origin` not allowed. */
export function checkCaller(req: http.IncomingMessage, hosts: ReadonlySet<string>, origins: ReadonlySet<string>): void {
  const host = hostNameOf(req.headers.host);
  if (host === undefined || !hosts.has(host)) {
    // Not which names would do: before the token is checked, a caller learns nothing of the
    // machine (its host name, its interfaces' addresses).
    throw new RefusedRequest(
      403,
      `Host "${req.headers.host ?? ''}" is not an address this server listens on; connect by the address it listens on, or give --allow-host NAME to accept another name`,
    );
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !origins.has(origin.toLowerCase())) {
    throw new RefusedRequest(
      403,
      `requests from web pages are refused (Origin "${origin}"); give --allow-origin ${origin} to accept that page`,
    );
  }
}

/** A POST must say its body is JSON. */
export function checkJsonBody(req: http.IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json')
    throw new RefusedRequest(
      415,
      `send the body as Content-Type: application/json (got ${type ? `"${type}"` : 'none'})`,
    );
}

/** The body as text, refused with 413 past `maxBytes` (by its Content-Length before reading, or while reading). */
export function readLimitedBody(req: http.IncomingMessage, maxBytes: number): Promise<string> {
  const tooLarge = () =>
    new RefusedRequest(413, `the request body is larger than ${maxBytes} bytes, this server's limit (--max-body-mb)`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      chunks.length = 0;
      req.pause();
      reject(tooLarge());
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A JSON-RPC batch (an array of messages) larger than the limit is refused. */
export function checkBatchSize(count: number, limits: GuardLimits, what: string): void {
  if (count > limits.maxBatch)
    throw new RefusedRequest(
      413,
      `${what}: ${count} items, more than this server's limit of ${limits.maxBatch} per request (--max-batch); send them in smaller requests`,
    );
}
