import { describe, it, before } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import type { ChatTemplate, Tokenizer } from '#trainer/foundations/models';
import {
  decodeFloat32,
  decodeInt32,
  decodeUint8,
  parseWith,
  TrajectoryRecord,
  type ChatMessage,
} from '#trainer/contract/protocol';
import { datasetFromRows, type DatasetRow } from '#trainer/foundations/data';
import {
  AgentLoop,
  CodeBlockFormat,
  HermesFormat,
  type RolloutObserver,
  type Trajectory,
} from '#trainer/pipeline/rollout';
import { toTrajectoryRecord } from '#trainer/pipeline/training/step/trajectoryRecord';
import { exactMatch, scoreTrajectories } from '#trainer/pipeline/rewards';
import { defineTool, ToolSet } from '#trainer/foundations/tools';
import { CalculatorTool } from '#trainer/foundations/tools/builtin/calculator';
import { JavaScriptTool } from '#trainer/foundations/tools/builtin/javascript';
import { SearchTool } from '#trainer/foundations/tools/builtin/search';
import { fakeEntropy, fakeLogprob, qwen3, ScriptedPolicy, type Script } from '../../helpers/scriptedPolicy';
import { toRlSample } from '#trainer/pipeline/rl/rewardPlacement';
import { tokenRewards } from '#trainer/pipeline/rl/samples';

const DOCS = [
  { id: 'p-ada', title: 'Ada Brenner', text: 'Ada Brenner is a chemist who works at Northwind Labs.' },
  {
    id: 'o-northwind',
    title: 'Northwind Labs',
    text: 'Northwind Labs is a research company headquartered in Veldmark.',
  },
  { id: 'c-veldmark', title: 'Veldmark', text: 'Veldmark is a harbour city in Ostria.' },
];
const SAMPLING = { temperature: 1, topK: 0, topP: 1 };
const BUDGET = { maxTurns: 4, maxNewTokensPerTurn: 200, maxTotalTokens: 2000, maxToolResultTokens: 100 };
const SYSTEM = 'You are a research assistant. Answer in <answer></answer>.';

