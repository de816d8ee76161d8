/**
 * examples/deep-search: the world split over two tools with distractors, questions whose chains
 * the tools really answer, demonstrations that say what the tools return, and process rewards that
 * credit each new needed fact once.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { datasetFromRows, loadJsonlDataset } from '#trainer/foundations/data';
import { scoreTrajectories } from '#trainer/pipeline/rewards';
import { AgentLoop } from '#trainer/pipeline/rollout';
import { ToolSet } from '#trainer/foundations/tools';
import {
  DEFAULTS,
  generateDataset,
  generateQuestions,
  generateWorldDemonstrations,
  QUESTION_TEMPLATES,
  splitPeople,
  type QuestionRow,
} from '../../../examples/deep-search/data';
import { rewards } from '../../../examples/deep-search/rewards';
import { DeepSearchFields } from '../../../examples/deep-search/rows';
import { atlas, search, tools, world } from '../../../examples/deep-search/tools';
import { ATLAS_RELATIONS, DEEP_KB_OPTIONS, deepAnswer, deepQuery } from '../../../examples/deep-search/world';
import { qwen3, ScriptedPolicy } from '../../helpers/scriptedPolicy';

const text = (result: { content: readonly { type: string; text?: string }[] }) =>
  result.content.map((c) => c.text ?? '').join('\n');
const run = (tool: typeof search | typeof atlas, query: string) =>
  text(tool.execute({ query }, undefined as never) as never);

/** The hop a needed fact's id stands for. */
const hopOf = (id: string) => ({
  entity: id.slice(0, id.lastIndexOf('/')),
  relation: id.slice(id.lastIndexOf('/') + 1) as (typeof QUESTION_TEMPLATES)[number]['relations'][number],
});
const nameOf = (id: string) => world.kb.byId.get(id)!.name;

