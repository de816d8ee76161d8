import { describe, it, before } from 'node:test';
import * as assert from 'node:assert/strict';
import { contentText } from '#trainer/contract/protocol/chatMessages';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadJsonlDataset } from '#trainer/foundations/data';
import { AgentLoop, HermesFormat, tokenizeDemonstration } from '#trainer/pipeline/rollout';
import { scoreTrajectories } from '#trainer/pipeline/rewards';
import { tokenRewards } from '#trainer/pipeline/rl/samples';
import { Tool, ToolSet } from '#trainer/foundations/tools';
import {
  buildKnowledgeBase,
  KB_OPTIONS,
  queryFor,
  RELATIONS,
  type Relation,
} from '../../../examples/multihop-search/kb';
import {
  answerReply,
  generateDataset,
  generateDemonstrations,
  generateQuestions,
  generateWorldDemonstrations,
  QUESTION_TEMPLATES,
  splitPeople,
  type QuestionRow,
} from '../../../examples/multihop-search/data';
import { MultihopFields, type MultihopRow } from '../../../examples/multihop-search/rows';
import { rewards } from '../../../examples/multihop-search/rewards';
import { KnowledgeBaseSearch, knowledgeBase, search, searchOver, tools } from '../../../examples/multihop-search/tools';
import { BASE_RECIPE } from '#trainer/bases/recipes/recipe';
import { qwen3TokenizerDir } from '#trainer/bases/recipes/tokenizerSource';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { rolloutMultihopExample } from '../../helpers/multihopRollout';
import { qwen3, ScriptedPolicy } from '../../helpers/scriptedPolicy';
import { loadTools } from '#trainer/bridges/usercode/loadTools';

const EXAMPLE = path.resolve(__dirname, '../../../examples/multihop-search');

