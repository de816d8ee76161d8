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
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startToolServer, type RunningToolServer } from '#trainer/bridges/serve/httpServer';
import { RewardResponse } from '#trainer/contract/protocol/serve';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { slowClient } from '../../helpers/slowClient';

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
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

function text(result: object): string {
  return (result as { content: { type: string; text: string }[] }).content.map((c) => c.text).join('\n');
}

describe('serve-tools over MCP', () => {
  it('lists the tools with the JSON Schemas the chat template shows', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['lookup', 'boom', 'slow'],
    );
    assert.deepEqual(tools[0].inputSchema, {
      type: 'object',
      properties: {
        word: { type: 'string', minLength: 1, description: 'The word' },
        limit: { type: 'integer', maximum: 5, default: 1 },
      },
      required: ['word'],
    });
    await client.close();
  });

  it("calls them: a result, invalid arguments, a throw and a timeout, as our loop's observations", async () => {
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
    await assert.rejects(
      startToolServer(await loadConfig(configFile), { host: '0.0.0.0', port: 0 }),
      /--host 0\.0\.0\.0 is reachable from other machines; set ROLLOUT_STUDIO_TOKEN or give --token-file FILE/,
    );
  });
});

/** A raw request, with the headers exactly as given (fetch would not let a test set Host). */
function rawRequest(
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ status: number; body: string }> {
  const url = new URL(target);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // A server that refuses a large body may close before reading it all: the answer came first.
    req.on('error', reject);
    req.end(options.body);
  });
}

const AUTH = { Authorization: 'Bearer secret-token' };
const TOOL_CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'lookup', arguments: { word: 'ocean' } },
});
const MCP_HEADERS = { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const REWARD_BODY = JSON.stringify({
  items: [
    { row: { id: 'q', prompt: 'x', answer: 'a' }, messages: [{ role: 'assistant', content: '<answer>a</answer>' }] },
  ],
});

describe('closed to web pages', () => {
  it("a 403 before the token is checked names none of the machine's host names or addresses", async () => {
    const everywhere = await startToolServer(await loadConfig(configFile), {
      host: '0.0.0.0',
      port: 0,
      token: 'secret-token',
    });
    try {
      const answer = await rawRequest(`http://127.0.0.1:${new URL(everywhere.url).port}/health`, {
        headers: { host: 'attacker.example' },
      });
      assert.equal(answer.status, 403, answer.body);
      assert.match(answer.body, /give --allow-host NAME/);
      const names = [
        os.hostname(),
        ...Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address)),
      ];
      const words = new Set(answer.body.toLowerCase().split(/[\s(),;"\\]+/));
      for (const name of names) assert.ok(!words.has(name.toLowerCase()), `${name} in ${answer.body}`);
    } finally {
      await everywhere.close();
    }
  });

  it('a rebound name in Host (DNS rebinding) gets 403 on every route, even with the token', async () => {
    const port = new URL(server.url).port;
    for (const [route, method, body] of [
      ['/health', 'GET', undefined],
      ['/mcp', 'POST', TOOL_CALL],
      ['/reward', 'POST', REWARD_BODY],
    ] as const) {
      const answer = await rawRequest(`${server.url}${route}`, {
        method,
        headers: { ...MCP_HEADERS, host: `attacker.example:${port}` },
        ...(body ? { body } : {}),
      });
      assert.equal(answer.status, 403, `${route}: ${answer.body}`);
      assert.match(answer.body, /Host \\"attacker\.example:\d+\\" is not an address this server listens on/);
    }
    // Nor which names would do: the 403 comes before the token is checked.
    assert.doesNotMatch(
      (await rawRequest(`${server.url}/health`, { headers: { host: 'attacker.example' } })).body,
      /localhost|127\.0\.0\.1|::1/,
    );
    // The names of the address it listens on are served.
    const local = await rawRequest(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, host: `localhost:${port}` },
      body: TOOL_CALL,
    });
    assert.equal(local.status, 200, local.body);
    assert.match(local.body, /meaning of ocean/);
  });

  it('a foreign Origin gets 403; an allowed one is served', async () => {
    const foreign = await rawRequest(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, origin: 'https://evil.example' },
      body: TOOL_CALL,
    });
    assert.equal(foreign.status, 403, foreign.body);
    assert.match(foreign.body, /requests from web pages are refused \(Origin \\"https:\/\/evil\.example\\"\)/);
    const health = await rawRequest(`${server.url}/health`, { headers: { ...AUTH, origin: 'https://evil.example' } });
    assert.equal(health.status, 403, 'the tool list is not shown to a page either');
    const allowing = await startToolServer(await loadConfig(configFile), {
      host: '127.0.0.1',
      port: 0,
      allowOrigins: ['https://app.example'],
    });
    try {
      const allowed = await rawRequest(`${allowing.url}/health`, { headers: { origin: 'https://app.example' } });
      assert.equal(allowed.status, 200, allowed.body);
    } finally {
      await allowing.close();
    }
  });

  it('a text/plain POST (sent across sites without a preflight) is refused before the body is read', async () => {
    for (const route of ['/reward', '/mcp']) {
      const answer = await rawRequest(`${server.url}${route}`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'text/plain' },
        body: route === '/mcp' ? TOOL_CALL : REWARD_BODY,
      });
      assert.equal(answer.status, 415, `${route}: ${answer.body}`);
      assert.match(answer.body, /send the body as Content-Type: application\/json \(got \\"text\/plain\\"\)/);
    }
  });

  it('bodies and batches past the stated limits get 413', async () => {
    const small = await startToolServer(await loadConfig(configFile), {
      host: '127.0.0.1',
      port: 0,
      limits: { maxBodyBytes: 4096, maxBatch: 2 },
    });
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const big = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'lookup', arguments: { word: 'x'.repeat(10_000) } },
      });
      const tooBig = await rawRequest(`${small.url}/mcp`, { method: 'POST', headers, body: big });
      assert.equal(tooBig.status, 413, tooBig.body);
      assert.match(tooBig.body, /larger than 4096 bytes, this server's limit \(--max-body-mb\)/);
      const item = JSON.parse(REWARD_BODY).items[0];
      const batch = await rawRequest(`${small.url}/reward`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ items: [item, item, item] }),
      });
      assert.equal(batch.status, 413, batch.body);
      assert.match(batch.body, /\/reward: 3 items, more than this server's limit of 2 per request \(--max-batch\)/);
      const rpcBatch = await rawRequest(`${small.url}/mcp`, {
        method: 'POST',
        headers,
        body: JSON.stringify([1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/list' }))),
      });
      assert.equal(rpcBatch.status, 413, rpcBatch.body);
      const fine = await rawRequest(`${small.url}/reward`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ items: [item, item] }),
      });
      assert.equal(fine.status, 200, `within the limits: ${fine.body}`);
    } finally {
      await small.close();
    }
  });
});

