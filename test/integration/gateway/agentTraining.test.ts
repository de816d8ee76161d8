/**
 * Training an agent we did not write (rollout/gateway): the agent runs as it is — on the `openai`
 * SDK, its own loop and tool — and every token trained on is one the policy sampled, one of the
 * prompt the agent sent, or one of a tool result the agent sent (masked out of the loss), never a
 * re-tokenisation of text the agent sent back. An agent that rewrites its history splits its
 * session, recorded with why; an agent that fails in any way becomes a failed trajectory with a
 * named error, and the run goes on.
 *
 * The policy is the shipped base (`rollout-studio:base`) without a warm start: the tests judge
 * what the trainer records, not what the policy learns.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import type { TrajectoryRecord } from '#trainer/contract/protocol/runStore';
import { decodeFloat32, decodeInt32, decodeUint8 } from '#trainer/contract/protocol/tokens';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { openModelFolder } from '#trainer/foundations/models/modelFolder';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { reroll } from '#trainer/pipeline/training/reroll/reroll';
import { exchange, CURRENCIES, type Currency } from '../../../examples/currency-agent/tools';

const root = path.resolve(__dirname, '../../..');
const EXAMPLE = path.join(root, 'examples/existing-agent');
/** The configs live in a temporary folder: their agents import the SDK by its path here. */
const OPENAI = require.resolve('openai');
let dir: string;

function question(i: number) {
  const amount = 10 + i * 7.25;
  const from = CURRENCIES[i % CURRENCIES.length] as Currency;
  const to = CURRENCIES[(i + 2) % CURRENCIES.length] as Currency;
  return { id: `q${i}`, prompt: `How much is ${amount} ${from} in ${to}?`, answer: exchange(amount, from, to) };
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-training-'));
  fs.mkdirSync(path.join(dir, 'data'));
  const rows = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => JSON.stringify(question(from + i))).join('\n');
  fs.writeFileSync(path.join(dir, 'data/train.jsonl'), rows(8, 0));
  fs.writeFileSync(path.join(dir, 'data/heldout.jsonl'), rows(4, 100));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A config of the currency task in the test's folder, with `agent` and overrides as written. */
function writeConfig(name: string, agent: string, extra = '', header = ''): string {
  const file = path.join(dir, `${name}.config.ts`);
  fs.writeFileSync(
    file,
    `import { defineConfig, z } from 'rollout-studio';
import { rewards } from ${JSON.stringify(path.join(root, 'examples/currency-agent/rewards'))};
${header}
export default defineConfig({
  name: ${JSON.stringify(name)},
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  agent: ${agent},
  rewards,
  algorithm: { name: 'grpo', groupSize: 4 },
  rollout: {
    promptsPerStep: 2,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 768, maxToolResultTokens: 32 },
    stop: ['</answer>'],
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 1e-5 },
  evaluation: { samples: 4, every: 0 },
  output: { runsDir: 'runs', checkpointEvery: 0, keepCheckpoints: 1 },
  steps: 2,
  ${extra}
});
`,
  );
  return file;
}

async function train(configFile: string): Promise<RunStoreReader> {
  const runDir = path.join(dir, 'runs', path.basename(configFile, '.config.ts'));
  const log: string[] = [];
  const result = await new TrainingRun(await loadConfig(configFile), {
    inProcessDevice: true,
    runDir,
    log: (line) => log.push(line),
  }).run();
  assert.equal(result.run.status, 'finished', log.join('\n'));
  return new RunStoreReader(runDir);
}

const folder = openModelFolder(builtInModelDir('base'));
const template = folder.chatTemplate!;
const tokenizer = folder.tokenizer;

function tokensOf(record: TrajectoryRecord) {
  return { ids: Array.from(decodeInt32(record.tokens.ids)), mask: Array.from(decodeUint8(record.tokens.mask)) };
}

