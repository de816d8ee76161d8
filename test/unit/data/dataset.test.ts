import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { datasetFromRows, DatasetError, describeRow, loadJsonlDataset, writeJsonl } from '#trainer/foundations/data';

describe('JSONL datasets', () => {
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dataset-test-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, lines: (string | object)[]) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
    return p;
  };
  const Fields = z.object({ answer: z.string(), hops: z.int().min(1).max(3) });

  it('reads prompt rows and message rows into one shape, typed by the fields schema', () => {
    const p = file('train.jsonl', [
      { id: 'q1', prompt: 'Where?', system: 'Be brief.', answer: 'Veldmark', hops: 2, note: 'kept' },
      '',
      {
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: 'Who?' },
        ],
        answer: 'Ada',
        hops: 1,
        toolArgs: { search: { shard: 2 } },
      },
    ]);
    const dataset = loadJsonlDataset(p, { fields: Fields });
    assert.equal(dataset.origin, p);
    const [a, b] = dataset.rows;
    assert.deepEqual(a, {
      id: 'q1',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Where?' },
      ],
      toolArgs: {},
      answer: 'Veldmark',
      hops: 2,
      note: 'kept',
      source: { file: p, line: 1 },
    });
    assert.equal(b.id, 'train.jsonl:3');
    assert.equal(b.messages.length, 3);
    assert.deepEqual(b.toolArgs, { search: { shard: 2 } });
    const typed: string = b.answer;
    assert.equal(typed, 'Ada');
    assert.equal(describeRow(a), `${p}:1 (row q1)`);
    assert.equal(describeRow(b), `${p}:3`);
  });

  it('names the file, the line and the field of every problem', () => {
    const cases: [object | string, RegExp][] = [
      [{ prompt: 'x', answer: 3, hops: 1 }, /bad\.jsonl:1: answer: Invalid input: expected string, received number$/],
      [{ prompt: 'x', answer: 'a', hops: 5 }, /bad\.jsonl:1: hops: Too big: expected number to be <=3$/],
      [{ prompt: 'x', hops: 1 }, /bad\.jsonl:1: answer: Invalid input: expected string, received undefined$/],
      [
        { answer: 'a', hops: 1 },
        /bad\.jsonl:1: a row needs exactly one of "prompt" \(a string\) or "messages" \(chat messages\)$/,
      ],
      [
        { prompt: 'x', messages: [{ role: 'user', content: 'y' }], answer: 'a', hops: 1 },
        /bad\.jsonl:1: a row needs exactly one of .*, not both$/,
      ],
      [
        {
          messages: [
            { role: 'user', content: 'y' },
            { role: 'assistant', content: 'z' },
          ],
          answer: 'a',
          hops: 1,
        },
        /bad\.jsonl:1: messages\.1\.role: the last message must be from the user \(the policy answers it\), got "assistant"$/,
      ],
      [
        { messages: [{ role: 'robot', content: 'y' }], answer: 'a', hops: 1 },
        /bad\.jsonl:1: messages\.0\.role: Invalid discriminator value/,
      ],
      [
        { messages: [{ role: 'user', content: 'y' }], system: 's', answer: 'a', hops: 1 },
        /bad\.jsonl:1: system: with "messages", put the system message in the messages$/,
      ],
      [
        { prompt: 'x', answer: 'a', hops: 1, toolArgs: { search: 3 } },
        /bad\.jsonl:1: toolArgs\.search: Invalid input: expected record, received number$/,
      ],
      ['{"prompt": "x", ', /bad\.jsonl:1: not valid JSON \(/],
      ['[1, 2]', /bad\.jsonl:1: a row must be a JSON object$/],
    ];
    for (const [line, message] of cases) {
      const p = file('bad.jsonl', [line]);
      assert.throws(
        () => loadJsonlDataset(p, { fields: Fields }),
        (error: unknown) => error instanceof DatasetError && message.test(error.message),
        JSON.stringify(line),
      );
    }
    const dup = file('dup.jsonl', [
      { id: 'a', prompt: 'x' },
      { id: 'b', prompt: 'y' },
      { id: 'a', prompt: 'z' },
    ]);
    assert.throws(() => loadJsonlDataset(dup), /dup\.jsonl:3: id: "a" is already used at line 1/);
    assert.throws(() => loadJsonlDataset(path.join(dir, 'none.jsonl')), /none\.jsonl: dataset file not found/);
    assert.throws(() => loadJsonlDataset(file('empty.jsonl', [''])), /empty\.jsonl: the dataset has no rows/);
    assert.throws(
      () => datasetFromRows('x', [{ prompt: 'x' }], { fields: z.object({ messages: z.string() }) }),
      /dataset fields schema: "messages" is a field every row has already; rename it/,
    );
  });

  it('writes JSONL that reads back', () => {
    const p = path.join(dir, 'out', 'rows.jsonl');
    writeJsonl(p, [
      { prompt: 'a', answer: 'x', hops: 1 },
      { prompt: 'b', answer: 'y', hops: 3 },
    ]);
    assert.deepEqual(
      loadJsonlDataset(p, { fields: Fields }).rows.map((r) => [r.id, r.answer]),
      [
        ['rows.jsonl:1', 'x'],
        ['rows.jsonl:2', 'y'],
      ],
    );
  });
});