describe('the reward endpoint', () => {
  const post = (body: unknown) =>
    fetch(`${server.url}/reward`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', Authorization: 'Bearer secret-token' },
      body: JSON.stringify(body),
    });

  it("scores trajectories given as messages or as verl response text with the config's rewards, using the served calls' data", async () => {
    const client = await connect();
    await client.callTool({ name: 'lookup', arguments: { word: 'ocean' } }); // served first, as in a verl rollout: its data is remembered
    await client.close();
    const row = { id: 'q1', prompt: 'What is the ocean?', answer: 'water' };
    const messages = [
      { role: 'assistant', content: '<tool_call>\n{"name": "lookup", "arguments": {"word": "ocean"}}\n</tool_call>' },
      { role: 'tool', content: 'meaning of ocean' },
      {
        role: 'assistant',
        content:
          '<tool_call>\n{"name": "boom", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "slow", "arguments": {}}\n</tool_call>',
      },
      { role: 'tool', content: 'Error: boom failed: Error: kaput' },
      { role: 'tool', content: 'Error: slow did not finish within 300 ms' },
      { role: 'assistant', content: '<answer>water</answer>' },
    ];
    const response =
      'I look.<tool_call>\n{"name": "lookup", "arguments": {"word": "ocean"}}\n</tool_call>user\n<tool_response>\nmeaning of ocean\n</tool_response>\nassistant\n<answer>fire</answer>';
    const res = await post({
      items: [
        { row, messages },
        { row, response },
      ],
    });
    assert.equal(res.status, 200);
    const body = RewardResponse.parse(await res.json());
    const [first, second] = body.results;
    assert.equal(first.outcome, 1);
    assert.deepEqual(
      first.calls.map((c) => [c.name, c.error ?? 'ok', c.processReward]),
      [
        ['lookup', 'ok', 0.5],
        ['boom', 'threw', -0.25],
        ['slow', 'timeout', -0.75],
      ],
    );
    assert.equal(first.total, 1 + 0.5 - 0.25 - 0.75);
    assert.equal(first.answer, 'water');
    assert.equal(second.outcome, 0);
    assert.equal(second.total, 0.5);
  });

  it('a reward that never returns is ended by its deadline: /reward answers, the server goes on', async () => {
    const spinDir = fs.mkdtempSync(path.join(os.tmpdir(), 'serve-tools-spin-'));
    const spinConfig = path.join(spinDir, 'spin.config.ts');
    fs.writeFileSync(
      spinConfig,
      CONFIG.replace(
        'rewards: { outcome: [exactMatch()],',
        "rewards: { timeoutMs: 1000, outcome: [exactMatch(), { name: 'spin', score: () => { for (;;) {} } }],",
      ),
    );
    const spinning = await startToolServer(await loadConfig(spinConfig), { host: '127.0.0.1', port: 0 });
    try {
      const res = await fetch(`${spinning.url}/reward`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          items: [
            {
              row: { id: 'q', prompt: 'Q?', answer: 'a' },
              messages: [{ role: 'assistant', content: '<answer>a</answer>' }],
            },
          ],
        }),
      });
      assert.equal(res.status, 200);
      const [result] = RewardResponse.parse(await res.json()).results;
      assert.equal(result.components.spin, 0, 'the timed-out reward counts 0');
      assert.equal(result.components.exact_match, 1, 'the others scored');
      assert.equal((await fetch(`${spinning.url}/health`)).status, 200);
    } finally {
      await spinning.close();
      fs.rmSync(spinDir, { recursive: true, force: true });
    }
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
  it('prints where it serves, takes its token from ROLLOUT_STUDIO_TOKEN, answers, and stops on SIGINT', async () => {
    const env = { ...process.env, ROLLOUT_STUDIO_TOKEN: 'token-from-env' };
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'trainer/bridges/cli/main.ts'), 'serve-tools', configFile, '--port', '0'],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        const match = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(chunk.toString());
        if (match) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`serve-tools exited with ${code}`)));
    });
    assert.equal((await fetch(`${url}/health`)).status, 401, 'the token from the environment is required');
    assert.deepEqual(
      await (await fetch(`${url}/health`, { headers: { Authorization: 'Bearer token-from-env' } })).json(),
      { ok: true, tools: ['lookup', 'boom', 'slow'] },
    );
    child.kill('SIGINT');
    assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
  });
});

