/**
 * The currency agent on each framework of examples/existing-agent — the Vercel AI SDK, LangChain.js,
 * the OpenAI Agents SDK, and Python through the command form — trained as it is for two RL steps.
 * Whatever each framework sends and re-sends, every trained token is one the policy sampled: the
 * mask is 1 exactly on the answers; the prompt is a plain rendering (the agent's system prompt, the
 * question, its tool), not sampled; and every tool turn is exactly the chat template's tokens for
 * the result the agent sent, masked out.
 *
 * The policy is the shipped base without a warm start: what it answers is not judged.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import type { TrajectoryRecord } from '#trainer/contract/protocol/runStore';
import { decodeInt32, decodeUint8 } from '#trainer/contract/protocol/tokens';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { openModelFolder } from '#trainer/foundations/models/modelFolder';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { exchange, CURRENCIES, type Currency } from '../../../examples/currency-agent/tools';

const root = path.resolve(__dirname, '../../..');
const EXAMPLE = path.join(root, 'examples/existing-agent');
const SYSTEM = 'Use the exchange tool to convert money, then reply with <answer>the amount</answer>.';
const { chatTemplate: template, tokenizer } = openModelFolder(builtInModelDir('base'));
let dir: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'framework-agents-'));
  fs.mkdirSync(path.join(dir, 'data'));
  const rows = (n: number, from: number) =>
    Array.from({ length: n }, (_, k) => {
      const i = from + k;
      const [amount, a, b] = [20 + i * 3.5, CURRENCIES[i % 7] as Currency, CURRENCIES[(i + 3) % 7] as Currency];
      return JSON.stringify({
        id: `q${i}`,
        prompt: `How much is ${amount} ${a} in ${b}?`,
        answer: exchange(amount, a, b),
      });
    }).join('\n');
  fs.writeFileSync(path.join(dir, 'data/train.jsonl'), rows(8, 0));
  fs.writeFileSync(path.join(dir, 'data/heldout.jsonl'), rows(2, 50));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function train(name: string, agent: string): Promise<TrajectoryRecord[]> {
  const file = path.join(dir, `${name}.config.ts`);
  fs.writeFileSync(
    file,
    `import { defineConfig, z } from 'rollout-studio';
import { rewards } from ${JSON.stringify(path.join(root, 'examples/currency-agent/rewards'))};
export default defineConfig({
  name: ${JSON.stringify(name)},
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  agent: ${agent},
  rewards,
  algorithm: { name: 'grpo', groupSize: 2 },
  rollout: {
    promptsPerStep: 2,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 768, maxToolResultTokens: 32 },
    stop: ['</answer>'],
    templateKwargs: { enable_thinking: false },
  },
  evaluation: { samples: 2, every: 0 },
  output: { runsDir: 'runs', checkpointEvery: 0, keepCheckpoints: 1 },
  steps: 2,
});
`,
  );
  const runDir = path.join(dir, 'runs', name);
  const log: string[] = [];
  const result = await new TrainingRun(await loadConfig(file), {
    inProcessDevice: true,
    runDir,
    log: (l) => log.push(l),
  }).run();
  assert.equal(result.run.status, 'finished', log.join('\n'));
  const reader = new RunStoreReader(runDir);
  return [1, 2].flatMap((step) => reader.trajectories(step).records);
}

/** The checks every framework's records must pass (see the file's header). */
function checkTokenExact(records: TrajectoryRecord[], framework: string): void {
  assert.equal(records.length, 8, framework);
  let toolTurns = 0;
  for (const r of records) {
    const where = `${framework}, trajectory ${r.index}`;
    assert.equal(r.agent?.error, undefined, `${where}: ${r.agent?.error}`);
    const ids = Array.from(decodeInt32(r.tokens.ids));
    const mask = Array.from(decodeUint8(r.tokens.mask));
    for (const turn of r.turns)
      for (let i = turn.tokenStart; i < turn.tokenEnd; i++)
        assert.equal(mask[i], turn.role === 'assistant' ? 1 : 0, `${where}: token ${i} of a ${turn.role} turn`);
    const prompt = ids.slice(0, r.lengths.prompt);
    const text = tokenizer.decode(prompt);
    assert.deepEqual(tokenizer.encode(text), prompt, `${where}: the prompt is a rendering`);
    for (const part of [SYSTEM, r.prompt, '"exchange"'])
      assert.ok(text.includes(part), `${where}: the prompt has ${part}`);
    r.turns.forEach((turn, k) => {
      if (turn.role !== 'tool') return;
      toolTurns++;
      const history = ids.slice(0, turn.tokenStart);
      const closing = history.at(-1) === template!.endOfTurnId ? [] : [template!.endOfTurnId];
      const results = r.turns[k - 1].toolCalls!.map((c) => ({ role: 'tool' as const, content: c.observation }));
      const appended = template!.appendTokens(
        {
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', content: 'x' },
          ],
          ids: [...history, ...closing],
        },
        results,
        { kwargs: { enable_thinking: false }, onHistoryRewrite: 'keep-tokens' },
      );
      assert.deepEqual(
        ids.slice(turn.tokenStart, turn.tokenEnd),
        [...closing, ...appended.ids],
        `${where}: tool turn ${k}`,
      );
      for (const c of r.turns[k - 1].toolCalls!) {
        const a = c.arguments as { amount: number; from: Currency; to: Currency };
        assert.equal(c.observation, exchange(a.amount, a.from, a.to), `${where}: the agent's own tool result`);
      }
    });
  }
  assert.ok(toolTurns > 0, `${framework}: the agent called its tool`);
}

describe('the currency agent on each framework, trained as it is', () => {
  const module = (file: string) => JSON.stringify(path.join(EXAMPLE, file));
  for (const [framework, agent] of [
    ['Vercel AI SDK', module('agent-ai-sdk.ts')],
    ['LangChain.js', module('agent-langchain.ts')],
    ['OpenAI Agents SDK', module('agent-openai-agents.ts')],
    ['Python (a command)', `{ command: ['python3', ${module('agent.py')}] }`],
  ] as const) {
    it(`${framework}: every trained token is sampled; prompts and tool results are masked renderings`, async () => {
      checkTokenExact(await train(framework.replace(/\W+/g, '-').toLowerCase(), agent), framework);
    });
  }
});
