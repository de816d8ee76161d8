/**
 * `rollout-studio serve`'s Chat Completions API, checked with its official clients: the `openai`
 * SDK (plain answers, tools under each tool_choice, json_schema, streaming with usage, n, seed,
 * logprobs, OpenAI's errors) and Python's standard library. The model is the shipped base
 * (`rollout-studio:base`): what it says is not judged, only what the API promises — a forced
 * call is a valid call of a requested tool, a json_schema answer is valid JSON of the schema, a
 * stream adds up to the answer the same seed gives without streaming, and the same seed gives the
 * same answer alone or batched with other clients.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as http from 'node:http';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { startChatServer, type RunningChatServer } from '#trainer/pipeline/rollout/gateway/chatServer';
import { ServedModel } from '#trainer/pipeline/rollout/gateway/servedModel';

const TOKEN = 'secret-token-1234';
let device: Device;
let model: ModelRuntime;
let backend: ServedModel;
let server: RunningChatServer;
let client: OpenAI;

const CURRENCIES = ['USD', 'EUR', 'GBP'];
const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'exchange',
      description: 'Convert an amount of money.',
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'number' },
          from: { type: 'string', enum: CURRENCIES },
          to: { type: 'string', enum: CURRENCIES },
        },
        required: ['amount', 'from', 'to'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look a word up.',
      parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    },
  },
];
const question: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'Use the exchange tool to convert money, then reply with <answer>the amount</answer>.' },
  { role: 'user', content: 'How much is 12 USD in EUR?' },
];

before(async () => {
  device = createDevice('cpu', { worker: false });
  model = await ModelRuntime.load(device, builtInModelDir('base'), {});
  backend = new ServedModel({
    policy: new ModelPolicy(model),
    template: model.folder.chatTemplate!,
    format: new HermesFormat(),
    modelId: 'base',
    maxContextTokens: 1024,
    defaultMaxTokens: 48,
    temperature: 1,
    topP: 1,
    templateKwargs: { enable_thinking: false },
    token: TOKEN,
  });
  server = await startChatServer(backend, { host: '127.0.0.1', port: 0 });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
after(async () => {
  await server?.close();
  model?.close();
  await device?.close();
});

function validCall(call: OpenAI.Chat.Completions.ChatCompletionMessageToolCall, names: string[]) {
  assert.equal(call.type, 'function');
  if (call.type !== 'function') return;
  assert.ok(names.includes(call.function.name), `a requested tool: ${call.function.name}`);
  assert.match(call.id, /^call_/);
  const schema = tools.find((t) => t.type === 'function' && t.function.name === call.function.name)!;
  const validate = new Ajv().compile(schema.type === 'function' ? schema.function.parameters! : {});
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `arguments of the schema: ${call.function.arguments} ${JSON.stringify(validate.errors)}`);
}

describe('rollout-studio serve: the openai SDK', () => {
  it('lists and retrieves the model; refuses an unknown one with 404 model_not_found', async () => {
    assert.deepEqual(
      (await client.models.list()).data.map((m) => m.id),
      ['base'],
    );
    assert.equal((await client.models.retrieve('base')).id, 'base');
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o', messages: question }),
      (e: InstanceType<typeof OpenAI.NotFoundError>) => e.status === 404 && e.code === 'model_not_found',
    );
  });

  it('answers with usage counting the rendered prompt, and logprobs of every sampled token', async () => {
    const r = await client.chat.completions.create({
      model: 'base',
      messages: question,
      max_tokens: 20,
      seed: 1,
      logprobs: true,
    });
    const choice = r.choices[0];
    assert.equal(r.object, 'chat.completion');
    assert.equal(choice.message.role, 'assistant');
    assert.ok(['stop', 'length', 'tool_calls'].includes(choice.finish_reason));
    const prompt = model.folder.chatTemplate!.promptTokens(
      question.map((m) => ({ role: m.role as 'system', content: m.content as string })),
      { kwargs: { enable_thinking: false } },
    );
    assert.equal(r.usage!.prompt_tokens, prompt.ids.length);
    assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + r.usage!.completion_tokens);
    assert.equal(choice.logprobs!.content!.length, r.usage!.completion_tokens);
    for (const t of choice.logprobs!.content!) assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob));
  });

  it('tool_choice required: a valid call of a requested tool; a named function: exactly that one call', async () => {
    const required = await client.chat.completions.create({
      model: 'base',
      messages: question,
      tools,
      tool_choice: 'required',
      max_tokens: 80,
      seed: 2,
    });
    assert.equal(required.choices[0].finish_reason, 'tool_calls');
    assert.ok(required.choices[0].message.tool_calls!.length >= 1);
    for (const call of required.choices[0].message.tool_calls!) validCall(call, ['exchange', 'lookup']);
    const named = await client.chat.completions.create({
      model: 'base',
      messages: question,
      tools,
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      max_tokens: 80,
      seed: 3,
    });
    assert.equal(named.choices[0].message.tool_calls!.length, 1);
    validCall(named.choices[0].message.tool_calls![0], ['lookup']);
  });

  it('parallel_tool_calls false: one call at most; tool_choice none: no call', async () => {
    for (const seed of [4, 5, 6]) {
      const one = await client.chat.completions.create({
        model: 'base',
        messages: question,
        tools,
        tool_choice: 'required',
        parallel_tool_calls: false,
        max_tokens: 120,
        seed,
      });
      assert.equal(one.choices[0].message.tool_calls!.length, 1);
      const none = await client.chat.completions.create({
        model: 'base',
        messages: question,
        tools,
        tool_choice: 'none',
        max_tokens: 40,
        seed,
      });
      assert.equal(none.choices[0].message.tool_calls, undefined);
      assert.ok(!(none.choices[0].message.content ?? '').includes('<tool_call>'));
    }
  });

  it('response_format json_schema: the content is JSON of the schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer' }, kind: { enum: ['a', 'b'] } },
      required: ['name', 'age', 'kind'],
      additionalProperties: false,
    };
    const validate = new Ajv().compile(schema);
    for (const seed of [7, 8]) {
      const r = await client.chat.completions.create({
        model: 'base',
        messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema } },
        max_tokens: 120,
        seed,
      });
      assert.equal(r.choices[0].finish_reason, 'stop');
      const value = JSON.parse(r.choices[0].message.content!);
      assert.ok(validate(value), `${r.choices[0].message.content} ${JSON.stringify(validate.errors)}`);
    }
  });

  it('streams the answer the same seed gives without streaming, tool calls and usage included', async () => {
    for (const [seed, choice] of [
      [9, 'auto'],
      [10, 'required'],
    ] as const) {
      const body = { model: 'base', messages: question, tools, tool_choice: choice, max_tokens: 60, seed };
      const whole = await client.chat.completions.create(body);
      const stream = await client.chat.completions.create({
        ...body,
        stream: true,
        stream_options: { include_usage: true },
      });
      let content = '';
      const calls: { name: string; arguments: string }[] = [];
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | undefined | null;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices[0]?.delta;
        content += delta?.content ?? '';
        for (const t of delta?.tool_calls ?? []) {
          calls[t.index] ??= { name: '', arguments: '' };
          calls[t.index].name += t.function?.name ?? '';
          calls[t.index].arguments += t.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      const message = whole.choices[0].message;
      assert.equal(content, message.content ?? '');
      assert.deepEqual(
        calls,
        (message.tool_calls ?? []).map((c) =>
          c.type === 'function' ? { name: c.function.name, arguments: c.function.arguments } : {},
        ),
      );
      assert.equal(finish, whole.choices[0].finish_reason);
      assert.deepEqual(usage, whole.usage);
    }
  });

  it('n choices; a seed gives the same answers alone and batched with seven other clients', async () => {
    const body = { model: 'base', messages: question, max_tokens: 24, seed: 11 };
    const three = await client.chat.completions.create({ ...body, n: 3 });
    assert.equal(three.choices.length, 3);
    assert.deepEqual(
      three.choices.map((c) => c.index),
      [0, 1, 2],
    );
    const alone = await client.chat.completions.create(body);
    const batchesBefore = backend.batches.length;
    const together = await Promise.all([
      client.chat.completions.create(body),
      ...Array.from({ length: 7 }, (_, i) =>
        client.chat.completions.create({
          ...body,
          seed: 100 + i,
          messages: [{ role: 'user', content: `Count to ${i + 2}.` }],
        }),
      ),
    ]);
    assert.equal(together[0].choices[0].message.content, alone.choices[0].message.content);
    // Concurrent clients shared decoding steps: fewer batches than requests.
    assert.ok(
      backend.batches.length - batchesBefore < 8,
      `${backend.batches.length - batchesBefore} batches for 8 requests`,
    );
    assert.ok(Math.max(...backend.batches.slice(batchesBefore)) > 1);
  });

  it("refuses what it cannot honour, in OpenAI's error shape", async () => {
    const refused = async (body: object, status: number, param: string | null) =>
      assert.rejects(
        client.chat.completions.create({ model: 'base', messages: question, ...body } as never),
        (e: InstanceType<typeof OpenAI.APIError>) => e.status === status && (param === null || e.param === param),
      );
    await refused({ presence_penalty: 1 }, 400, 'presence_penalty');
    await refused({ tool_choice: 'required' }, 400, 'tool_choice');
    await refused({ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 400, 'tool_choice');
    await refused({ max_tokens: 5000 }, 400, 'messages');
    await refused({ messages: [] }, 400, null);
    // A picture for a text-only model: refused by name, never answered as if it were not there.
    const png =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    await assert.rejects(
      client.chat.completions.create({
        model: 'base',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: png } }] }],
      }),
      (e: InstanceType<typeof OpenAI.APIError>) =>
        e.status === 400 && e.param === 'messages[0].content[0].image_url' && /text-only model/.test(e.message),
    );
    const wrongKey = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(wrongKey.models.list(), (e: InstanceType<typeof OpenAI.APIError>) => e.status === 401);
  });
});

function post(headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const url = new URL(`${server.url}/v1/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('rollout-studio serve: closed to web pages, bounded', () => {
  const body = JSON.stringify({ model: 'base', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  it('403 for a web page origin or a rebound Host, 415 for a body not said to be JSON', async () => {
    assert.equal(
      (await post({ 'content-type': 'application/json', origin: 'https://evil.example' }, body)).status,
      403,
    );
    assert.equal((await post({ 'content-type': 'application/json', host: 'evil.example:80' }, body)).status, 403);
    const plain = await post({ 'content-type': 'text/plain' }, body);
    assert.equal(plain.status, 415);
    assert.equal(typeof JSON.parse(plain.text).error.message, 'string');
  });
  it('413 for a body past the limit', async () => {
    const huge = JSON.stringify({ model: 'base', messages: [{ role: 'user', content: 'x'.repeat(9 * 1024 * 1024) }] });
    assert.equal((await post({ 'content-type': 'application/json' }, huge)).status, 413);
  });
});

describe('rollout-studio serve: a Python client', () => {
  // Asynchronously: the server answers from this process's event loop.
  it("Python's standard library reads an answer and a stream", async () => {
    const script = `
import json, os, urllib.request
base, key = os.environ["BASE"], os.environ["KEY"]
def post(body):
    req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    return urllib.request.urlopen(req)
body = {"model": "base", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 12, "seed": 5}
whole = json.load(post(body))
text = ""
for line in post(dict(body, stream=True)):
    line = line.decode().strip()
    if line.startswith("data: ") and line != "data: [DONE]":
        chunk = json.loads(line[6:])
        text += chunk["choices"][0]["delta"].get("content") or "" if chunk["choices"] else ""
print(json.dumps({"whole": whole["choices"][0]["message"]["content"], "streamed": text, "usage": whole["usage"]["total_tokens"]}))
`;
    const run = await promisify(execFile)('python3', ['-c', script], {
      env: { ...process.env, BASE: `${server.url}/v1`, KEY: TOKEN },
      timeout: 60_000,
    });
    const out = JSON.parse(run.stdout);
    assert.equal(out.streamed, out.whole);
    assert.ok(out.usage > 0);
  });
});

describe('rollout-studio serve: the command', () => {
  it("serves a run folder's best checkpoint as the run trained it, refuses another host without a token, stops on SIGINT", async () => {
    const { spawn } = await import('node:child_process');
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const root = path.resolve(__dirname, '../../..');
    const cli = [path.join(root, 'trainer/bridges/cli/main.ts')];
    // A run folder as training leaves it: run.json and checkpoints/best (a full model folder).
    const run = fs.mkdtempSync(path.join(os.tmpdir(), 'serve-run-'));
    fs.cpSync(builtInModelDir('base'), path.join(run, 'checkpoints/best'), { recursive: true });
    fs.writeFileSync(
      path.join(run, 'run.json'),
      JSON.stringify({ config: { rollout: { templateKwargs: { enable_thinking: false }, stop: ['</answer>'] } } }),
    );
    try {
      const env = { ...process.env, ROLLOUT_STUDIO_TOKEN: '' };
      const refused = spawn(process.execPath, ['--import', 'tsx', ...cli, 'serve', run, '--host', '0.0.0.0'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      refused.stderr!.on('data', (c: Buffer) => (stderr += c));
      assert.equal(await new Promise((resolve) => refused.on('exit', resolve)), 2);
      assert.match(stderr, /--host 0\.0\.0\.0 is reachable from other machines; set ROLLOUT_STUDIO_TOKEN/);
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', ...cli, 'serve', run, '--port', '0', '--model-name', 'agent'],
        {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => {
          const match =
            /serving (http:\/\/127\.0\.0\.1:\d+\/v1) as agent .*as the run trained: template \{"enable_thinking":false\}, stops \["<\/answer>"\] kept/.exec(
              chunk.toString(),
            );
          if (match) resolve(match[1]);
        });
        child.on('exit', (code) => reject(new Error(`serve exited with ${code}`)));
      });
      const cliClient = new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
      const r = await cliClient.chat.completions.create({ model: 'agent', messages: question, max_tokens: 4 });
      assert.equal(r.model, 'agent');
      child.kill('SIGINT');
      assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
    } finally {
      fs.rmSync(run, { recursive: true, force: true });
    }
  });
});
