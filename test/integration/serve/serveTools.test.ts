/**
 * MCP tools out: `serve-tools` serves a config's tools over Streamable HTTP, and the official
 * SDK's client lists them (with the JSON Schemas zod gives) and calls them — valid and invalid
 * arguments, a throwing tool, a timeout — getting the observations our own loop would show. The
 * reward endpoint scores trajectories given as messages with the config's rewards; the token
 * guards both; and the CLI starts and stops it.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startToolServer, type RunningToolServer } from '../../../trainer/serve/httpServer';
import { RewardResponse } from '../../../trainer/shared/protocol/serve';
import { loadConfig } from "../../../trainer/usercode/loadConfig";

const root = path.resolve(__dirname, '../../..');
let dir: string;
let configFile: string;
let server: RunningToolServer;

const CONFIG = `import { defineConfig, defineTool, exactMatch, z } from 'rollout-studio';
const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up.',
  parameters: z.object({ word: z.string().min(1).describe('The word'), limit: z.number().int().max(5).default(1) }),
  execute: ({ word }) => ({ content: [{ type: 'text', text: 'meaning of ' + word }], data: { found: word.length } }),
  reward: (call) => ((call.result.data as { found: number }).found > 3 ? 1 : 0),
});
const boom = defineTool({ name: 'boom', description: 'Always fails.', parameters: z.object({}), execute: () => { throw new Error('kaput'); } });
const slow = defineTool({ name: 'slow', description: 'Never answers in time.', parameters: z.object({}), timeoutMs: 300, execute: () => new Promise(() => {}) });
export default defineConfig({
  model: { path: 'model' },
  data: { train: 'train.jsonl', fields: z.object({ answer: z.string() }) },
  tools: [lookup, boom, slow],
  rewards: { outcome: [exactMatch()], toolRewards: { weight: 0.5 }, errorPenalty: { threw: 0.25, invalid_arguments: 0.5, timeout: 0.75 } },
  algorithm: { name: 'grpo' },
  steps: 1,
});
`;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'serve-tools-'));
  configFile = path.join(dir, 'agent.config.ts');
  fs.writeFileSync(configFile, CONFIG);
  server = await startToolServer(await loadConfig(configFile), { host: '127.0.0.1', port: 0, token: 'secret-token' });
});
after(async () => {
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function connect(token = 'secret-token'): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

function text(result: object): string {
  return ((result as { content: { type: string; text: string }[] }).content).map((c) => c.text).join('\n');
}

describe('serve-tools over MCP', () => {
  it('lists the tools with the JSON Schemas the chat template shows', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['lookup', 'boom', 'slow']);
    assert.deepEqual(tools[0].inputSchema, {
      type: 'object',
      properties: { word: { type: 'string', minLength: 1, description: 'The word' }, limit: { type: 'integer', maximum: 5, default: 1 } },
      required: ['word'],
    });
    await client.close();
  });

  it('calls them: a result, invalid arguments, a throw and a timeout, as our loop\'s observations', async () => {
    const client = await connect();
    const ok = await client.callTool({ name: 'lookup', arguments: { word: 'ocean' } });
    assert.equal(ok.isError, undefined);
    assert.equal(text(ok), 'meaning of ocean');
    const bad = await client.callTool({ name: 'lookup', arguments: { word: '', limit: 9 } });
    assert.equal(bad.isError, true);
    assert.equal(text(bad), 'Error: lookup arguments: "word" must be at least 1 character; 1 more issue');
    const threw = await client.callTool({ name: 'boom', arguments: {} });
    assert.equal(threw.isError, true);
    assert.equal(text(threw), 'Error: boom failed: Error: kaput');
    const started = Date.now();
    const late = await client.callTool({ name: 'slow', arguments: {} });
    assert.equal(late.isError, true);
    assert.equal(text(late), 'Error: slow did not finish within 300 ms');
    assert.ok(Date.now() - started < 3000);
    const unknown = await client.callTool({ name: 'nope', arguments: {} });
    assert.equal(unknown.isError, true);
    assert.equal(text(unknown), 'Error: no tool "nope"; tools: lookup, boom, slow');
    await client.close();
  });

  it('refuses a client without the token, and a non-loopback host without one', async () => {
    await assert.rejects(connect('wrong-token'), /missing or wrong token/);
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 401);
    await assert.rejects(startToolServer(await loadConfig(configFile), { host: '0.0.0.0', port: 0 }), /--host 0\.0\.0\.0 is reachable from other machines; give --token SECRET/);
  });
});

describe('the reward endpoint', () => {
  const post = (body: unknown) =>
    fetch(`${server.url}/reward`, { method: 'POST', headers: { 'content-type': 'application/json', Authorization: 'Bearer secret-token' }, body: JSON.stringify(body) });

  it('scores trajectories given as messages or as verl response text with the config\'s rewards, using the served calls\' data', async () => {
    const client = await connect();
    await client.callTool({ name: 'lookup', arguments: { word: 'ocean' } }); // served first, as in a verl rollout: its data is remembered
    await client.close();
    const row = { id: 'q1', prompt: 'What is the ocean?', answer: 'water' };
    const messages = [
      { role: 'assistant', content: '<tool_call>\n{"name": "lookup", "arguments": {"word": "ocean"}}\n</tool_call>' },
      { role: 'tool', content: 'meaning of ocean' },
      { role: 'assistant', content: '<tool_call>\n{"name": "boom", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "slow", "arguments": {}}\n</tool_call>' },
      { role: 'tool', content: 'Error: boom failed: Error: kaput' },
      { role: 'tool', content: 'Error: slow did not finish within 300 ms' },
      { role: 'assistant', content: '<answer>water</answer>' },
    ];
    const response = 'I look.<tool_call>\n{"name": "lookup", "arguments": {"word": "ocean"}}\n</tool_call>user\n<tool_response>\nmeaning of ocean\n</tool_response>\nassistant\n<answer>fire</answer>';
    const res = await post({ items: [{ row, messages }, { row, response }] });
    assert.equal(res.status, 200);
    const body = RewardResponse.parse(await res.json());
    const [first, second] = body.results;
    assert.equal(first.outcome, 1);
    assert.deepEqual(first.calls.map((c) => [c.name, c.error ?? 'ok', c.processReward]), [
      ['lookup', 'ok', 0.5],
      ['boom', 'threw', -0.25],
      ['slow', 'timeout', -0.75],
    ]);
    assert.equal(first.total, 1 + 0.5 - 0.25 - 0.75);
    assert.equal(first.answer, 'water');
    assert.equal(second.outcome, 0);
    assert.equal(second.total, 0.5);
  });

  it('names what is wrong with a bad request', async () => {
    const missing = await post({ items: [{ row: { id: 'q', prompt: 'x' }, messages: [] }] });
    assert.equal(missing.status, 400);
    assert.match(((await missing.json()) as { error: string }).error, /items\[0\]\.row: answer: /);
    const both = await post({ items: [{ row: { id: 'q', prompt: 'x', answer: 'a' } }] });
    assert.equal(both.status, 400);
    assert.match(((await both.json()) as { error: string }).error, /items\.0: give exactly one of "messages"/);
  });
});

describe('the serve-tools command', () => {
  it('prints where it serves, answers, and stops on SIGINT', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'trainer/cli/main.ts'), 'serve-tools', configFile, '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        const match = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(chunk.toString());
        if (match) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`serve-tools exited with ${code}`)));
    });
    assert.deepEqual(await (await fetch(`${url}/health`)).json(), { ok: true, tools: ['lookup', 'boom', 'slow'] });
    child.kill('SIGINT');
    assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
  });
});
