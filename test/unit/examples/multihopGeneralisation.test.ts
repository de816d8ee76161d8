/**
 * The multi-hop example's generalisation split (bench:rl's arms): the held-out question type is in
 * no training prompt or demonstration, the in-distribution set is about people no training
 * question is about, and the new world really is another world that MultiWorldSearch serves.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { contentText } from '#trainer/contract/protocol/chatMessages';
import { observationText, type ToolContext } from '#trainer/foundations/tools';
import { buildKnowledgeBase, KB_OPTIONS, queryFor, type Relation } from '../../../examples/multihop-search/kb';
import {
  DEFAULTS,
  generateGeneralisationSplit,
  generateQuestions,
  HELD_OUT_TYPE,
  QUESTION_TEMPLATES,
} from '../../../examples/multihop-search/data';
import { MultihopFields } from '../../../examples/multihop-search/rows';
import { knowledgeBase, MultiWorldSearch } from '../../../examples/multihop-search/tools';

const split = generateGeneralisationSplit({
  seed: DEFAULTS.seed,
  sft: 120,
  short: DEFAULTS.short,
  newWorldQuestions: 30,
});
// The held-out template's words before the person's name.
const heldOutText = QUESTION_TEMPLATES.find((t) => t.type === HELD_OUT_TYPE)!
  .text('\u0000')
  .split('\u0000')[0];
const person = (q: { neededDocs: string[] }) => q.neededDocs[0].split('/')[0];

describe('the generalisation split', () => {
  it('keeps the held-out type out of every training prompt and demonstration, and trains each of its searches', () => {
    assert.equal(heldOutText, 'In which country was ');
    assert.equal(split.train.length, 15 * 5);
    assert.ok(split.train.every((q) => q.type !== HELD_OUT_TYPE && !q.prompt.startsWith(heldOutText)));
    // Its two searches (a person's home, a city's country) are each some training question's.
    const relations = (q: { neededDocs: string[] }) => q.neededDocs.map((d) => d.split('/')[1]);
    const trained = new Set(split.train.flatMap(relations));
    assert.deepEqual(relations(split.sets.new_type[0]), ['home', 'country']);
    assert.ok(trained.has('home') && trained.has('country'));
    const asked = (messages: (typeof split.sft)[number]['messages']) =>
      contentText(messages.find((m) => m.role === 'user')!.content);
    assert.equal(split.sft.length, 120);
    assert.ok(
      split.sft.every((d) => !asked(d.messages).startsWith(heldOutText)),
      'no imperfect demonstration asks it',
    );
    assert.ok(
      split.sft.some((d) => d.kind === 'short') && split.sft.some((d) => d.kind === 'correct'),
      'the warm start stays imperfect',
    );
    assert.deepEqual(
      split.gold.map((d) => d.questionId),
      split.train.map((q) => q.id),
      'one correct demonstration per training question',
    );
    assert.ok(split.gold.every((d) => d.kind === 'correct' && !asked(d.messages).startsWith(heldOutText)));
    assert.equal(split.sets.new_type.length, 20);
    assert.ok(split.sets.new_type.every((q) => q.type === HELD_OUT_TYPE && q.hops === 2 && q.world === undefined));
  });

  it('asks the in-distribution set about people no training question is about, in the training types', () => {
    const trained = new Set(split.train.map(person));
    assert.equal(split.sets.in_dist.length, 5 * 5);
    assert.ok(
      split.sets.in_dist.every((q) => !trained.has(person(q)) && q.type !== HELD_OUT_TYPE && q.world === undefined),
    );
  });

  it("draws the new world afresh: none of its answers is the training world's, and its rows parse with their world", () => {
    const rows = split.sets.new_world;
    assert.equal(rows.length, 30);
    const world = rows[0].world!;
    assert.ok(Number.isInteger(world) && rows.every((q) => q.world === world && q.type !== HELD_OUT_TYPE));
    const trainingWorld = new Map(
      generateQuestions(knowledgeBase, knowledgeBase.people, { seed: 1, count: 120, prefix: 'x' }).map((q) => [
        q.prompt,
        q.answer,
      ]),
    );
    const differ = rows.filter((q) => trainingWorld.get(q.prompt) !== q.answer).length;
    assert.equal(differ, rows.length, "no new-world answer is the training world's: memory cannot pass");
    assert.equal(MultihopFields.parse(rows[0]).world, world, 'the row schema keeps the world');
  });

  it("MultiWorldSearch serves a row's world, and the default world to a row without one", () => {
    const tool = new MultiWorldSearch();
    const context = (row: object) => ({ row }) as unknown as ToolContext;
    const newWorld = buildKnowledgeBase({ ...KB_OPTIONS, relationSeed: split.sets.new_world[0].world });
    let differs = 0;
    for (const q of split.sets.new_world) {
      // The first search of the question's chain, as a correct demonstration makes it.
      const [id, relation] = q.neededDocs[0].split('/') as [string, Relation];
      const query = queryFor(relation, newWorld.byId.get(id)!.name);
      const theirs = tool.execute({ query }, context(q));
      assert.equal(theirs.data!.documentIds[0], q.neededDocs[0], `${q.id}: finds its own fact first`);
      assert.equal(
        observationText(theirs),
        newWorld.documents.find((d) => d.id === q.neededDocs[0])!.text,
        `${q.id}: the new world's sentence`,
      );
      const ours = tool.execute({ query }, context({ ...q, world: undefined }));
      assert.equal(
        observationText(ours),
        knowledgeBase.documents.find((d) => d.id === q.neededDocs[0])!.text,
        `${q.id}: without a world, the training world's`,
      );
      if (observationText(theirs) !== observationText(ours)) differs++;
    }
    assert.ok(differs > split.sets.new_world.length / 2, `only ${differs} first facts differ between the worlds`);
  });
});