function rows(...values: Record<string, unknown>[]): DatasetRow[] {
  return datasetFromRows('test.jsonl', values).rows;
}

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args }).replace(/":/g, '": ').replace(/,"/g, ', "')}\n</tool_call>`;

describe('AgentLoop (real Qwen3 tokenizer and template, scripted policy)', () => {
  let tokenizer: Tokenizer;
  let template: ChatTemplate;
  let EOT: number;
  let search: SearchTool;
  let calculator: CalculatorTool;
  let tools: ToolSet;

  before(() => {
    ({ tokenizer, template } = qwen3());
    EOT = template.endOfTurnId;
    search = new SearchTool(DOCS, { topK: 1 });
    calculator = new CalculatorTool();
    tools = new ToolSet([search, calculator]);
  });

  const loopWith = (policy: ScriptedPolicy, extra: Partial<ConstructorParameters<typeof AgentLoop>[0]> = {}) =>
    new AgentLoop({ policy, template, tools, budget: BUDGET, sampling: SAMPLING, systemPrompt: SYSTEM, ...extra });
  const scripted = (script: Script) => new ScriptedPolicy(tokenizer, script, EOT);

  it("lays the tools' JSON Schemas out in the prompt exactly as Qwen3's template does", () => {
    const Lookup = z.object({ id: z.int().describe('Document id'), page: z.int().min(1).default(1) });
    const lookup = defineTool({
      name: 'lookup',
      description: 'Open a document by id.',
      parameters: Lookup,
      execute: ({ id }) => `document ${id}`,
    });
    const loop = new AgentLoop({
      policy: scripted(() => ''),
      template,
      tools: new ToolSet([search, lookup]),
      budget: BUDGET,
      sampling: SAMPLING,
      systemPrompt: SYSTEM,
    });
    const [row] = rows({ id: 'q1', prompt: 'Where does Ada Brenner work?' });
    assert.equal(
      loop.renderPrompt(row).text,
      `<|im_start|>system\n${SYSTEM}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n` +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "search", "description": "Search the knowledge base and return the most relevant documents.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "description": "What to search for: names, places, organisations or keywords."}}, "required": ["query"]}}}\n' +
        // .int() adds no safe-integer bounds; a default makes the field optional (the model writes the input).
        '{"type": "function", "function": {"name": "lookup", "description": "Open a document by id.", "parameters": {"type": "object", "properties": {"id": {"type": "integer", "description": "Document id"}, "page": {"default": 1, "type": "integer", "minimum": 1}}, "required": ["id"]}}}\n' +
        '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWhere does Ada Brenner work?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('builds the exact token sequence, mask, log-probs and boundaries of a two-turn trajectory with parallel calls', async () => {
    const turn1 =
      '<think>\nI need the employer and a product.\n</think>\n\n' +
      call('search', { query: 'Ada Brenner' }) +
      '\n' +
      call('calculator', { expression: '12*7' });
    const turn2 = '<think>\nBoth found.\n</think>\n\n<answer>Northwind Labs</answer>';
    const policy = scripted((_s, turn) => [turn1, turn2][turn]);
    const [row] = rows({
      id: 'q1',
      prompt: 'Where does Ada Brenner work, and what is 12*7?',
      answer: 'Northwind Labs',
    });
    const [t] = await loopWith(policy).run([{ row, group: 3, sample: 1 }], { seed: 5 });

    const promptText = template.render(
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: row.messages[0].content },
      ],
      { tools: tools.specs(), addGenerationPrompt: true },
    );
    const searchResult = '[1] Ada Brenner: Ada Brenner is a chemist who works at Northwind Labs.';
    const appended = `\n<|im_start|>user\n<tool_response>\n${searchResult}\n</tool_response>\n<tool_response>\n84\n</tool_response><|im_end|>\n<|im_start|>assistant\n`;
    const prompt = tokenizer.encode(promptText);
    const gen1 = [...tokenizer.encode(turn1), EOT];
    const results = tokenizer.encode(appended);
    const gen2 = [...tokenizer.encode(turn2), EOT];
    assert.deepEqual(t.ids, [...prompt, ...gen1, ...results, ...gen2]);
    assert.deepEqual(t.mask, [
      ...prompt.map(() => 0),
      ...gen1.map(() => 1),
      ...results.map(() => 0),
      ...gen2.map(() => 1),
    ]);
    assert.deepEqual(t.logprobs, [
      ...prompt.map(() => 0),
      ...gen1.map((_, k) => fakeLogprob(0, 0, k)),
      ...results.map(() => 0),
      ...gen2.map((_, k) => fakeLogprob(0, 1, k)),
    ]);
    assert.deepEqual(t.entropies, [
      ...prompt.map(() => 0),
      ...gen1.map((_, k) => fakeEntropy(0, 0, k)),
      ...results.map(() => 0),
      ...gen2.map((_, k) => fakeEntropy(0, 1, k)),
    ]);
    // What the policy saw and produced is the trajectory, and it was sent each token once.
    assert.deepEqual(policy.contexts.get(0), t.ids);
    assert.deepEqual(
      policy.calls.map((c) => c.requests[0].append.length),
      [prompt.length, results.length],
    );
    assert.deepEqual(policy.calls[0].options.stopTokenIds, [EOT]);
    assert.equal(policy.closed, 1);

    // Turns partition the sequence.
    const g1 = prompt.length;
    const r1 = g1 + gen1.length;
    const g2 = r1 + results.length;
    assert.deepEqual(
      t.turns.map((turn) => [turn.role, turn.tokenStart, turn.tokenEnd, turn.finish]),
      [
        ['system', 0, tokenizer.encode(promptText.slice(0, promptText.indexOf('<|im_start|>user'))).length, undefined],
        ['user', tokenizer.encode(promptText.slice(0, promptText.indexOf('<|im_start|>user'))).length, g1, undefined],
        ['assistant', g1, r1, 'tool_call'],
        ['tool', r1, g2, undefined],
        ['assistant', g2, t.ids.length, 'eos'],
      ],
    );
    // Each call's reward token is the `</tool_call>` that closes it, a policy token.
    const closes = t.ids.map((id, i) => (id === tokenizer.tokenId('</tool_call>') ? i : -1)).filter((i) => i >= g1);
    assert.deepEqual(
      t.calls.map((c) => c.tokenEnd),
      closes,
    );
    assert.ok(t.calls.every((c) => t.mask[c.tokenEnd] === 1));
    assert.deepEqual(
      t.calls.map((c) => [c.turn, c.turnIndex, c.index, c.name, c.arguments, c.observation, c.error, c.truncated]),
      [
        [0, 2, 0, 'search', { query: 'Ada Brenner' }, searchResult, undefined, false],
        [0, 2, 1, 'calculator', { expression: '12*7' }, '84', undefined, false],
      ],
    );
    assert.deepEqual(t.calls[0].result?.data, { documentIds: ['p-ada'] });
    assert.equal(t.finishReason, 'answered');
    assert.deepEqual(t.historyRewrites, []);
    assert.equal(t.prompt, 'Where does Ada Brenner work, and what is 12*7?');
    assert.deepEqual([t.group, t.sample, t.rowId, t.promptLength], [3, 1, 'q1', prompt.length]);

    // The history messages are a faithful view: the template renders them to exactly these tokens.
    const full = template.render(t.messages, { tools: tools.specs() });
    assert.equal(tokenizer.decode(t.ids), full.slice(0, full.lastIndexOf('<|im_end|>') + '<|im_end|>'.length));
  });

  it('converts to a valid run-store record and an RL sample with rewards on the right tokens', async () => {
    const turn1 = call('search', { query: 'Northwind Labs' });
    const turn2 = '<answer>Veldmark</answer>';
    const [row] = rows({ id: 'q2', prompt: 'Where is Northwind Labs?', answer: 'Veldmark' });
    const [t] = await loopWith(scripted((_s, turn) => [turn1, turn2][turn])).run([{ row, group: 0, sample: 0 }], {
      seed: 1,
    });
    const batch = await scoreTrajectories(
      [t],
      {
        outcome: [exactMatch()],
        process: [{ name: 'searched', score: (c) => (c.name === 'search' ? 0.25 : undefined) }],
      },
      tools,
    );
    const rewards = batch.trajectories[0];
    assert.equal(rewards.outcome, 1);
    assert.equal(rewards.answer, 'Veldmark');

    const sample = toRlSample(t, rewards);
    const placed = tokenRewards(sample);
    const last = t.mask.lastIndexOf(1);
    assert.equal(placed[last], 1);
    assert.equal(placed[t.calls[0].tokenEnd], 0.25);
    assert.equal(
      placed.reduce((a, b) => a + b, 0),
      1.25,
    );
    assert.deepEqual([...sample.mask], t.mask);

    const record = toTrajectoryRecord(t, rewards, { step: 7, tokenizer });
    const checked = parseWith(TrajectoryRecord, JSON.parse(JSON.stringify(record)), 'record');
    assert.deepEqual([...decodeInt32(checked.tokens.ids)], t.ids);
    assert.deepEqual([...decodeUint8(checked.tokens.mask)], t.mask);
    assert.deepEqual(
      [...decodeFloat32(checked.tokens.logprobs)],
      t.logprobs.map((v) => Math.fround(v)),
    );
    assert.equal(checked.turns.map((turn) => turn.text).join(''), tokenizer.decode(t.ids));
    assert.equal(checked.tokens.pieces.join(''), tokenizer.decode(t.ids));
    const assistant = checked.turns[2];
    assert.equal(assistant.text, turn1 + '<|im_end|>');
    assert.deepEqual(assistant.toolCalls, [
      {
        index: 0,
        name: 'search',
        arguments: { query: 'Northwind Labs' },
        raw: '{"name": "search", "arguments": {"query": "Northwind Labs"}}',
        observation: '[1] Northwind Labs: Northwind Labs is a research company headquartered in Veldmark.',
        truncated: false,
        latencyMs: t.calls[0].latencyMs,
        processReward: 0.25,
        rewardComponents: { searched: 0.25 },
        tokenEnd: t.calls[0].tokenEnd,
      },
    ]);
    assert.deepEqual(checked.rewards, {
      outcome: 1,
      process: 0.25,
      total: 1.25,
      components: { exact_match: 1, 'process/searched': 0.25 },
      processScale: 1,
    });
    assert.deepEqual(checked.lengths, {
      prompt: t.promptLength,
      response: t.mask.filter(Boolean).length,
      total: t.ids.length,
    });
    assert.equal(checked.finishReason, 'answered');
    assert.equal(checked.answer, 'Veldmark');
  });

  it("keeps the policy's tokens when Qwen3 drops the empty thinking block of an earlier turn, and records the rewrite", async () => {
    const turn1 = call('calculator', { expression: '6*7' });
    const policy = scripted((_s, turn) => [turn1, 'It is <answer>42</answer>.'][turn]);
    const [row] = rows({ prompt: 'Compute 6*7.' });
    const [t] = await loopWith(policy, { systemPrompt: undefined, templateKwargs: { enable_thinking: false } }).run(
      [{ row, group: 0, sample: 0 }],
      { seed: 1 },
    );
    const promptText = template.render([{ role: 'user', content: 'Compute 6*7.' }], {
      tools: tools.specs(),
      kwargs: { enable_thinking: false },
      addGenerationPrompt: true,
    });
    assert.ok(promptText.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'));
    const appended =
      '\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';
    assert.deepEqual(t.ids, [
      ...tokenizer.encode(promptText),
      ...tokenizer.encode(turn1),
      EOT,
      ...tokenizer.encode(appended),
      ...tokenizer.encode('It is <answer>42</answer>.'),
      EOT,
    ]);
    assert.equal(t.historyRewrites.length, 1);
    // The prompt is one turn (no system message: the tools' system block belongs to it); the assistant turn is turns[1].
    assert.equal(t.historyRewrites[0].afterTurn, 1);
    assert.match(t.historyRewrites[0].before, /<think>\n\n<\/think>\n\n<tool_call>/);
    assert.doesNotMatch(t.historyRewrites[0].after, /<think>/);
    assert.equal(t.finishReason, 'answered');
    const record = toTrajectoryRecord(
      t,
      { outcome: 0, process: 0, total: 0, components: {}, calls: [{ components: {} }] },
      { step: 0, tokenizer },
    );
    assert.deepEqual(record.historyRewrites, t.historyRewrites);
  });

  it('stops at the call end when asked, and appends the end-of-turn token itself as template text', async () => {
    // The model would go on writing after the call; the format's stop token ends the turn there.
    const turn1 = call('calculator', { expression: '2+3' }) + '\nI expect 5.';
    const policy = scripted((_s, turn) => [turn1, '<answer>5</answer>'][turn]);
    const [row] = rows({ prompt: 'Add 2 and 3.' });
    const [t] = await loopWith(policy, { format: new HermesFormat({ stopAtCallEnd: true }) }).run(
      [{ row, group: 0, sample: 0 }],
      { seed: 1 },
    );
    const close = tokenizer.tokenId('</tool_call>');
    assert.deepEqual(policy.calls[0].options.stopTokenIds, [EOT, close]);
    const turn = t.turns[2];
    assert.equal(t.ids[turn.tokenEnd - 1], close);
    assert.equal(turn.finish, 'tool_call');
    assert.equal(t.calls[0].tokenEnd, turn.tokenEnd - 1);
    assert.equal(t.calls[0].observation, '5');
    // Injected: the end-of-turn token right after the stop marker, with mask 0.
    assert.equal(t.ids[turn.tokenEnd], EOT);
    assert.equal(t.mask[turn.tokenEnd], 0);
    assert.equal(t.mask[turn.tokenEnd - 1], 1);
    assert.equal(
      tokenizer.decode(t.ids.slice(turn.tokenEnd)),
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer>5</answer><|im_end|>',
    );
  });

  it('runs fenced code blocks through the code tool (the ReTool-style format)', async () => {
    const codeTools = new ToolSet([new JavaScriptTool()]);
    const turn1 =
      'Let me compute it.\n```javascript\nconst xs = [3, 4, 5];\nprint(xs.map((x) => x * x).reduce((a, b) => a + b))\n```\n```js\nthrow new Error("nope")\n```';
    const policy = scripted((_s, turn) => [turn1, 'The sum is <answer>50</answer>.'][turn]);
    const [row] = rows({ prompt: 'Sum of squares of 3, 4, 5?' });
    const [t] = await new AgentLoop({
      policy,
      template,
      tools: codeTools,
      budget: BUDGET,
      sampling: SAMPLING,
      format: new CodeBlockFormat(),
    }).run([{ row, group: 0, sample: 0 }], { seed: 1 });
    assert.deepEqual(
      t.calls.map((c) => [c.name, c.arguments, c.observation, c.error?.kind]),
      [
        [
          'run_javascript',
          { code: 'const xs = [3, 4, 5];\nprint(xs.map((x) => x * x).reduce((a, b) => a + b))' },
          '50',
          undefined,
        ],
        [
          'run_javascript',
          { code: 'throw new Error("nope")' },
          'Error: run_javascript failed: SandboxError: Error: nope (line 1)',
          'threw',
        ],
      ],
    );
    // The second block's closing fence is the end of the turn text: its reward token is the turn's last before <|im_end|>.
    assert.equal(t.calls[1].tokenEnd, t.turns[t.calls[1].turnIndex].tokenEnd - 2);
    assert.equal(t.finishReason, 'answered');
    assert.deepEqual(t.messages[1], { role: 'assistant', content: turn1 });
  });

  it('rolls out a batch together: one generate call per round, sequences finishing at different turns', async () => {
    const script: Script = (sequence, turn) => {
      if (sequence === 0) return '<answer>direct</answer>';
      if (sequence === 1) return [call('search', { query: 'Veldmark' }), '<answer>Ostria</answer>'][turn];
      return [
        call('calculator', { expression: '1+1' }),
        call('calculator', { expression: '2+2' }),
        '<answer>4</answer>',
      ][turn];
    };
    const policy = scripted(script);
    const batch = rows({ id: 'a', prompt: 'A?' }, { id: 'b', prompt: 'B?' }, { id: 'c', prompt: 'C?' });
    const trajectories = await loopWith(policy).run(
      batch.map((row, i) => ({ row, group: i, sample: 0 })),
      { seed: 3 },
    );
    assert.deepEqual(
      policy.calls.map((c) => c.requests.map((r) => r.sequence)),
      [[0, 1, 2], [1, 2], [2]],
    );
    assert.deepEqual(
      trajectories.map((t) => [
        t.rowId,
        t.finishReason,
        t.calls.length,
        t.turns.filter((x) => x.role === 'assistant').length,
      ]),
      [
        ['a', 'answered', 0, 1],
        ['b', 'answered', 1, 2],
        ['c', 'answered', 2, 3],
      ],
    );
    for (const t of trajectories) assert.deepEqual(policy.contexts.get(t.index), t.ids);
  });

  it('awaits observer hooks in order: turn, before each call, after each call, end', async () => {
    const events: string[] = [];
    let release!: () => void;
    const paused = new Promise<void>((resolve) => (release = resolve));
    const observer: RolloutObserver = {
      turnGenerated: (t, turn) => void events.push(`turn ${t.index}:${turn.index} ${turn.finish}`),
      beforeToolCall: async (t, c) => {
        events.push(`before ${t.index} ${c.name}`);
        setTimeout(() => {
          events.push('released');
          release();
        }, 20);
        await paused; // a debugger holding the call
      },
      toolCallFinished: (t, c) => void events.push(`after ${t.index} ${c.name} ${c.observation}`),
      trajectoryFinished: (t) => void events.push(`end ${t.index} ${t.finishReason}`),
    };
    const [row] = rows({ prompt: 'x' });
    await loopWith(
      scripted((_s, turn) => [call('calculator', { expression: '3*3' }), 'done'][turn]),
      { observer },
    ).run([{ row, group: 0, sample: 0 }], { seed: 1 });
    assert.deepEqual(events, [
      'turn 0:2 tool_call',
      'before 0 calculator',
      'released',
      'after 0 calculator 9',
      'turn 0:4 eos',
      'end 0 answered',
    ]);
  });

  it("splits a messages row's prompt into its turns, an earlier assistant turn included", async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'What is 2+2?' },
    ];
    const [row] = rows({ messages });
    const [t] = await loopWith(
      scripted(() => '<answer>4</answer>'),
      { systemPrompt: 'ignored when the row has one' },
    ).run([{ row, group: 0, sample: 0 }], { seed: 1 });
    assert.deepEqual(
      t.turns.map((turn) => turn.role),
      ['system', 'user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(t.prompt, 'What is 2+2?');
    assert.equal(t.messages[0].content, 'Be brief.');
    assert.ok(t.turns.every((turn, i) => i === 0 || turn.tokenStart === t.turns[i - 1].tokenEnd));
    assert.equal(t.turns.at(-1)!.tokenEnd, t.ids.length);
  });

  it('refuses a row far past the budget by its size, before rendering or tokenising it', () => {
    // 20 MB of text: tokenising it would take the tokeniser's time and memory (a row of ~15 MB
    // once ended the process out of memory); its size alone says it cannot fit.
    const huge = 'x'.repeat(20_000_000);
    const loop = loopWith(
      scripted(() => 'x'),
      { budget: { ...BUDGET, maxTotalTokens: 500, maxNewTokensPerTurn: 100 } },
    );
    assert.throws(
      () => loop.checkRows(rows({ id: 'huge', prompt: huge })),
      /test\.jsonl:1 \(row huge\): the prompt is at least \d+ tokens \(20000000 bytes of text\); with budget\.maxNewTokensPerTurn 100 it needs more than budget\.maxTotalTokens 500/,
    );
  });

  it('refuses rows whose prompt leaves no room for a turn, naming them, before generating', async () => {
    const policy = scripted(() => 'x');
    const long = 'word '.repeat(400);
    const batch = rows({ id: 'ok', prompt: 'short' }, { id: 'long', prompt: long });
    const loop = loopWith(policy, { budget: { ...BUDGET, maxTotalTokens: 500, maxNewTokensPerTurn: 100 } });
    assert.throws(
      () => loop.checkRows(batch),
      /1 dataset row\(s\) do not fit the rollout:\n {2}test\.jsonl:2 \(row long\): the prompt is \d+ tokens; with budget\.maxNewTokensPerTurn 100 it needs \d+ tokens, more than budget\.maxTotalTokens 500/,
    );
    await assert.rejects(
      loop.run(
        batch.map((row) => ({ row, group: 0, sample: 0 })),
        { seed: 1 },
      ),
      /test\.jsonl:2 \(row long\): the prompt is/,
    );
    assert.equal(policy.sessions, 0);
  });

  it('keeps trajectories typed by their rows', async () => {
    const typed = datasetFromRows('typed', [{ prompt: 'q', answer: 'a' }], {
      fields: z.object({ answer: z.string() }),
    }).rows;
    const out: Trajectory<(typeof typed)[number]>[] = await loopWith(scripted(() => 'a')).run(
      typed.map((row) => ({ row, group: 0, sample: 0 })),
      { seed: 1 },
    );
    assert.equal(out[0].row.answer, 'a');
  });
});