describe('an agent on the openai SDK, trained as it is', () => {
  let records: TrajectoryRecord[];
  before(async () => {
    const reader = await train(writeConfig('openai-sdk', JSON.stringify(path.join(EXAMPLE, 'agent.ts'))));
    records = [1, 2].flatMap((step) => reader.trajectories(step).records);
  });

  it('trains on exactly the sampled tokens: the mask is 1 on the answers and 0 on the prompt and tool results', () => {
    assert.equal(records.length, 16);
    for (const r of records) {
      const { mask } = tokensOf(r);
      for (const turn of r.turns) {
        const expected = turn.role === 'assistant' ? 1 : 0;
        for (let i = turn.tokenStart; i < turn.tokenEnd; i++)
          assert.equal(mask[i], expected, `${r.index} turn ${turn.index} token ${i}`);
      }
      assert.equal(r.agent?.error, undefined);
    }
  });

  it("the prompt is the agent's request rendered by the chat template, token for token", async () => {
    const { tools } = await import(path.join(EXAMPLE, 'agent.ts'));
    for (const r of records) {
      const expected = template.promptTokens(
        [
          {
            role: 'system',
            content: 'Use the exchange tool to convert money, then reply with <answer>the amount</answer>.',
          },
          { role: 'user', content: r.prompt },
        ],
        { tools, kwargs: { enable_thinking: false } },
      );
      assert.deepEqual(tokensOf(r).ids.slice(0, r.lengths.prompt), expected.ids);
    }
  });

  it("a tool turn is exactly the template's tokens for the agent's tool result, after the sampled call", () => {
    let toolTurns = 0;
    for (const r of records) {
      const { ids } = tokensOf(r);
      r.turns.forEach((turn, k) => {
        if (turn.role !== 'tool') return;
        toolTurns++;
        const call = r.turns[k - 1].toolCalls![0];
        const args = call.arguments as { amount: number; from: Currency; to: Currency };
        const result = exchange(args.amount, args.from, args.to);
        assert.equal(call.observation, result);
        const history = ids.slice(0, turn.tokenStart);
        const appended = template.appendTokens(
          {
            messages: [
              { role: 'system', content: 'x' },
              { role: 'user', content: 'x' },
              {
                role: 'assistant',
                content: '',
                tool_calls: [{ type: 'function', function: { name: 'exchange', arguments: args } }],
              },
            ],
            ids: history[history.length - 1] === template.endOfTurnId ? history : [...history, template.endOfTurnId],
          },
          [{ role: 'tool', content: result }],
          { kwargs: { enable_thinking: false }, onHistoryRewrite: 'keep-tokens' },
        );
        const closing = history[history.length - 1] === template.endOfTurnId ? [] : [template.endOfTurnId];
        assert.deepEqual(ids.slice(turn.tokenStart, turn.tokenEnd), [...closing, ...appended.ids]);
      });
    }
    assert.ok(toolTurns > 0, 'the agent called its tool');
  });

  it('records each call with the observation the agent sent and the session it belongs to', () => {
    const sessions = new Set(records.map((r) => r.agent!.session));
    assert.equal(sessions.size, records.length);
    for (const r of records) {
      assert.equal(r.agent!.part, 0);
      for (const call of r.turns.flatMap((t) => t.toolCalls ?? [])) {
        assert.equal(call.name, 'exchange');
        assert.ok(call.latencyMs >= 0);
        assert.ok(call.tokenEnd >= r.lengths.prompt);
      }
    }
  });
});

describe('the tokens an agent was sent are the tokens trained on', () => {
  it("each answer's tokens and log-probs, as the endpoint reported them, are the trajectory's sampled tokens", async () => {
    const agent = `async (row, { baseURL, apiKey, model }) => {
    const { default: OpenAI } = await import(${JSON.stringify(OPENAI)});
    const client = new OpenAI({ baseURL, apiKey });
    const seen = ((globalThis as any).__seen ??= {});
    const messages: any[] = [{ role: 'user', content: row.messages.at(-1).content }];
    seen[baseURL] = [];
    for (let turn = 0; turn < 2; turn++) {
      const r = await client.chat.completions.create({ model, messages, logprobs: true, max_tokens: 24 });
      seen[baseURL].push(...r.choices[0].logprobs.content.map((t) => [t.token, t.logprob]));
      messages.push(r.choices[0].message, { role: 'user', content: 'Again.' });
    }
    return 'done';
  }`;
    (globalThis as { __seen?: Record<string, [string, number][]> }).__seen = {};
    const reader = await train(writeConfig('logprobs', agent, 'steps: 1,'));
    const seen = (globalThis as { __seen?: Record<string, [string, number][]> }).__seen!;
    const records = reader.trajectories(1).records;
    // The evaluations' sessions (before and after) are there too.
    assert.equal(
      Object.keys(seen).length,
      records.length + 8,
      records.map((r) => r.agent?.error?.slice(0, 300)).join('\n'),
    );
    for (const r of records) {
      const { ids, mask } = tokensOf(r);
      const logprobs = decodeFloat32(r.tokens.logprobs);
      const sampled = ids.flatMap((id, i) => (mask[i] ? [[id, logprobs[i]] as const] : []));
      const reported = Object.entries(seen).find(([url]) => url.includes(r.agent!.session))![1];
      assert.equal(reported.length, sampled.length);
      sampled.forEach(([id, logprob], k) => {
        const piece = tokenizer.decode([id]);
        assert.equal(reported[k][0], piece.includes('\uFFFD') ? tokenizer.pieces([id])[0] : piece);
        assert.ok(Math.abs(reported[k][1] - logprob) < 1e-6, `token ${k}: ${reported[k][1]} vs ${logprob}`);
      });
      assert.equal(r.turns.filter((t) => t.role === 'assistant').length, 2);
    }
  });
});

