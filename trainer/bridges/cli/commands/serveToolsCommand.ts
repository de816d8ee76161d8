import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { startToolServer } from '../../serve/httpServer';
import { DEFAULT_LIMITS } from '../../../foundations/http/requestGuard';
import { UsageError } from '../usage';
import { loadConfig } from '../../usercode/loadConfig';

/** The environment variable serve-tools takes its token from (verl's reward module and launch script send the same). */
export const TOKEN_VARIABLE = 'ROLLOUT_STUDIO_TOKEN';

export const serveToolsUsage = `rollout-studio serve-tools <config.ts> [--port N] [--host H] [--token-file F]

Serves the config's tools (its own and its MCP servers') as an MCP server over Streamable HTTP
at /mcp, and its rewards at POST /reward (JSON: { items: [{ row, messages | response }] } in,
{ results: [{ total, outcome, process, components, calls }] } out; see trainer/bridges/verl/README.md). A trainer
elsewhere (verl: rollout-studio export verl) calls them.
  --port N           the port (default 8808; 0: any free port)
  --host H           the address to listen on (default 127.0.0.1, this machine only)
  --token-file F     require "Authorization: Bearer <token>" on every request, the token being
                     the first line of F (or set ${TOKEN_VARIABLE}); needed with another --host
  --allow-host NAME  accept NAME in the Host header too (repeatable; default: the listening
                     address and the loopback names, every name of this machine with 0.0.0.0)
  --allow-origin O   accept requests from the web page origin O (repeatable; default none)
  --max-body-mb N    the largest request body (default ${DEFAULT_LIMITS.maxBodyBytes / 1024 / 1024})
  --max-batch N      the most items in one /reward request or JSON-RPC batch (default ${DEFAULT_LIMITS.maxBatch})
Prints "serving <url>" once listening; Ctrl-C stops it.`;

/** The token: from --token-file or the environment, never the command line (which every user of the machine can read with ps). */
export function readToken(file: string | undefined, given: string | undefined): string | undefined {
  if (given !== undefined)
    throw new UsageError(
      `--token shows the secret to every user of this machine (ps); set ${TOKEN_VARIABLE} or give --token-file FILE`,
    );
  let token = process.env[TOKEN_VARIABLE];
  let source = TOKEN_VARIABLE;
  if (file !== undefined) {
    try {
      token = fs.readFileSync(file, 'utf8').split(/\r?\n/)[0];
    } catch (error) {
      throw new UsageError(
        `--token-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    source = `--token-file ${file}`;
    // A file given for the token and empty (a failed `openssl … > F`, a wrong path to an empty
    // file) must not serve without one.
    if (token.trim() === '')
      throw new UsageError(
        `--token-file: token file ${file} is empty (the token is its first line); write one with openssl rand -hex 16 > ${file}`,
      );
  }
  if (token === undefined || token === '') return undefined;
  if (token.trim().length < 8)
    throw new UsageError(
      `${source}: the token has fewer than 8 characters; use a long random one (openssl rand -hex 16)`,
    );
  return token.trim();
}

export function positiveNumber(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${flag}: expected a positive number, got "${text}"`);
  return value;
}

export async function serveToolsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '8808' },
      host: { type: 'string', default: '127.0.0.1' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      'allow-origin': { type: 'string', multiple: true },
      'max-body-mb': { type: 'string' },
      'max-batch': { type: 'string' },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one config file');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port: expected a port number, got "${values.port}"`);
  const token = readToken(values['token-file'], values.token);
  const limits = {
    maxBodyBytes: Math.round(
      positiveNumber(values['max-body-mb'], '--max-body-mb', DEFAULT_LIMITS.maxBodyBytes / 1024 / 1024) * 1024 * 1024,
    ),
    maxBatch: Math.floor(positiveNumber(values['max-batch'], '--max-batch', DEFAULT_LIMITS.maxBatch)),
  };
  const loaded = await loadConfig(positionals[0]);
  const log = (line: string) => process.stderr.write(line + '\n');
  const server = await startToolServer(loaded, {
    host: values.host,
    port,
    ...(token !== undefined ? { token } : {}),
    allowHosts: values['allow-host'] ?? [],
    allowOrigins: values['allow-origin'] ?? [],
    limits,
    log,
  });
  process.stdout.write(
    `serving ${server.url} — MCP at ${server.url}/mcp (${server.tools.names.join(', ') || 'no tools'}), rewards at ${server.url}/reward\n`,
  );
  if (token === undefined)
    log(
      `no token: any program of this machine can call the tools (web pages cannot); set ${TOKEN_VARIABLE} to require one`,
    );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
}
