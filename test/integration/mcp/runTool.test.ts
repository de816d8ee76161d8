/**
 * Run Tool… on MCP tools: `rollout-studio run-tool <config> --tool NAME` finds a tool of the
 * config's MCP servers, `--mcp-server S --list` lists a server's tools, and the extension's
 * ToolSession checks arguments against the server's JSON Schema and runs calls through the CLI,
 * the server started by the session and stopped with it.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolSession } from '../../../extension/authoring/toolSession';

const root = path.resolve(__dirname, '../../..');
const cli = path.join(root, 'trainer/bridges/cli/main.ts');
const node = { command: process.execPath, env: process.env, description: "the test runner's Node" };
const SEARCH_SERVER = path.join(root, 'test/fixtures/mcp/searchServer.mjs');
const EVERYTHING = path.join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

function runCli(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: root, encoding: 'utf8' });
}

let dir: string;
let config: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-run-tool-'));
  config = path.join(dir, 'agent.config.ts');
  fs.writeFileSync(
    config,
    `import { defineConfig } from 'rollout-studio';
export default defineConfig({
  model: { path: 'model' },
  data: { train: 'train.jsonl' },
  rewards: { outcome: [] },
  algorithm: { name: 'grpo' },
  steps: 1,
  mcpServers: {
    kb: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SEARCH_SERVER)}], tools: ['search', 'pid'] },
    everything: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(EVERYTHING)}, 'stdio'], tools: ['echo', 'get-sum'], timeoutMs: 5000 },
  },
});
`,
  );
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('run-tool on MCP tools', () => {
  it("lists a server's tools with their JSON Schemas", () => {
    const result = runCli('run-tool', config, '--mcp-server', 'everything', '--list');
    assert.equal(result.status, 0, result.stderr);
    const tools = JSON.parse(result.stdout) as { name: string; parameters: { required?: string[] } }[];
    assert.deepEqual(
      tools.map((t) => t.name),
      ['echo', 'get-sum'],
    );
    assert.deepEqual(tools[1].parameters.required, ['a', 'b']);
  });

  it("runs a tool of the config's servers by the name the policy calls it, and names a bad argument", () => {
    const ok = runCli('run-tool', config, '--tool', 'get-sum', '--args', '{"a": 1, "b": 2}', '--json');
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).observation, 'The sum of 1 and 2 is 3.');
    const bad = runCli(
      'run-tool',
      config,
      '--mcp-server',
      'everything',
      '--tool',
      'get-sum',
      '--args',
      '{"a": 1}',
      '--json',
    );
    assert.equal(bad.status, 1);
    const report = JSON.parse(bad.stdout);
    assert.equal(report.error.kind, 'invalid_arguments');
    assert.deepEqual(report.issues, [{ path: ['b'], message: 'required' }]);
    const missing = runCli('run-tool', config, '--mcp-server', 'kb', '--tool', 'nope');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /MCP server "kb" has no tool named "nope" \(MCP tools: search, pid\)/);
  });

  it('a ToolSession checks arguments as they are typed, runs calls, and stops the server when closed', async () => {
    const session = await ToolSession.start({
      use: { action: 'A test', runs: 'a test trainer' },
      runtime: node,
      cliPath: cli,
      nodeArgs: ['--import', 'tsx'],
      cwd: root,
      file: config,
      selector: { by: 'mcp', server: 'kb', tool: 'pid' },
    });
    let pid: number;
    try {
      assert.equal(session.tool.name, 'pid');
      pid = Number((await session.run({})).observation);
      assert.ok(pid > 0);
      process.kill(pid, 0); // the server runs while the session does
    } finally {
      session.close();
    }
    await new Promise<void>((resolve) => session.onExit(resolve));
    await new Promise((r) => setTimeout(r, 300));
    assert.throws(() => process.kill(pid!, 0), 'the server process ended with the session');

    const search = await ToolSession.start({
      use: { action: 'A test', runs: 'a test trainer' },
      runtime: node,
      cliPath: cli,
      nodeArgs: ['--import', 'tsx'],
      cwd: root,
      file: config,
      selector: { by: 'mcp', server: 'kb', tool: 'search' },
    });
    try {
      const check = await search.check({ query: '' });
      assert.equal(check.ok, false);
      assert.match(check.ok ? '' : check.message, /query: must NOT have fewer than 1 characters/);
      const first = await search.run({ query: 'William' });
      assert.equal(first.error?.kind, 'threw', 'the test server answers its first search with an error result');
      assert.match(first.error!.message, /the index is rebuilding/);
    } finally {
      search.close();
    }
  });
});