describe('an agent that rewrites its history', () => {
  it('splits its session into sequences that share its outcome, and records where and why', async () => {
    const agent = `async (row, { baseURL, apiKey, model }) => {
    const { default: OpenAI } = await import(${JSON.stringify(OPENAI)});
    const client = new OpenAI({ baseURL, apiKey });
    const question = row.messages.at(-1).content;
    const first = await client.chat.completions.create({ model, messages: [{ role: 'user', content: question }], max_tokens: 12 });
    // It keeps a note of the first answer instead of the conversation.
    const note = question + ' (a first try wrote ' + (first.choices[0].message.content ?? '').length + ' characters)';
    const second = await client.chat.completions.create({ model, messages: [{ role: 'user', content: note }], max_tokens: 12 });
    return second.choices[0].message.content ?? '';
  }`;
    const reader = await train(writeConfig('split', agent, 'steps: 1,'));
    const records = reader.trajectories(1).records;
    assert.equal(records.length, 16);
    const bySession = new Map<string, TrajectoryRecord[]>();
    for (const r of records) bySession.set(r.agent!.session, [...(bySession.get(r.agent!.session) ?? []), r]);
    assert.equal(bySession.size, 8);
    for (const parts of bySession.values()) {
      const [first, second] = [...parts].sort((a, b) => a.agent!.part - b.agent!.part);
      assert.deepEqual([first.agent!.part, second.agent!.part], [0, 1]);
      assert.equal(first.agent!.split, undefined);
      assert.equal(
        second.agent!.split,
        'the request has 1 messages, fewer than the 2 of the conversation so far (turns dropped or summarised)',
      );
      assert.equal(second.index >= 8, true);
      assert.deepEqual([first.group, first.sample], [second.group, second.sample]);
      // Each part is its own token sequence: the second starts from its own prompt.
      assert.ok(second.prompt.includes('(a first try wrote'));
      assert.equal(first.turns.filter((t) => t.role === 'assistant').length, 1);
      assert.equal(second.turns.filter((t) => t.role === 'assistant').length, 1);
      assert.equal(first.rewards.outcome, second.rewards.outcome);
      assert.equal(first.answer, second.answer);
    }
  });
});