describe('no request freezes the server', () => {
  const ROW = { id: 'q', prompt: 'x', answer: 'a' };
  /**
   * `user\n` and result blocks with no `assistant\n` after them, padded to `bytes` of JSON: the
   * shape on which the verl splitter's old regular expression tried every way of grouping the
   * blocks (doubling its time with each one).
   */
  function repeatedBlocksBody(bytes: number): string {
    const body = (response: string) => JSON.stringify({ items: [{ row: ROW, response }] });
    let response = 'user\n';
    while (body(response + '<tool_response>\n\n</tool_response>\n').length <= bytes)
      response += '<tool_response>\n\n</tool_response>\n';
    return body(response + ' '.repeat(bytes - body(response).length));
  }
  /** About `bytes` of JSON: a turn of tool-call and answer openers without closers, and verl text of result blocks. */
  function openersBody(bytes: number): string {
    const share = Math.floor(bytes / 3);
    const turn = '<tool_call>'.repeat(share / 11 / 2) + '<answer>'.repeat(share / 8 / 2);
    const response = 'user\n' + '<tool_response>\n\n</tool_response>\n'.repeat(share / 37);
    return JSON.stringify({
      items: [
        { row: ROW, messages: [{ role: 'assistant', content: turn }] },
        {
          row: ROW,
          messages: [
            {
              role: 'assistant',
              content: '<tool_call>\n{"name": "lookup", "arguments": {"word": "' + '\\"'.repeat(share / 4),
            },
          ],
        },
        { row: ROW, response },
      ],
    });
  }

  let child: ReturnType<typeof spawn> | undefined;
  after(() => void child?.kill('SIGKILL'));

  it('a crafted 1,248-byte /reward answers in 100 ms, a 4 MB one in a second, and /health answers throughout', async () => {
    // Its own process, so that a frozen server cannot freeze this test's clock or its clients.
    child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'trainer/bridges/cli/main.ts'), 'serve-tools', configFile, '--port', '0'],
      {
        cwd: root,
        env: { ...process.env, ROLLOUT_STUDIO_TOKEN: 'token-from-env' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const url = await new Promise<string>((resolve, reject) => {
      child!.stdout!.on('data', (chunk: Buffer) => {
        const match = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(chunk.toString());
        if (match) resolve(match[1]);
      });
      child!.on('exit', (code) => reject(new Error(`serve-tools exited with ${code}`)));
    });
    const headers = { Authorization: 'Bearer token-from-env', 'content-type': 'application/json' };
    const timed = async (body: string) => {
      const started = performance.now();
      const res = await fetch(`${url}/reward`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      await res.text();
      return { status: res.status, ms: performance.now() - started };
    };
    // Warm: the first requests of each kind load and compile what scoring needs.
    await timed(REWARD_BODY);
    await timed(JSON.stringify({ items: [{ row: ROW, response: 'x' }] }));

    let polling = true;
    const healthMs: number[] = [];
    const poller = (async () => {
      while (polling) {
        const started = performance.now();
        const res = await fetch(`${url}/health`, { headers, signal: AbortSignal.timeout(5_000) });
        assert.equal(res.status, 200);
        await res.text();
        healthMs.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      const small = repeatedBlocksBody(1248);
      assert.equal(Buffer.byteLength(small), 1248);
      // The fastest of three: this machine's other work can delay any one answer by tens of
      // milliseconds; the old splitter took seconds every time.
      const tries = [await timed(small), await timed(small), await timed(small)];
      assert.deepEqual(
        tries.map((t) => t.status),
        [200, 200, 200],
      );
      assert.ok(
        Math.min(...tries.map((t) => t.ms)) < 100,
        `the 1,248-byte body took ${tries.map((t) => t.ms.toFixed(0)).join(', ')} ms`,
      );
      const large = openersBody(4 * 1024 * 1024);
      assert.ok(Buffer.byteLength(large) > 3.9 * 1024 * 1024 && Buffer.byteLength(large) < 8 * 1024 * 1024);
      const big = await timed(large);
      assert.equal(big.status, 200);
      assert.ok(big.ms < 1000, `the 4 MB body took ${big.ms.toFixed(0)} ms`);
    } finally {
      polling = false;
      await poller;
    }
    assert.ok(healthMs.length >= 1, 'the poller ran');
    assert.ok(Math.max(...healthMs) < 1000, `/health took up to ${Math.max(...healthMs).toFixed(0)} ms`);
  });

  it('a client that sends its headers or its body a byte at a time is cut off with 408', async () => {
    const slow = await startToolServer(await loadConfig(configFile), {
      host: '127.0.0.1',
      port: 0,
      limits: { headersTimeoutMs: 300, requestTimeoutMs: 600 },
    });
    try {
      const headersLoris = await slowClient(slow.url, {
        head: 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n',
        drip: 'X-Slow: 1\r\n',
        everyMs: 50,
        giveUpMs: 5000,
      });
      assert.ok(headersLoris.closedByServer && headersLoris.openMs < 2000, `open for ${headersLoris.openMs} ms`);
      assert.match(headersLoris.answer, /^HTTP\/1\.1 408/);
      const bodyLoris = await slowClient(slow.url, {
        head: 'POST /reward HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
        drip: ' ',
        everyMs: 50,
        giveUpMs: 5000,
      });
      assert.ok(bodyLoris.closedByServer && bodyLoris.openMs < 2500, `open for ${bodyLoris.openMs} ms`);
      assert.match(bodyLoris.answer, /^HTTP\/1\.1 408/);
    } finally {
      await slow.close();
    }
  });
});