describe('examples/multihop-search', () => {
  it('generates the same knowledge base from the same seed, with unique names', () => {
    const again = buildKnowledgeBase(KB_OPTIONS);
    assert.deepEqual(again.documents, knowledgeBase.documents);
    const names = [...knowledgeBase.byId.values()].map((e) => e.name.toLowerCase());
    assert.equal(new Set(names).size, names.length);
    // One document per fact: three per person and organisation, one per city.
    assert.equal(
      knowledgeBase.documents.length,
      3 * KB_OPTIONS.people + 3 * KB_OPTIONS.organisations + KB_OPTIONS.cities,
    );
    assert.notDeepEqual(buildKnowledgeBase({ ...KB_OPTIONS, seed: 7 }).documents, knowledgeBase.documents);
    // Another relation seed: the same cast of names, related differently.
    const world = buildKnowledgeBase({ ...KB_OPTIONS, relationSeed: 7 });
    assert.deepEqual(
      [...world.byId.values()].map((e) => e.name),
      [...knowledgeBase.byId.values()].map((e) => e.name),
    );
    assert.notDeepEqual(
      world.documents.map((d) => d.text),
      knowledgeBase.documents.map((d) => d.text),
    );
  });

  it("names entities as ordinary names of several words, which the base model's tokenizer splits into several tokens", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'multihop-tokenizer-'));
    try {
      truncateBpeTokenizer(qwen3TokenizerDir(), BASE_RECIPE.tokenizer.merges, dir);
      const tokenizer = Tokenizer.load(dir);
      const names = [...knowledgeBase.byId.values()].map((e) => e.name);
      const multiToken = names.filter((name) => tokenizer.encode(` ${name}`).length > 1);
      assert.ok(
        multiToken.length > names.length * 0.9,
        `${multiToken.length} of ${names.length} names are several tokens`,
      );
      assert.ok(
        knowledgeBase.people.every((p) => p.name.includes(' ')),
        'people have a first and a last name',
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes every question answerable by searching the names along its chain, each found first', () => {
    const all = generateQuestions(knowledgeBase, knowledgeBase.people, {
      seed: 1,
      count: knowledgeBase.people.length * QUESTION_TEMPLATES.length,
      prefix: 'all',
    });
    const hops = new Map<number, number>();
    for (const question of all) {
      const [first] = question.neededDocs.map(hopOf);
      assert.ok(
        question.prompt.includes(knowledgeBase.byId.get(first.entity)!.name),
        `the question names its person: ${question.prompt}`,
      );
      question.neededDocs.forEach((id, k) => {
        const { entity, relation } = hopOf(id);
        const query = queryFor(relation, knowledgeBase.byId.get(entity)!.name);
        const [hit] = search.search(query);
        assert.equal(hit.id, id, `searching "${query}" finds its own fact first`);
        // What the search returns names the next entity to look up, or the answer.
        const next = question.neededDocs[k + 1];
        const wanted = next ? knowledgeBase.byId.get(hopOf(next).entity)!.name : question.answer;
        assert.ok(search.format([hit]).includes(wanted), `${id} leads on to ${wanted}`);
      });
      hops.set(question.hops, (hops.get(question.hops) ?? 0) + 1);
    }
    assert.deepEqual([...hops.keys()].sort(), [1, 2, 3]);
  });

  it('holds out whole people, and writes datasets the loader accepts', () => {
    const { train, heldout } = splitPeople(knowledgeBase, 1);
    assert.equal(train.length + heldout.length, knowledgeBase.people.length);
    assert.equal(new Set([...train, ...heldout].map((p) => p.id)).size, knowledgeBase.people.length);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'multihop-'));
    try {
      // More demonstrations than training questions: they cycle through the questions.
      const written = generateDataset({ out: dir, seed: 1, train: 60, heldout: 20, sft: 300, short: 0.4 });
      assert.deepEqual(Object.fromEntries(Object.entries(written).map(([k, v]) => [k, v.rows])), {
        corpus: 100,
        train: 60,
        heldout: 20,
        sft: 300,
      });
      const trainRows = loadJsonlDataset(written.train.file, { fields: MultihopFields }).rows;
      const heldoutRows = loadJsonlDataset(written.heldout.file, { fields: MultihopFields }).rows;
      const people = (rows: MultihopRow[]) => new Set(rows.map((r) => hopOf(r.neededDocs[0]).entity));
      const overlap = [...people(trainRows)].filter((p) => people(heldoutRows).has(p));
      assert.deepEqual(overlap, []);
      assert.equal(trainRows[0].messages[0].role, 'system');
      // Same seed, same files.
      const again = fs.mkdtempSync(path.join(os.tmpdir(), 'multihop-'));
      generateDataset({ out: again, seed: 1, train: 60, heldout: 20, sft: 300, short: 0.4 });
      for (const name of ['train', 'heldout', 'sft'])
        assert.equal(
          fs.readFileSync(path.join(again, `${name}.jsonl`), 'utf8'),
          fs.readFileSync(path.join(dir, `${name}.jsonl`), 'utf8'),
        );
      fs.rmSync(again, { recursive: true });
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  describe('with the real Qwen3 template and the agent loop', () => {
    let questions: QuestionRow[];
    before(() => {
      questions = generateQuestions(knowledgeBase, splitPeople(knowledgeBase, 1).train, {
        seed: 2,
        count: 90,
        prefix: 'train',
      });
    });

    it('writes demonstrations that render through the chat template, stopping one search early in the asked proportion', () => {
      const { template } = qwen3();
      const demos = generateDemonstrations(knowledgeBase, questions, { seed: 3, short: 0.4 });
      const counts = { correct: 0, short: 0 };
      const hermes = new HermesFormat();
      demos.forEach((demo, i) => {
        counts[demo.kind]++;
        const question = questions[i];
        const text = template.render(demo.messages, { tools: new ToolSet(tools).specs() });
        // The calls the template writes are calls our parser reads back, with the demo's queries.
        const written = demo.messages
          .filter((m) => m.role === 'assistant' && m.tool_calls)
          .map((m) => (m.role === 'assistant' ? m.tool_calls![0].function.arguments : null));
        const assistantTurns = text
          .split('<|im_start|>assistant\n')
          .slice(1)
          .map((turn) => turn.slice(0, turn.indexOf('<|im_end|>')));
        const parsed = assistantTurns.flatMap((turn) => hermes.parse(turn)).map((c) => c.arguments);
        assert.deepEqual(parsed, written);
        const final = contentText(demo.messages.at(-1)!.content);
        const answered = /<answer>(.*)<\/answer>/.exec(final)![1];
        assert.equal(final, answerReply(answered));
        if (demo.kind === 'correct') {
          assert.equal(answered, question.answer);
          assert.equal(written.length, question.hops);
        } else {
          // One search fewer than the chain needs, every query the correct demonstration's own.
          assert.notEqual(answered, question.answer);
          assert.equal(written.length, question.hops - 1);
          const full = generateDemonstrations(knowledgeBase, [question], { seed: 3, short: 0 })[0];
          const fullQueries = full.messages
            .filter((m) => m.role === 'assistant' && m.tool_calls)
            .map((m) => (m.role === 'assistant' ? m.tool_calls![0].function.arguments : null));
          assert.deepEqual(written, fullQueries.slice(0, -1));
          // A chain stopped early answers with the entity its last search found: the last result names it.
          if (written.length > 0)
            assert.ok(
              contentText(demo.messages.at(-2)!.content).includes(answered),
              `${answered} is in the last result`,
            );
        }
      });
      assert.ok(Math.abs(counts.short / demos.length - 0.4) < 0.1, JSON.stringify(counts));
    });

    it('tokenizes demonstrations exactly as the loop lays out a rollout that writes the same turns', async () => {
      const { tokenizer, template } = qwen3();
      const toolSet = new ToolSet(tools);
      const demos = generateDemonstrations(knowledgeBase, questions, { seed: 3, short: 0 });
      for (const kwargs of [undefined, { enable_thinking: false }]) {
        for (const hops of [1, 2, 3]) {
          const i = questions.findIndex((q) => q.hops === hops);
          const demo = tokenizeDemonstration(template, demos[i].messages, {
            tools: toolSet.specs(),
            ...(kwargs ? { kwargs } : {}),
          });
          // The assistant turns as the policy would have written them: the mask-1 runs, without their end-of-turn token.
          const turns: string[] = [];
          for (let t = 0; t < demo.ids.length; t++) {
            if (!demo.mask[t] || demo.mask[t - 1]) continue;
            let e = t;
            while (demo.mask[e]) e++;
            turns.push(tokenizer.decode(demo.ids.slice(t, e - 1)));
          }
          assert.equal(turns.length, hops + 1);
          const policy = new ScriptedPolicy(tokenizer, (_s, turn) => turns[turn], template.endOfTurnId);
          const loop = new AgentLoop({
            policy,
            template,
            tools: toolSet,
            budget: { maxTurns: 5, maxNewTokensPerTurn: 64, maxTotalTokens: 2048, maxToolResultTokens: 200 },
            sampling: { temperature: 1, topK: 0, topP: 1 },
            ...(kwargs ? { templateKwargs: kwargs } : {}),
          });
          const [t] = await loop.run([{ row: loadRows([questions[i]])[0], group: 0, sample: 0 }], { seed: 1 });
          assert.deepEqual(t.ids, demo.ids, `${hops} hops, ${kwargs ? 'thinking off' : 'thinking on'}`);
          assert.deepEqual(t.mask, [...demo.mask]);
          if (kwargs)
            assert.equal(
              t.historyRewrites.length,
              hops,
              'Qwen3 rewrote history after every call turn; both kept the tokens',
            );
        }
      }
      assert.throws(
        () => tokenizeDemonstration(template, demos[0].messages.slice(0, -1), { origin: 'sft.jsonl:1' }),
        /sft\.jsonl:1: the last message must be the assistant's/,
      );
    });

    it('rolls out a demonstrated search path to exact match 1 with one process reward per newly found document', async () => {
      const { tokenizer, template } = qwen3();
      const question = questions.find((q) => q.hops === 3)!;
      const queries = question.neededDocs
        .map(hopOf)
        .map((h) => queryFor(h.relation, knowledgeBase.byId.get(h.entity)!.name));
      const call = (query: string) =>
        `<tool_call>\n{"name": "search", "arguments": {"query": "${query}"}}\n</tool_call>`;
      // Searches the first fact twice (the repeat earns nothing), then follows the chain.
      const turns = [
        call(queries[0]),
        call(queries[0]),
        call(queries[1]),
        call(queries[2]),
        answerReply(question.answer),
      ];
      const policy = new ScriptedPolicy(tokenizer, (_s, turn) => turns[turn], template.endOfTurnId);
      const toolSet = new ToolSet(tools);
      const loop = new AgentLoop({
        policy,
        template,
        tools: toolSet,
        budget: { maxTurns: 6, maxNewTokensPerTurn: 64, maxTotalTokens: 2048, maxToolResultTokens: 200 },
        sampling: { temperature: 1, topK: 0, topP: 1 },
      });
      const rows = loadRows([question]);
      loop.checkRows(rows);
      const [t] = await loop.run([{ row: rows[0], group: 0, sample: 0 }], { seed: 1 });
      assert.equal(t.finishReason, 'answered');
      const scored = (await scoreTrajectories([t], rewards, toolSet)).trajectories[0];
      assert.equal(scored.components['exact_match'], 1);
      assert.deepEqual(
        scored.calls.map((c) => c.components['tool:search']),
        [1, 0, 1, 1],
      );
      assert.ok(Math.abs(scored.total - (1 + 0.3)) < 1e-12);
    });
  });

  it('runs through the integration hook: groups of samples, scored, recorded and placed', async () => {
    const { tokenizer, template } = qwen3();
    // Sample 0 of each group follows the chain; sample 1 guesses without searching.
    const seed = 4;
    const questions = generateQuestions(knowledgeBase, splitPeople(knowledgeBase, seed).heldout, {
      seed,
      count: 3,
      prefix: 'heldout',
    });
    const policy = new ScriptedPolicy(
      tokenizer,
      (sequence, turn) => {
        const question = questions[sequence >> 1];
        if (sequence % 2 === 1) return '<answer>Nowhere</answer>';
        const queries = question.neededDocs
          .map(hopOf)
          .map((h) => queryFor(h.relation, knowledgeBase.byId.get(h.entity)!.name));
        return turn < queries.length
          ? `<tool_call>\n{"name": "search", "arguments": {"query": "${queries[turn]}"}}\n</tool_call>`
          : `<answer>${question.answer}</answer>`;
      },
      template.endOfTurnId,
    );
    const run = await rolloutMultihopExample(policy, {
      template,
      questions: 3,
      groupSize: 2,
      seed,
      budget: { maxTurns: 4, maxNewTokensPerTurn: 48, maxTotalTokens: 1024, maxToolResultTokens: 160 },
    });
    assert.deepEqual(
      run.rows.map((r) => r.messages.at(-1)!.content),
      questions.map((q) => q.prompt),
    );
    assert.deepEqual(
      run.records.map((r) => [r.group, r.sample, r.rewards.components['exact_match']]),
      [
        [0, 0, 1],
        [0, 1, 0],
        [1, 0, 1],
        [1, 1, 0],
        [2, 0, 1],
        [2, 1, 0],
      ],
    );
    run.trajectories.forEach((_t, i) => {
      const calls = run.rewards.trajectories[i].calls;
      assert.equal(calls.length, i % 2 ? 0 : run.rows[i >> 1].hops);
      assert.ok(
        calls.every((c) => c.components['tool:search'] === 1),
        'each search of the chain finds a new needed document',
      );
      assert.ok(
        Math.abs(tokenRewards(run.samples[i]).reduce((a, b) => a + b, 0) - run.rewards.trajectories[i].total) < 1e-12,
      );
    });
  });

  it("draws each task demonstration from a world of its own, with what that world's search returns", () => {
    const demos = generateWorldDemonstrations(40, { seed: 5, short: 0 });
    assert.equal(new Set(demos.map((d) => d.messages[1].content)).size > 30, true, 'questions vary');
    let differ = 0;
    for (const demo of demos) {
      const calls = demo.messages.flatMap((m) =>
        m.role === 'assistant' && m.tool_calls
          ? [String((m.tool_calls[0].function.arguments as { query: string }).query)]
          : [],
      );
      const results = demo.messages.filter((m) => m.role === 'tool').map((m) => contentText(m.content));
      assert.equal(calls.length, results.length);
      assert.ok(calls.length >= 1 && calls.length <= 3);
      // Each result names what the next query (or the answer) is about.
      results.forEach((result, k) => {
        const next =
          k + 1 < calls.length
            ? calls[k + 1]
            : /<answer>(.*)<\/answer>/.exec(contentText(demo.messages.at(-1)!.content))![1];
        const names = [...knowledgeBase.byId.values()].map((e) => e.name).filter((n) => next.includes(n));
        assert.ok(names.some((n) => result.includes(n)) || /^\d+$/.test(next), `${result} → ${next}`);
      });
      // The world is not the one RL trains in: the real knowledge base's search answers the same query otherwise (for most).
      if (search.format(search.search(calls[0])) !== results[0]) differ++;
    }
    assert.ok(differ > 30, `${differ} of 40 first results differ from the real world's`);
    // searchOver serves any world the same way the example's tool does.
    assert.equal(
      searchOver(knowledgeBase).format(searchOver(knowledgeBase).search('who does Maria Okafor work for')),
      search.format(search.search('who does Maria Okafor work for')),
    );
  });

  it("loads its tools through the trainer's loader, as a user's workspace would", async () => {
    const loaded = await loadTools(path.join(EXAMPLE, 'tools.ts'));
    assert.equal(loaded.length, 1);
    assert.ok(loaded[0] instanceof Tool);
    assert.equal(loaded[0].constructor.name, 'KnowledgeBaseSearch');
    assert.ok(!(loaded[0] instanceof KnowledgeBaseSearch), "a fresh compile: its own class, the trainer's Tool");
    assert.equal(loaded[0].name, 'search');
  });
});

function loadRows(questions: QuestionRow[]): MultihopRow[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'multihop-rows-'));
  try {
    const file = path.join(dir, 'q.jsonl');
    fs.writeFileSync(file, questions.map((q) => JSON.stringify(q)).join('\n'));
    return loadJsonlDataset(file, { fields: MultihopFields }).rows;
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
}

/** A needed document's id as the entity and the relation it states: `person-3/company`. */
function hopOf(id: string): { entity: string; relation: Relation } {
  const cut = id.lastIndexOf('/');
  const relation = id.slice(cut + 1) as Relation;
  assert.ok(cut > 0 && RELATIONS.includes(relation), `a fact id: ${id}`);
  return { entity: id.slice(0, cut), relation };
}
