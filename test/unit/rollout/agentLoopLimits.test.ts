import { describe, it, before } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import type { ChatTemplate, Tokenizer } from '#trainer/foundations/models';
import { datasetFromRows, type DatasetRow } from '#trainer/foundations/data';
import {
  AgentLoop,
  BudgetError,
  checkBudget,
  PolicyContractError,
  type AgentLoopOptions,
} from '#trainer/pipeline/rollout';
import type { Policy } from '#trainer/foundations/models/generation/policy';
import { scoreTrajectories } from '#trainer/pipeline/rewards';
import { defineTool, ToolSet } from '#trainer/foundations/tools';
import { CalculatorTool } from '#trainer/foundations/tools/builtin/calculator';
import { qwen3, ScriptedPolicy, type Script } from '../../helpers/scriptedPolicy';
import { toRlSample } from '#trainer/pipeline/rl/rewardPlacement';
import { tokenRewards } from '#trainer/pipeline/rl/samples';

const SAMPLING = { temperature: 0.7, topK: 0, topP: 1 };
const BUDGET = { maxTurns: 4, maxNewTokensPerTurn: 120, maxTotalTokens: 1500, maxToolResultTokens: 60 };

function rows(...values: Record<string, unknown>[]): DatasetRow[] {
  return datasetFromRows('limits.jsonl', values).rows;
}
const call = (name: string, args: unknown) =>
  `<tool_call>\n{"name": "${name}", "arguments": ${JSON.stringify(args)}}\n</tool_call>`;