describe("Re-roll From Here on an agent's run", () => {
  // The runs the suites above trained (node:test runs them in order): re-rolls read them.
  const runDir = (name: string) => {
    const found = path.join(dir, 'runs', name);
    assert.ok(fs.existsSync(found), `${found} is trained by an earlier suite of this file`);
    return found;
  };
  const request = (runDirectory: string, parent: TrajectoryRecord, cut: { turn: number; at: 'start' | 'call' }) => ({
    runDir: runDirectory,
    set: 'train' as const,
    step: parent.step,
    index: parent.index,
    cut,
    samples: 3,
    device: 'cpu' as const,
  });

  it('runs the agent again, answered from the record up to the turn: with the run’s seed branch 0 is its parent, token for token', async () => {
    const runDirectory = runDir('openai-sdk');
    const loaded = await loadConfig(path.join(dir, 'openai-sdk.config.ts'));
    const records = new RunStoreReader(runDirectory).trajectories(1).records;
    const parent = records.find((r) => r.turns.filter((t) => t.role === 'assistant').length >= 2);
    assert.ok(parent, 'a session of two answers or more (a call, then an answer)');
    const secondAnswer = parent.turns.filter((t) => t.role === 'assistant')[1];
    const { branches } = await reroll(loaded, request(runDirectory, parent, { turn: 1, at: 'start' }));
    assert.equal(branches.sampling.followsParent, true);
    assert.equal(branches.cut.tokenIndex, secondAnswer.tokenStart);
    assert.equal(branches.branches.length, 3);
    const [zero, ...others] = branches.branches;
    assert.equal(zero.firstDivergence, null, 'the same agent, answers, weights and draws: the parent again');
    assert.deepEqual(zero.trajectory.tokens.ids, parent.tokens.ids);
    for (const branch of others) {
      // The recorded prefix is kept token for token: the first answer is the recorded one, not sampled again.
      assert.ok(branch.firstDivergence === null || branch.firstDivergence >= secondAnswer.tokenStart);
      assert.equal(branch.trajectory.agent?.error, undefined);
      assert.equal(
        branch.trajectory.turns.filter((t) => t.role === 'assistant')[0].text,
        parent.turns.filter((t) => t.role === 'assistant')[0].text,
      );
    }
    assert.ok(
      others.some((b) => b.firstDivergence !== null),
      'fresh draws after the cut sample something else at least once',
    );
  });

  it('a session that split replays its first part and re-rolls the part of the parent', async () => {
    const runDirectory = runDir('split');
    const loaded = await loadConfig(path.join(dir, 'split.config.ts'));
    const parent = new RunStoreReader(runDirectory).trajectories(1).records.find((r) => r.agent!.part === 1)!;
    const { branches } = await reroll(loaded, request(runDirectory, parent, { turn: 0, at: 'start' }));
    const [zero] = branches.branches;
    assert.equal(zero.trajectory.agent?.part, 1);
    assert.equal(zero.trajectory.agent?.split, parent.agent!.split);
    assert.equal(
      zero.firstDivergence,
      null,
      "the first part's recorded answer gives the same note, the same second part",
    );
  });

  it('refuses what a run of its own agent cannot re-roll: a cut before a call’s results, and edits', async () => {
    const runDirectory = runDir('openai-sdk');
    const loaded = await loadConfig(path.join(dir, 'openai-sdk.config.ts'));
    const parent = new RunStoreReader(runDirectory).trajectories(1).records[0];
    await assert.rejects(
      reroll(loaded, request(runDirectory, parent, { turn: 0, at: 'call' })),
      /from the start of a turn/,
    );
    await assert.rejects(
      reroll(loaded, {
        ...request(runDirectory, parent, { turn: 0, at: 'start' }),
        edits: [{ kind: 'message', role: 'user', content: 'hi' }],
      }),
      /edits are not available/,
    );
  });
});

describe('agents that fail', () => {
  it('become failed trajectories with named errors; the run goes on', async () => {
    const agent = `async (row, { baseURL, apiKey, model }) => {
    const { default: OpenAI } = await import(${JSON.stringify(OPENAI)});
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const ask = (extra = {}) => client.chat.completions.create({ model, messages: [{ role: 'user', content: row.messages.at(-1).content }], max_tokens: 8, ...extra });
    const late = ((globalThis as any).__late ??= {});
    switch (row.id) {
      case 'q0': throw new Error('kaput');
      case 'q1': return 'never asked';
      case 'q2': return new Promise(() => {});
      case 'q3': {
        const refused = await fetch(baseURL + '/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + apiKey }, body: JSON.stringify({ model, messages: [{ role: 'function', name: 'f', content: 'x' }] }) });
        late.malformed = refused.status;
        return (await ask()).choices[0].message.content;
      }
      case 'q4': {
        const messages: any[] = [{ role: 'user', content: 'go' }];
        for (;;) {
          try {
            const r = await client.chat.completions.create({ model, messages, max_tokens: 4 });
            messages.push(r.choices[0].message, { role: 'user', content: 'more' });
          } catch (e: any) {
            late.overBudget = e.code;
            return 'stopped';
          }
        }
      }
      case 'q5': await ask(); return { reward: 'lots' };
      case 'q6': await ask(); setTimeout(() => ask().catch((e: any) => (late.afterEnd = e.status)), 50); return 'early';
      default: return (await ask()).choices[0].message.content;
    }
  }`;
    (globalThis as { __late?: Record<string, unknown> }).__late = {};
    const config = writeConfig(
      'faults',
      `{ function: ${agent}, timeoutSeconds: 3 }`,
      "algorithm: { name: 'reinforce++', groupSize: 1 }, rollout: { promptsPerStep: 8, budget: { maxTurns: 3, maxNewTokensPerTurn: 8, maxTotalTokens: 768, maxToolResultTokens: 32 }, templateKwargs: { enable_thinking: false } }, steps: 1,",
    );
    const reader = await train(config);
    await new Promise((r) => setTimeout(r, 200));
    const late = (globalThis as { __late?: Record<string, unknown> }).__late!;
    const byRow = new Map(reader.trajectories(1).records.map((r) => [r.rowId, r]));
    assert.equal(byRow.size, 8);
    const error = (id: string) => [byRow.get(id)!.finishReason, byRow.get(id)!.agent?.error?.split('\n')[0]];
    assert.deepEqual(error('q0'), ['error', 'the agent threw: Error: kaput']);
    assert.deepEqual(error('q1'), ['error', undefined]);
    assert.equal(byRow.get('q1')!.error, 'the agent ended without calling the model');
    assert.deepEqual(error('q2'), ['error', 'the agent ran past its 3 s (its own time, model calls not counted)']);
    assert.equal(late.malformed, 400);
    assert.ok(['answered', 'max_turn_tokens'].includes(byRow.get('q3')!.finishReason), byRow.get('q3')!.agent?.error);
    assert.equal(byRow.get('q3')!.agent?.error, undefined);
    assert.equal(late.overBudget, 'max_turns_exceeded');
    assert.equal(byRow.get('q4')!.finishReason, 'max_turns');
    assert.equal(byRow.get('q4')!.turns.filter((t) => t.role === 'assistant').length, 3);
    assert.match(error('q5')[1]!, /reward: "lots"; expected a finite number/);
    assert.ok([404, 409].includes(late.afterEnd as number), `a request after the session ended: ${late.afterEnd}`);
    assert.ok(['answered', 'max_turn_tokens'].includes(byRow.get('q7')!.finishReason), byRow.get('q7')!.agent?.error);
    assert.equal(byRow.get('q7')!.agent?.error, undefined);
    // Nothing generated is trained on nothing: no token of a session without a model call is masked in.
    for (const id of ['q0', 'q1']) assert.ok(tokensOf(byRow.get(id)!).mask.every((m) => m === 0));
  });
});

