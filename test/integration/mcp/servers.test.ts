/**
 * MCP servers as the run sees them, against real servers: the test-defined SDK server over
 * stdio (restarted after it exits, given up on after maxRestarts with its stderr quoted, stopped
 * by close) and the npm registry's reference server over Streamable HTTP.
 */
import { after, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { McpServers } from '#trainer/foundations/mcp/servers';
import { McpServersConfig } from '#trainer/foundations/mcp/mcpConfig';
import { ToolRunner, type ToolCallRequest } from '#trainer/foundations/tools/runner';
import { ToolSet } from '#trainer/foundations/tools/toolSet';
import { observationText } from '#trainer/foundations/tools/result';

const ROOT = path.resolve(__dirname, '../../..');
const SEARCH_SERVER = path.join(ROOT, 'test/fixtures/mcp/searchServer.mjs');
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

function request(name: string, args: unknown): ToolCallRequest {
  return {
    name,
    arguments: args,
    trajectory: { index: 0, rowId: 'r', group: 0, sample: 0, messages: [], calls: [] },
    turn: 0,
    callIndex: 0,
    row: {},
  };
}

async function call(runner: ToolRunner, name: string, args: unknown = {}) {
  const [outcome] = await runner.run([request(name, args)]);
  return outcome;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const children: ChildProcess[] = [];
after(() => children.forEach((c) => c.kill()));

describe('MCP servers of a run', () => {
  it('restarts a stdio server that exits, and stops it on close', async () => {
    const logs: string[] = [];
    const servers = await McpServers.open(
      McpServersConfig.parse({
        kb: { command: process.execPath, args: [SEARCH_SERVER], tools: ['crash', 'pid'], maxRestarts: 2 },
      }),
      { baseDir: ROOT, log: (l) => logs.push(l) },
    );
    const runner = new ToolRunner(new ToolSet([...servers.tools]));
    const first = Number(observationText((await call(runner, 'pid')).result!));
    const crashed = await call(runner, 'crash');
    assert.equal(crashed.error?.kind, 'threw', 'a call in flight when the server exits is a failed call');
    const second = Number(observationText((await call(runner, 'pid')).result!));
    assert.ok(second !== first && alive(second), 'the next call ran in a new process');
    assert.ok(!alive(first));
    assert.match(logs.join('\n'), /MCP server "kb" \(.*searchServer\.mjs\) exited; restarting it \(1 of 2 restarts\)/);
    await servers.close();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!alive(second), 'close stopped the server process');
    assert.match((await call(runner, 'pid')).error!.message, /was closed \(the run is over\)/);
  });

  it('gives up after maxRestarts exits, naming the server and quoting its stderr', async () => {
    const servers = await McpServers.open(
      McpServersConfig.parse({
        kb: { command: process.execPath, args: [SEARCH_SERVER], tools: ['crash'], maxRestarts: 1 },
      }),
      { baseDir: ROOT },
    );
    const runner = new ToolRunner(new ToolSet([...servers.tools]));
    await call(runner, 'crash');
    await call(runner, 'crash');
    const outcome = await call(runner, 'crash');
    assert.equal(outcome.error?.kind, 'threw');
    assert.match(
      outcome.error!.message,
      /McpServerError: MCP server "kb" \(.*\) exited 2 times during the run \(maxRestarts is 1\); its tools fail from now on/,
    );
    assert.match(outcome.error!.message, /test-search: crashing on purpose/);
    await servers.close();
  });

  it('refuses a tools list naming a tool the server does not have', async () => {
    await assert.rejects(
      McpServers.open(
        McpServersConfig.parse({ kb: { command: process.execPath, args: [SEARCH_SERVER], tools: ['serch'] } }),
        { baseDir: ROOT },
      ),
      /MCP server "kb" \(.*\) has no tool named "serch"; it lists: search, crash, pid/,
    );
  });

  it("keeps the config's secrets out of what the SDK, fetch and a failing server say (issue 36, item 4)", async () => {
    const SECRET = 'hunter2SECRETvalue';
    const seen = (error: unknown) =>
      `${String(error)}\n${(error as Error).stack}\n${String((error as Error).cause)}\n${((error as Error).cause as Error | undefined)?.stack}`;
    // fetch refuses a URL with a user and password, quoting the whole URL in its message.
    const http = await McpServers.open(
      McpServersConfig.parse({ web: { url: `http://bot:${SECRET}@127.0.0.1:9/mcp?token=${SECRET}&team=7` } }),
      { baseDir: ROOT },
    ).catch((e: unknown) => e);
    assert.ok(http instanceof Error, 'the URL is refused');
    assert.ok(!seen(http).includes(SECRET), seen(http));
    assert.match(
      http.message,
      /could not be reached: .*credentials: http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:9\/mcp\?token=\*\*\*&team=7/,
    );
    // A server that echoes its command line and environment to stderr and exits.
    const echo =
      'console.error("args", process.argv.slice(1).join(" "), "env", process.env.SERVICE_TOKEN); process.exit(3)';
    const lines: string[] = [];
    const stdio = await McpServers.open(
      McpServersConfig.parse({
        kb: {
          command: process.execPath,
          args: ['-e', echo, '--', '--api-key', SECRET],
          env: { SERVICE_TOKEN: `env-${SECRET}` },
        },
      }),
      { baseDir: ROOT, onStderr: (line) => lines.push(line) },
    ).catch((e: unknown) => e);
    assert.ok(stdio instanceof Error, 'the server exits before it answers');
    assert.match(stdio.message, /could not be started[^]*its stderr ended with:\n\s+args --api-key \*\*\* env \*\*\*/);
    assert.ok(!seen(stdio).includes(SECRET), seen(stdio));
    assert.ok(lines.length > 0 && !lines.join('\n').includes(SECRET), lines.join('\n'));
  });

  it('calls the reference server over Streamable HTTP, with headers', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => (/listening on port/.test(chunk.toString()) ? resolve() : undefined));
      child.on('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
    });
    const servers = await McpServers.open(
      McpServersConfig.parse({
        web: {
          url: `http://127.0.0.1:${port}/mcp`,
          headers: { 'X-Test': '1' },
          tools: ['get-sum', 'echo'],
          prefix: 'web_',
        },
      }),
      { baseDir: ROOT },
    );
    assert.deepEqual(
      servers.tools.map((t) => t.name),
      ['web_echo', 'web_get-sum'],
    );
    const runner = new ToolRunner(new ToolSet([...servers.tools]));
    assert.equal(
      observationText((await call(runner, 'web_get-sum', { a: 2, b: 3 })).result!),
      'The sum of 2 and 3 is 5.',
    );
    const bad = await call(runner, 'web_get-sum', { a: 2, b: 'three' });
    assert.equal(bad.error?.kind, 'invalid_arguments');
    assert.match(bad.error!.message, /b: must be number/);
    await servers.close();
  });
});