describe('AgentLoop failures, budgets and truncation', () => {
  let tokenizer: Tokenizer;
  let template: ChatTemplate;
  let tools: ToolSet;
  let slowAborted: boolean;

  before(() => {
    ({ tokenizer, template } = qwen3());
    slowAborted = false;
    tools = new ToolSet([
      new CalculatorTool(),
      defineTool({
        name: 'fragile',
        description: 'Always fails.',
        parameters: z.object({}),
        execute: () => {
          throw new Error('index not loaded');
        },
      }),
      defineTool({
        name: 'slow',
        description: 'Never answers in time.',
        parameters: z.object({}),
        timeoutMs: 40,
        execute: (_args, ctx) =>
          new Promise<string>((resolve) =>
            ctx.signal.addEventListener('abort', () => {
              slowAborted = true;
              resolve('too late');
            }),
          ),
      }),
      defineTool({
        name: 'verbose',
        description: 'Returns a long text.',
        parameters: z.object({ words: z.int() }),
        execute: ({ words }) => Array.from({ length: words }, (_, i) => `word${i}`).join(' '),
      }),
    ]);
  });

  const loopWith = (script: Script, extra: Partial<AgentLoopOptions> = {}) => {
    const policy = new ScriptedPolicy(tokenizer, script, template.endOfTurnId);
    return { policy, loop: new AgentLoop({ policy, template, tools, budget: BUDGET, sampling: SAMPLING, ...extra }) };
  };

  it('turns every failure kind into an observation, records it with its kind, and lets the batch go on', async () => {
    const calls = [
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}\n</tool_call>', // parse: not JSON
      call('lookup', { id: 3 }), // unknown tool
      call('calculator', { expr: '1+1' }), // invalid arguments
      call('fragile', {}), // throws
      call('slow', {}), // times out
      call('calculator', { expression: '7*6' }), // fine
      '<tool_call>\n{"arguments": {}}\n</tool_call>', // parse: no name
    ];
    const { policy, loop } = loopWith((sequence, turn) =>
      sequence === 0 ? [calls.join('\n'), '<answer>42</answer>'][turn] : '<answer>fine</answer>',
    );
    const batch = rows({ id: 'bad', prompt: 'Try everything.' }, { id: 'good', prompt: 'Just answer.' });
    const [t, other] = await loop.run(
      batch.map((row, i) => ({ row, group: i, sample: 0 })),
      { seed: 1 },
    );

    assert.deepEqual(
      t.calls.map((c) => [c.name, c.error?.kind]),
      [
        [undefined, 'parse'],
        ['lookup', 'unknown_tool'],
        ['calculator', 'invalid_arguments'],
        ['fragile', 'threw'],
        ['slow', 'timeout'],
        ['calculator', undefined],
        [undefined, 'parse'],
      ],
    );
    const observations = t.calls.map((c) => c.observation);
    assert.equal(observations[0], 'Error: bad call: not valid JSON (it ends early)');
    assert.equal(observations[1], 'Error: no tool "lookup"; tools: calculator, fragile, slow, verbose');
    assert.equal(observations[2], 'Error: calculator arguments: "expression" is missing');
    assert.equal(observations[3], 'Error: fragile failed: Error: index not loaded');
    assert.equal(observations[4], 'Error: slow did not finish within 40 ms');
    assert.equal(observations[5], '42');
    assert.equal(observations[6], 'Error: bad call: no "name" string');
    // The record keeps the whole story: the stack of the throw, the raw text of the broken call.
    assert.match(t.calls[3].error!.message, /^Error: index not loaded\n\s+at /);
    assert.equal(t.calls[0].raw, '{"name": "calculator", "arguments": {"expression": "1+1"}');
    assert.deepEqual(t.calls[2].arguments, { expr: '1+1' });
    assert.ok(slowAborted, "the timed-out tool's signal was aborted");
    assert.ok(t.calls[4].latencyMs >= 35);
    // The policy saw every observation, in order, and the trajectory went on to answer.
    const shown = tokenizer.decode(t.ids.slice(t.turns[2].tokenStart));
    let from = 0;
    for (const observation of observations) {
      const at = shown.indexOf(`<tool_response>\n${observation}\n</tool_response>`, from);
      assert.ok(at >= from, `observation shown in order: ${observation}`);
      from = at;
    }
    assert.equal(t.finishReason, 'answered');
    assert.equal(other.finishReason, 'answered');
    assert.deepEqual(policy.contexts.get(0), t.ids);

    // An error penalty lands on each failed call's last token; configurable per kind.
    const rewards = (
      await scoreTrajectories(
        [t],
        {
          outcome: [],
          errorPenalty: { parse: 0.5, timeout: 0.1, unknown_tool: 0.2, invalid_arguments: 0.3, threw: 0.4 },
        },
        tools,
      )
    ).trajectories[0];
    assert.deepEqual(
      rewards.calls.map((c) => c.processReward),
      [-0.5, -0.2, -0.3, -0.4, -0.1, undefined, -0.5],
    );
    const sample = toRlSample(t, rewards);
    t.calls.forEach((c, i) => assert.equal(tokenRewards(sample)[c.tokenEnd], rewards.calls[i].scaled));
  });

  it('uses the configured wording for error observations', async () => {
    const { loop } = loopWith((_s, turn) => [call('nope', {}), 'ok'][turn], {
      errorObservation: ({ kind, tool }) => `[${kind}] ${tool}`,
    });
    const [t] = await loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1 });
    assert.equal(t.calls[0].observation, '[unknown_tool] nope');
    assert.match(tokenizer.decode(t.ids), /<tool_response>\n\[unknown_tool\] nope\n<\/tool_response>/);
  });

  it('truncates a long tool result to maxToolResultTokens with a visible marker', async () => {
    const { loop } = loopWith((_s, turn) => [call('verbose', { words: 300 }), 'done'][turn]);
    const [t] = await loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1 });
    const [c] = t.calls;
    assert.equal(c.truncated, true);
    assert.ok(tokenizer.encode(c.observation).length <= BUDGET.maxToolResultTokens);
    assert.ok(tokenizer.encode(c.observation).length >= BUDGET.maxToolResultTokens - 3, 'uses the room it has');
    assert.match(c.observation, /^word0 word1 word2 .*\n\[… \d+ more tokens truncated\]$/s);
    assert.match(tokenizer.decode(t.ids), /more tokens truncated\]\n<\/tool_response>/);
    assert.equal(t.finishReason, 'answered');
  });

  it('cuts a turn at maxNewTokensPerTurn: the trajectory ends, half-written calls do not run', async () => {
    const { policy, loop } = loopWith(() => ({
      text: 'thinking '.repeat(200) + call('calculator', { expression: '1+1' }),
      end: false,
    }));
    const [t] = await loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1 });
    assert.equal(policy.calls[0].options.maxNewTokens, BUDGET.maxNewTokensPerTurn);
    const turn = t.turns.at(-1)!;
    assert.equal(turn.tokenEnd - turn.tokenStart, BUDGET.maxNewTokensPerTurn);
    assert.equal(turn.finish, 'length');
    assert.equal(t.finishReason, 'max_turn_tokens');
    assert.deepEqual(t.calls, []);
  });

  /**
   * A short and a long prompt that call once, then run on; maxTotalTokens is tight enough that the
   * long prompt's second turn is limited by the total: its first turn (a call, ~27 tokens) and the
   * result (~20) leave less than a full turn.
   */
  const nearTheBudget = () => {
    const script: Script = (sequence, turn) => {
      if (turn === 0) return call('calculator', { expression: sequence === 0 ? '1+1' : '2+2' });
      return { text: 'and so on '.repeat(100), end: false };
    };
    const [short, long] = rows({ id: 'short', prompt: 'x' }, { id: 'long', prompt: 'x '.repeat(60) });
    const probe = loopWith(() => '').loop;
    const maxTotalTokens = probe.renderPrompt(long).ids.length + BUDGET.maxNewTokensPerTurn + 20;
    return { script, short, long, maxTotalTokens };
  };

  it('gives a turn only what is left of maxTotalTokens, each its own limit in one generate call per round', async () => {
    const { script, short, long, maxTotalTokens } = nearTheBudget();
    const { policy, loop } = loopWith(script, { budget: { ...BUDGET, maxTotalTokens } });
    const [a, b] = await loop.run(
      [short, long].map((row, i) => ({ row, group: i, sample: 0 })),
      { seed: 1 },
    );
    assert.equal(b.ids.length, maxTotalTokens);
    assert.equal(b.finishReason, 'max_total_tokens');
    assert.equal(a.finishReason, 'max_turn_tokens');
    assert.equal(policy.calls.length, 2, 'round 2 is one call');
    assert.deepEqual(
      policy.calls[1].requests.map((r) => [r.sequence, r.maxNewTokens]),
      [
        [0, undefined],
        [1, maxTotalTokens - b.turns.at(-1)!.tokenStart],
      ],
    );
    assert.equal(policy.calls[1].options.maxNewTokens, BUDGET.maxNewTokensPerTurn);
  });

  it('keeps one call per limit, largest first, for the sampled turns of a run recorded per limit; greedy turns stay one call', async () => {
    const { script, short, long, maxTotalTokens } = nearTheBudget();
    const run = async (temperature: number, drawSchedule: 'per-limit' | 'per-round') => {
      const { policy, loop } = loopWith(script, {
        budget: { ...BUDGET, maxTotalTokens },
        sampling: { ...SAMPLING, temperature },
      });
      const trajectories = await loop.run(
        [short, long].map((row, i) => ({ row, group: i, sample: 0 })),
        { seed: 1, drawSchedule },
      );
      return { calls: policy.calls, trajectories };
    };
    const perLimit = await run(SAMPLING.temperature, 'per-limit');
    const longTurn = perLimit.trajectories[1].turns.at(-1)!;
    assert.deepEqual(
      perLimit.calls.slice(1).map((c) => [c.requests.map((r) => r.sequence), c.options.maxNewTokens]),
      [
        [[0], BUDGET.maxNewTokensPerTurn],
        [[1], maxTotalTokens - longTurn.tokenStart],
      ],
    );
    const greedy = await run(0, 'per-limit');
    assert.equal(greedy.calls.length, 2, 'greedy turns draw nothing: round 2 is one call');
    const perRound = await run(SAMPLING.temperature, 'per-round');
    for (const other of [greedy, perRound])
      assert.deepEqual(
        other.trajectories.map((t) => [t.ids, t.finishReason]),
        perLimit.trajectories.map((t) => [t.ids, t.finishReason]),
      );
  });

  it('ends with max_total_tokens instead of appending results that leave no room to generate', async () => {
    const probe = loopWith(() => '').loop;
    const [row] = rows({ prompt: 'x' });
    const promptLength = probe.renderPrompt(row).ids.length;
    const first = call('verbose', { words: 40 });
    const firstLength = tokenizer.encode(first).length + 1;
    const maxNewTokensPerTurn = firstLength + 2;
    const { loop } = loopWith((_s, turn) => [first, 'never'][turn], {
      budget: { ...BUDGET, maxNewTokensPerTurn, maxTotalTokens: promptLength + maxNewTokensPerTurn + 10 },
    });
    const [t] = await loop.run([{ row, group: 0, sample: 0 }], { seed: 1 });
    assert.equal(t.finishReason, 'max_total_tokens');
    assert.equal(t.ids.length, promptLength + firstLength);
    assert.equal(t.turns.at(-1)!.role, 'assistant');
    // The call ran and is recorded (its process reward still counts), but nothing was appended.
    assert.equal(t.calls.length, 1);
    assert.match(t.calls[0].observation, /^word0 word1/);
  });

  it('stops after maxTurns; calls in the last turn still run and are recorded', async () => {
    const { policy, loop } = loopWith(() => call('calculator', { expression: '2*21' }), {
      budget: { ...BUDGET, maxTurns: 2 },
    });
    const [t] = await loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1 });
    assert.equal(policy.calls.length, 2);
    assert.equal(t.finishReason, 'max_turns');
    assert.deepEqual(
      t.calls.map((c) => [c.turn, c.observation]),
      [
        [0, '42'],
        [1, '42'],
      ],
    );
    assert.equal(t.turns.at(-1)!.role, 'assistant');
    assert.equal(t.mask.at(-1), 1);
  });

  it('validates the budget, naming each bad field', () => {
    assert.throws(
      () => checkBudget({ maxTurns: 0, maxNewTokensPerTurn: 10, maxTotalTokens: 5, maxToolResultTokens: 4 }),
      (error: unknown) => {
        assert.ok(error instanceof BudgetError);
        assert.match(error.message, /budget\.maxTurns: Too small: expected number to be >=1/);
        assert.match(error.message, /budget\.maxToolResultTokens: must be at least 16/);
        return true;
      },
    );
    assert.throws(
      () => checkBudget({ maxTurns: 2, maxNewTokensPerTurn: 10, maxTotalTokens: 10, maxToolResultTokens: 20 }),
      /budget\.maxNewTokensPerTurn: must be less than maxTotalTokens \(10\): the prompt needs room too; budget\.maxToolResultTokens: must be less than maxTotalTokens \(10\)/,
    );
    assert.throws(
      () =>
        checkBudget({
          maxTurns: 2,
          maxNewTokensPerTurn: 10,
          maxTotalTokens: 100,
          maxToolResultTokens: 20,
          maxPromptTokens: 5,
        }),
      /budget: Unrecognized key: "maxPromptTokens"/,
    );
    assert.throws(
      () =>
        loopWith(() => '', {
          budget: { ...BUDGET, maxToolResultTokens: 16 },
          truncationMarker: (n) => `\n[cut ${n} tokens, and this marker goes on and on for far too long]`,
        }),
      /budget\.maxToolResultTokens \(16\) must exceed the \d+ tokens of the truncation marker/,
    );
  });

  it('refuses per-row tool arguments for tools that do not exist, naming the row', () => {
    const { loop } = loopWith(() => '');
    assert.throws(
      () => loop.checkRows(rows({ prompt: 'x' }, { prompt: 'y', toolArgs: { serach: { index: 'wiki' } } })),
      /limits\.jsonl:2: toolArgs names the tool "serach", which is not one of the tools \(calculator, fragile, slow, verbose\)/,
    );
  });

  it('gives each tool its row arguments in ctx.rowArgs', async () => {
    const seen: unknown[] = [];
    const probe = defineTool({
      name: 'probe',
      description: 'Reports its row arguments.',
      parameters: z.object({}),
      execute: (_a, ctx) => {
        seen.push([ctx.row.id, ctx.rowArgs, ctx.turn, ctx.callIndex, ctx.trajectory.index]);
        return 'ok';
      },
    });
    const policy = new ScriptedPolicy(tokenizer, (_s, turn) => [call('probe', {}), 'done'][turn], template.endOfTurnId);
    const loop = new AgentLoop({ policy, template, tools: new ToolSet([probe]), budget: BUDGET, sampling: SAMPLING });
    await loop.run(
      rows({ id: 'r1', prompt: 'x', toolArgs: { probe: { shard: 3 } } }, { id: 'r2', prompt: 'y' }).map((row, i) => ({
        row,
        group: i,
        sample: 0,
      })),
      { seed: 1 },
    );
    assert.deepEqual(seen, [
      ['r1', { shard: 3 }, 0, 0, 0],
      ['r2', undefined, 0, 0, 1],
    ]);
  });

  it('ends a trajectory with error when the template refuses the history, and goes on with the others', async () => {
    // A template that raises once a tool message follows an assistant turn.
    const strict = new (template.constructor as typeof import('#trainer/foundations/models').ChatTemplate)(
      tokenizer,
      {
        default:
          "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('tools are not supported here') }}{% endif %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      },
      'strict test template',
    );
    const policy = new ScriptedPolicy(
      tokenizer,
      (sequence) => (sequence === 0 ? call('calculator', { expression: '1' }) : 'plain'),
      template.endOfTurnId,
    );
    const loop = new AgentLoop({ policy, template: strict, tools, budget: BUDGET, sampling: SAMPLING });
    const [a, b] = await loop.run(
      rows({ prompt: 'x' }, { prompt: 'y' }).map((row, i) => ({ row, group: i, sample: 0 })),
      { seed: 1 },
    );
    assert.equal(a.finishReason, 'error');
    assert.match(
      a.error!,
      /^after turn 1: strict test template: chat template "default" failed to render: tools are not supported here$/,
    );
    assert.equal(a.calls.length, 1);
    assert.equal(b.finishReason, 'answered');
  });

  it('treats a broken policy contract as an error, not an observation', async () => {
    const broken: Policy = {
      startSession: async () => ({
        generate: async (requests) =>
          requests.map((r) => ({
            sequence: r.sequence,
            tokens: [1, 2],
            logprobs: [0],
            entropies: [0, 0],
            finish: 'length' as const,
          })),
        close: async () => {},
      }),
    };
    const loop = new AgentLoop({ policy: broken, template, tools, budget: BUDGET, sampling: SAMPLING });
    await assert.rejects(
      loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1 }),
      (error: unknown) => {
        assert.ok(error instanceof PolicyContractError);
        assert.match(error.message, /sequence 0: 2 tokens but 1 log-probs and 2 entropies/);
        return true;
      },
    );
  });

  it('stops between rounds when the signal aborts, and closes the session', async () => {
    const controller = new AbortController();
    const policy = new ScriptedPolicy(tokenizer, () => call('calculator', { expression: '1' }), template.endOfTurnId);
    const loop = new AgentLoop({
      policy,
      template,
      tools,
      budget: BUDGET,
      sampling: SAMPLING,
      observer: { turnGenerated: () => controller.abort(new Error('stopped by the user')) },
    });
    await assert.rejects(
      loop.run([{ row: rows({ prompt: 'x' })[0], group: 0, sample: 0 }], { seed: 1, signal: controller.signal }),
      /stopped by the user/,
    );
    assert.equal(policy.calls.length, 1);
    assert.equal(policy.closed, 1);
  });
  it('ends a turn at a configured stop string, keeps the string, and closes the turn itself', async () => {
    const runOn = '<answer>42</answer>42</answer>42.42.42';
    const play = async (extra: Partial<AgentLoopOptions>) => {
      const { policy, loop } = loopWith(() => runOn, extra);
      const [t] = await loop.run([{ row: rows({ prompt: 'Answer.' })[0], group: 0, sample: 0 }], { seed: 1 });
      return { t, options: policy.calls[0].options };
    };
    const free = await play({});
    assert.equal(free.t.turns.at(-1)!.content, runOn);
    assert.equal(free.t.turns.at(-1)!.finish, 'eos');

    const { t, options } = await play({ stop: ['</answer>'] });
    assert.ok(options.stopStrings?.includes('</answer>'), 'the stop string reaches the policy');
    const last = t.turns.at(-1)!;
    assert.equal(last.content, '<answer>42</answer>');
    assert.equal(last.finish, 'stop');
    assert.equal(t.finishReason, 'answered');
    // Nothing of the run-on was generated: the trajectory ends with the policy's own stop.
    assert.equal(tokenizer.decode(t.ids.slice(last.tokenStart, last.tokenEnd)), '<answer>42</answer>');
    assert.ok(t.ids.length - last.tokenEnd <= 1, 'at most the closing end-of-turn token follows');
  });
});