describe('agents in processes of their own', () => {
  it('a module agent that blocks its host fails its sessions; the next rollout gets a fresh host', async () => {
    fs.writeFileSync(
      path.join(dir, 'blocking-agent.ts'),
      `import OpenAI from ${JSON.stringify(OPENAI)};
export default async function agent(row: { id: string; messages: { content: string }[] }, { baseURL, apiKey, model }: { baseURL: string; apiKey: string; model: string }) {
  if (row.id === 'q0') for (;;) {}
  const client = new OpenAI({ baseURL, apiKey });
  const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: row.messages.at(-1)!.content }], max_tokens: 8 });
  return r.choices[0].message.content ?? '';
}
`,
    );
    const reader = await train(
      writeConfig(
        'blocking',
        "{ module: './blocking-agent.ts', timeoutSeconds: 5 }",
        "algorithm: { name: 'reinforce++', groupSize: 1 }, rollout: { promptsPerStep: 8, budget: { maxTurns: 2, maxNewTokensPerTurn: 8, maxTotalTokens: 768, maxToolResultTokens: 32 } }, steps: 1,",
      ),
    );
    const step = reader.trajectories(1).records;
    assert.equal(step.length, 8);
    assert.match(step.find((r) => r.rowId === 'q0')!.agent!.error!, /ran past its 5 s/);
    for (const r of step.filter((r) => r.rowId !== 'q0'))
      assert.match(
        r.agent!.error ?? '',
        /the agent host did not answer|ran past|session ended/,
        `${r.rowId}: ${r.agent!.error}`,
      );
    // The evaluation after the step ran in a fresh host.
    const after = reader.evaluationTrajectories(1).records;
    assert.equal(after.length, 4);
    for (const r of after) assert.equal(r.agent?.error, undefined);
  });

  it('a command that exits non-zero fails its session with the status and the end of its stderr', async () => {
    const script =
      "process.stdin.resume(); process.stdin.on('end', () => { console.error('no luck'); process.exit(3); });";
    const reader = await train(
      writeConfig(
        'exits',
        `{ command: [${JSON.stringify(process.execPath)}, '-e', ${JSON.stringify(script)}] }`,
        'steps: 1,',
      ),
    );
    for (const r of reader.trajectories(1).records) {
      assert.equal(r.finishReason, 'error');
      assert.match(r.agent!.error!, /exited with code 3; its stderr ends: no luck/);
    }
  });
});

describe('an agent whose prompt does not fit the budget', () => {
  it('gets context_length_exceeded; its trajectory ends max_total_tokens, generating nothing, and the run goes on', async () => {
    const agent = `async (row, { baseURL, apiKey, model }) => {
    const { default: OpenAI } = await import(${JSON.stringify(OPENAI)});
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    try {
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'word '.repeat(2000) }] });
    } catch (e: any) {
      return e.code;
    }
  }`;
    const reader = await train(writeConfig('too-long', agent, 'steps: 1,'));
    for (const r of reader.trajectories(1).records) {
      assert.equal(r.finishReason, 'max_total_tokens');
      assert.equal(r.agent!.answer, 'context_length_exceeded');
      assert.ok(tokensOf(r).mask.every((m) => m === 0));
    }
  });
});
