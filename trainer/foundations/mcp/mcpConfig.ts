import { z } from 'zod';
import {
  type FoundSecrets,
  isCredentialName,
  looksLikeToken,
  maskSecrets,
  redactArguments,
  redactUrl,
} from './redactSecrets';

/**
 * How a training config names MCP servers whose tools the policy may call:
 *
 * ```ts
 * mcpServers: {
 *   files: { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', './docs'] },
 *   web:   { url: 'http://127.0.0.1:8808/mcp', headers: { Authorization: 'Bearer …' }, prefix: 'web_' },
 * }
 * ```
 *
 * The same shape as the `mcpServers` files of MCP clients (and of verl's MCP tool config): a
 * server is a process spoken to over stdio (`command`, `args`, `env`, `cwd`) or an endpoint
 * spoken to over Streamable HTTP (`url`, `headers`). What we add: which of its tools to use, a
 * prefix for their names, the per-call timeout and concurrency our own tools have, and how often
 * a crashed server process is restarted.
 */

const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const common = {
  /** Only these tools of the server (by their MCP names); default: all it lists. */
  tools: z.array(z.string().min(1)).min(1).optional(),
  /** Put before each tool's name, so two servers' tools cannot collide (`fs_` + `read_file`). */
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/, 'expected letters, digits, "_" or "-"')
    .default(''),
  /** A call still running after this many milliseconds fails with `timeout` (as for our own tools). */
  timeoutMs: z.number().positive().default(30_000),
  /** At most this many calls of each tool run at once. */
  concurrency: z.number().int().positive().default(16),
  /** How long connecting (process start, initialize, tools/list) may take. */
  startTimeoutMs: z.number().positive().default(30_000),
};

export const StdioServerConfig = z.strictObject({
  /** The program that serves MCP on its stdin/stdout (`npx`, `node`, `uvx`, a path). */
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to a minimal environment (PATH, HOME, …); the trainer's own variables are not passed on. */
  env: z.record(z.string(), z.string()).optional(),
  /** Working directory, relative to the config's folder (default: the config's folder). */
  cwd: z.string().optional(),
  /** Restarts of a server process that exits during the run before its calls fail for good. */
  maxRestarts: z.number().int().min(0).default(3),
  ...common,
});
export type StdioServerConfig = z.output<typeof StdioServerConfig>;

export const HttpServerConfig = z.strictObject({
  /** A Streamable HTTP endpoint, e.g. `http://127.0.0.1:8808/mcp`. */
  url: z.url({ protocol: /^https?$/ }),
  /** Sent with every request (authorisation, API keys). */
  headers: z.record(z.string(), z.string()).optional(),
  ...common,
});
export type HttpServerConfig = z.output<typeof HttpServerConfig>;

export const McpServerConfig = z.union([StdioServerConfig, HttpServerConfig], {
  error: 'expected a stdio server { command, args?, env?, cwd? } or a Streamable HTTP server { url, headers? }',
});
export type McpServerConfig = z.output<typeof McpServerConfig>;
export type McpServerConfigInput = z.input<typeof McpServerConfig>;

export const McpServersConfig = z.record(
  z.string().regex(SERVER_NAME, 'server names use letters, digits, "_" and "-"'),
  McpServerConfig,
);
export type McpServersConfig = z.output<typeof McpServersConfig>;

export function isStdioServer(server: McpServerConfig): server is StdioServerConfig {
  return 'command' in server;
}

/** The command line or URL, for messages — which reach the logs and run.json's error — with its secrets replaced as in run.json's record. */
export function describeServer(name: string, server: McpServerConfig): string {
  return isStdioServer(server)
    ? `MCP server "${name}" (${[server.command, ...redactArguments(server.args)].join(' ')})`
    : `MCP server "${name}" (${redactUrl(server.url)})`;
}

/** The values of `env` or `headers` entries named like credentials (`GITHUB_TOKEN`, `Authorization`) or shaped like tokens, and a scheme's token (`Bearer …`). */
function credentialValues(entries: Record<string, string> | undefined, found: FoundSecrets): void {
  for (const [name, value] of Object.entries(entries ?? {})) {
    if (!isCredentialName(name) && !looksLikeToken(value)) continue;
    found.add(value);
    const scheme = /^\w+\s+(\S+)$/.exec(value);
    if (scheme) found.add(scheme[1]);
  }
}

/**
 * `text` — a message from the MCP SDK, fetch or the server process, which use the real values —
 * with the server's secrets masked as describeServer masks them: fetch, refusing a URL with a
 * user and password, quotes the whole URL; a server may echo its arguments or environment.
 */
export function maskServerSecrets(text: string, server: McpServerConfig): string {
  const found: FoundSecrets = new Set();
  if (isStdioServer(server)) {
    redactArguments(server.args, found);
    credentialValues(server.env, found);
    return maskSecrets(text, found);
  }
  const redacted = redactUrl(server.url, found);
  credentialValues(server.headers, found);
  // The whole URL first, as written or as URL writes it, so what is left of it reads as in describeServer.
  const whole = text
    .replaceAll(server.url, redacted)
    .replaceAll(URL.canParse(server.url) ? new URL(server.url).href : server.url, redacted);
  return maskSecrets(whole, found);
}

/**
 * The servers as run.json records them: everything but the values of `env` and `headers`, which
 * often hold keys and tokens (their names are kept, so a reader sees what was set), and with the
 * secrets a URL or a command line can carry replaced by `***` (redactSecrets.ts). A server with
 * nothing to redact is recorded as written, so its config hash is what it was.
 */
export function recordableServers(servers: McpServersConfig): Record<string, unknown> {
  // Redacted in place, and env/headers last as before: a config without secrets hashes as it did.
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      if (isStdioServer(server)) {
        const { env, ...rest } = server;
        return [name, { ...rest, args: redactArguments(rest.args), ...(env ? { env: Object.keys(env) } : {}) }];
      }
      const { headers, ...rest } = server;
      return [name, { ...rest, url: redactUrl(rest.url), ...(headers ? { headers: Object.keys(headers) } : {}) }];
    }),
  );
}
