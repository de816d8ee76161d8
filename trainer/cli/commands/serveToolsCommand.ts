import { parseArgs } from 'node:util';
import { startToolServer } from '../../serve/httpServer';
import { UsageError } from '../usage';
import { loadConfig } from "../../usercode/loadConfig";

export const serveToolsUsage = `rollout-studio serve-tools <config.ts> [--port N] [--host H] [--token T]

Serves the config's tools (its own and its MCP servers') as an MCP server over Streamable HTTP
at /mcp, and its rewards at POST /reward (JSON: { items: [{ row, messages | response }] } in,
{ results: [{ total, outcome, process, components, calls }] } out; see the README). A trainer
elsewhere (verl: rollout-studio export verl) calls them.
  --port N       the port (default 8808; 0: any free port)
  --host H       the address to listen on (default 127.0.0.1, this machine only)
  --token T      require "Authorization: Bearer T" on every request (needed with another --host)
Prints "serving <url>" once listening; Ctrl-C stops it.`;

export async function serveToolsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { port: { type: 'string', default: '8808' }, host: { type: 'string', default: '127.0.0.1' }, token: { type: 'string' } },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one config file');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: expected a port number, got "${values.port}"`);
  if (values.token !== undefined && values.token.length < 8) throw new UsageError('--token: use at least 8 characters');
  const loaded = await loadConfig(positionals[0]);
  const log = (line: string) => process.stderr.write(line + '\n');
  const server = await startToolServer(loaded, { host: values.host, port, ...(values.token !== undefined ? { token: values.token } : {}), log });
  process.stdout.write(`serving ${server.url} — MCP at ${server.url}/mcp (${server.tools.names.join(', ') || 'no tools'}), rewards at ${server.url}/reward\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
}
