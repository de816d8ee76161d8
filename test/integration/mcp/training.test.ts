/**
 * MCP tools in, end to end: the tiny agent trains for two GRPO steps with its `search` tool
 * served by a real MCP server over stdio — one the tests define with the official SDK
 * (test/fixtures/mcp/searchServer.mjs: its first search answers with an error result, its second
 * never answers) — next to the npm registry's reference server, @modelcontextprotocol/server-everything,
 * whose `echo` tool the policy is offered too. The run records the error and the timeout as
 * observations like any tool's, trains on, and stops both server processes when it ends.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { McpServers } from '#trainer/foundations/mcp/servers';
import { McpServersConfig } from '#trainer/foundations/mcp/mcpConfig';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const ROOT = path.resolve(__dirname, '../../..');
const SEARCH_SERVER = path.join(ROOT, 'test/fixtures/mcp/searchServer.mjs');
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** The command lines of this process's children (the MCP servers a run started and did not stop). */
function childCommands(): string[] {
  const out = execFileSync('ps', ['--ppid', String(process.pid), '-o', 'args='], { encoding: 'utf8' }).trim();
  return out ? out.split('\n').filter((line) => !line.startsWith('ps ')) : [];
}

const SERVERS = {
  kb: { command: process.execPath, args: [SEARCH_SERVER], tools: ['search'], timeoutMs: 1500 },
  everything: { command: process.execPath, args: [EVERYTHING, 'stdio'], tools: ['echo'], prefix: 'everything_' },
};

let workspace: string;
before(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-training-'));
});
after(() => fs.rmSync(workspace, { recursive: true, force: true }));

describe('training with MCP tools', () => {
  it('trains with tools from two stdio MCP servers; a tool error and a timeout are observations', async () => {
    const toolsModule = path.join(workspace, 'noTools.ts');
    fs.writeFileSync(toolsModule, 'export const tools = [];\n');
    // A tiny model calls tools only from the prompt it was warm-started on: warm it up on the
    // tools exactly as these servers list them (kb's search is the example's, word for word).
    const listed = await McpServers.open(McpServersConfig.parse(SERVERS), { baseDir: workspace });
    const toolSpecs = listed.tools.map((t) => t.spec());
    await listed.close();
    assert.deepEqual(
      toolSpecs.map((s) => s.function.name),
      ['search', 'everything_echo'],
    );
    const config = await writeTinyAgentWorkspace(workspace, {
      toolsModule,
      toolSpecs,
      name: 'mcp-agent',
      extraConfig: `  mcpServers: ${JSON.stringify(SERVERS)},\n`,
    });
    const runDir = path.join(workspace, 'runs', 'mcp');
    const lines: string[] = [];
    const result = await new TrainingRun(await loadConfig(config), {
      runDir,
      inProcessDevice: true,
      log: (l) => lines.push(l),
    }).run();
    assert.equal(result.run.status, 'finished', lines.join('\n'));

    const reader = new RunStoreReader(runDir);
    const run = reader.run();
    const servers = run.config['mcpServers'] as Record<string, { command: string; tools: string[] }>;
    assert.deepEqual(Object.keys(servers), ['kb', 'everything'], 'run.json records the servers');
    assert.deepEqual(run.config['tools'], [], 'no tools of our own: every tool came from MCP');

    const trajectories = reader.steps().flatMap((step) => reader.trajectories(step).records);
    const calls = trajectories.flatMap((t) => t.turns.flatMap((turn) => turn.toolCalls ?? []));
    const searches = calls.filter((c) => c.name === 'search');
    assert.ok(searches.length >= 3, `the policy called the MCP search tool (${searches.length} calls)`);
    const threw = searches.filter((c) => c.error?.kind === 'threw');
    const timedOut = searches.filter((c) => c.error?.kind === 'timeout');
    const answered = searches.filter((c) => !c.error);
    assert.equal(threw.length, 1, 'the first search came back as an error result');
    assert.match(threw[0].observation, /^Error: search failed: McpToolError: the index is rebuilding; try again$/);
    assert.equal(timedOut.length, 1, 'the second search never answered');
    assert.match(timedOut[0].observation, /did not finish within 1500 ms/);
    assert.ok(
      timedOut[0].latencyMs >= 1400 && timedOut[0].latencyMs < 5000,
      `cut at the deadline (${timedOut[0].latencyMs} ms)`,
    );
    assert.ok(answered.length >= 1);
    for (const call of answered) assert.ok(/William|No results/.test(call.observation), call.observation);

    // The policy was offered the everything server's echo under its prefix, with the server's schema.
    const prompt = trajectories[0].turns[0].text;
    assert.match(prompt, /"name": ?"everything_echo"/);
    assert.match(prompt, /"name": ?"search"/);

    const metrics = reader.metrics().records.filter((m) => m.kind === 'train');
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2],
    );
    assert.ok(metrics.every((m) => typeof m.values['loss/total'] === 'number'));
    assert.ok((metrics[0].values['tools/error_rate'] ?? 0) > 0, 'the errors count as tool errors');

    const left = childCommands().filter((c) => c.includes('searchServer.mjs') || c.includes('server-everything'));
    assert.deepEqual(left, [], 'both server processes ended with the run');
  });

  it('a server that cannot start fails the run before any step, naming the server', async () => {
    const dir = path.join(workspace, 'broken');
    const toolsModule = path.join(dir, 'noTools.ts');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(toolsModule, 'export const tools = [];\n');
    const config = await writeTinyAgentWorkspace(dir, {
      toolsModule,
      extraConfig: `  mcpServers: {
    kb: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SEARCH_SERVER)}] },
    gone: { command: 'rollout-studio-no-such-mcp-server', args: ['--stdio'] },
  },
`,
    });
    await assert.rejects(
      new TrainingRun(await loadConfig(config), { runDir: path.join(dir, 'runs', 'x'), inProcessDevice: true }).run(),
      (error: Error) => {
        assert.match(
          error.message,
          /MCP server "gone" \(rollout-studio-no-such-mcp-server --stdio\) could not be started/,
        );
        assert.match(error.message, /is "rollout-studio-no-such-mcp-server" installed and on PATH\?/);
        return true;
      },
    );
    assert.deepEqual(
      childCommands().filter((c) => c.includes('searchServer.mjs')),
      [],
      'the server that did start was stopped',
    );
  });
});