describe('examples/deep-search', () => {
  it('serves people and organisations from search, with a distractor beside each home, company and owner, and places only from atlas', () => {
    const ids = new Set(world.searchDocuments.map((d) => d.id));
    assert.ok(
      world.searchDocuments.every((d) => !ATLAS_RELATIONS.some((r) => d.id.endsWith(`/${r}`))),
      'no place in search',
    );
    assert.equal(world.atlasDocuments.length, DEEP_KB_OPTIONS.organisations + DEEP_KB_OPTIONS.cities);
    for (const d of world.searchDocuments.filter((d) => /\/(home|company|owner)$/.test(d.id)))
      assert.ok(ids.has(`${d.id}/old`), `${d.id} has a distractor`);
    const mark = world.kb.people[0];
    const lines = run(search, deepQuery('company', mark.name)).split('\n');
    assert.deepEqual(
      lines.sort(),
      [`The company of ${mark.name} is ${nameOf(mark.organisation)}.`, expect.distractorOf(mark.id, 'company')].sort(),
    );
    // The answer's line is first for some queries and second for others.
    const firstIsFact = world.kb.people.map((p) => run(search, deepQuery('company', p.name)).startsWith('The company'));
    assert.ok(firstIsFact.includes(true) && firstIsFact.includes(false));
    const org = world.kb.organisations[0];
    assert.equal(run(atlas, `location of ${org.name}`), `The location of ${org.name} is ${nameOf(org.city)}.`);
    assert.equal(
      run(atlas, `  Location  of ${org.name} `),
      `The location of ${org.name} is ${nameOf(org.city)}.`,
      'case and spacing do not matter',
    );
    assert.equal(run(atlas, `company of ${mark.name}`), 'The atlas knows nothing about that.');
  });

  it('asks questions of two to four facts whose chains the tools answer, about people held out of training', () => {
    const people = splitPeople(world.kb, 1);
    const train = generateQuestions(world.kb, people.train, { seed: 2, prefix: 'train' });
    const heldout = generateQuestions(world.kb, people.heldout, { seed: 3, prefix: 'heldout' });
    assert.equal(train.length, people.train.length * QUESTION_TEMPLATES.length);
    assert.deepEqual([...new Set(train.map((q) => q.hops))].sort(), [2, 3, 4]);
    const starts = (qs: QuestionRow[]) => new Set(qs.map((q) => q.prompt.slice(q.prompt.lastIndexOf(' ') + 1, -1)));
    for (const name of starts(heldout)) assert.ok(!starts(train).has(name), `${name} is in both`);
    for (const q of [...train, ...heldout]) {
      // Follow the chain through the tools: each result's fact line ends with the next name.
      let name = q.prompt.slice(q.prompt.lastIndexOf(' ') + 1, -1);
      for (const id of q.neededDocs) {
        const { relation } = hopOf(id);
        const result = run(ATLAS_RELATIONS.includes(relation) ? atlas : search, deepQuery(relation, name));
        const fact = result.split('\n').find((l) => l.startsWith(`The ${relation} of ${name} is `));
        assert.ok(fact, `${q.id}: ${deepQuery(relation, name)} → ${result}`);
        name = fact.slice(fact.lastIndexOf(' ') + 1, -1);
      }
      assert.equal(name, q.answer, q.id);
    }
  });

  it("demonstrates with what the tools of each demonstration's world return, in the configured mix of mistakes", () => {
    const demos = generateWorldDemonstrations(400, { seed: 9, mix: DEFAULTS.mix });
    const share = (kind: string) => demos.filter((d) => d.kind === kind).length / demos.length;
    assert.ok(Math.abs(share('skip') - 0.3) < 0.07, `skip ${share('skip')}`);
    assert.ok(
      share('correct') > 0.2 && share('distracted') > 0.08 && share('wrongtool') > 0.03 && share('botch') > 0.08,
    );
    for (const d of demos.filter((d) => d.kind === 'skip'))
      assert.equal(d.messages.length, 3, 'a skip answers at once');
    const wrongTool = demos.find((d) => d.kind === 'wrongtool')!;
    const calls = wrongTool.messages.flatMap(
      (m) => (m.tool_calls ?? []) as { function: { name: string; arguments: { query: string } } }[],
    );
    assert.ok(
      calls.every((c) => c.function.name === 'search') &&
        calls.some((c) => /^(location|country) of /.test(c.function.arguments.query)),
    );
  });

  it("writes the datasets: the rows check against the example's fields and gold demonstrations answer every training question", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deep-search-'));
    try {
      const written = generateDataset({ ...DEFAULTS, out: dir, sft: 20 });
      assert.deepEqual(Object.fromEntries(Object.entries(written).map(([k, v]) => [k, v.rows])), {
        train: 120,
        heldout: 40,
        sft: 20,
        gold: 120,
      });
      const train = loadJsonlDataset(written.train.file, { fields: DeepSearchFields }).rows;
      const gold = fs
        .readFileSync(written.gold.file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      gold.forEach((g, i) => assert.equal(g.messages.at(-1).content, deepAnswer(train[i].answer as string), g.id));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('credits each call that brings up a new needed fact, once, from either tool', async () => {
    const { tokenizer, template } = qwen3();
    const [row] = datasetFromRows(
      'rows',
      generateQuestions(world.kb, world.kb.people, { seed: 1, prefix: 'q' })
        .filter((q) => q.type === 'owner_home_country')
        .slice(0, 1),
      { fields: DeepSearchFields },
    ).rows;
    const hops = row.neededDocs.map(hopOf);
    const call = (tool: string, query: string) =>
      `<tool_call>\n{"name": "${tool}", "arguments": {"query": "${query}"}}\n</tool_call>`;
    const queries = hops.map(
      (h) =>
        [ATLAS_RELATIONS.includes(h.relation) ? 'atlas' : 'search', deepQuery(h.relation, nameOf(h.entity))] as const,
    );
    // The first fact twice (the repeat earns nothing), then the rest of the chain, then the answer.
    const turns = [
      call(...queries[0]),
      call(...queries[0]),
      ...queries.slice(1).map((q) => call(...q)),
      deepAnswer(row.answer as string),
    ];
    const toolSet = new ToolSet(tools);
    const loop = new AgentLoop({
      policy: new ScriptedPolicy(tokenizer, (_s, turn) => turns[turn], template.endOfTurnId),
      template,
      tools: toolSet,
      budget: { maxTurns: 6, maxNewTokensPerTurn: 64, maxTotalTokens: 4096, maxToolResultTokens: 200 },
      sampling: { temperature: 1, topK: 0, topP: 1 },
    });
    const [t] = await loop.run([{ row, group: 0, sample: 0 }], { seed: 1 });
    const scored = (await scoreTrajectories([t], rewards, toolSet)).trajectories[0];
    assert.equal(scored.components['exact_match'], 1);
    assert.deepEqual(
      scored.calls.map((c) => c.components['tool:search'] ?? c.components['tool:atlas']),
      [1, 0, 1, 1, 1],
    );
  });
});

const expect = {
  distractorOf(entity: string, relation: string): string {
    return world.searchDocuments.find((d) => d.id === `${entity}/${relation}/old`)!.text;
  },
};
