import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { JsonlTail } from '#trainer/contract/runstore';

const Row = z.object({ n: z.number().int() });

function tmpFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tail-test-')), 'rows.jsonl');
}

describe('JsonlTail', () => {
  it('returns nothing for a file that does not exist yet, then what is appended', () => {
    const file = tmpFile();
    const tail = new JsonlTail(file, Row);
    assert.deepEqual(tail.read().records, []);
    fs.writeFileSync(file, '{"n":1}\n{"n":2}\n');
    assert.deepEqual(tail.read().records, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(tail.read().records, []);
    fs.appendFileSync(file, '{"n":3}\n');
    assert.deepEqual(tail.read().records, [{ n: 3 }]);
  });

  it('leaves a line without its newline for later: a write in progress', () => {
    const file = tmpFile();
    fs.writeFileSync(file, '{"n":1}\n{"n":');
    const tail = new JsonlTail(file, Row);
    const first = tail.read();
    assert.deepEqual(first.records, [{ n: 1 }]);
    assert.deepEqual(first.errors, []);
    fs.appendFileSync(file, '2}\n');
    assert.deepEqual(tail.read().records, [{ n: 2 }]);
  });

  it('reports a complete line that does not validate by file and line, and keeps reading', () => {
    const file = tmpFile();
    fs.writeFileSync(file, '{"n":1}\n{"n":"two"}\nnot json\n{"n":4}\n');
    const read = new JsonlTail(file, Row).read();
    assert.deepEqual(read.records, [{ n: 1 }, { n: 4 }]);
    assert.equal(read.errors.length, 2);
    assert.match(
      read.errors[0],
      new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line 2: n: .*expected number`),
    );
    assert.match(read.errors[1], /line 3: not valid JSON/);
  });

  it('reads one record again from where it was found', () => {
    const file = tmpFile();
    fs.writeFileSync(file, '{"n":10}\n{"n":20}\n{"n":30}\n');
    const tail = new JsonlTail(file, Row);
    const { locations } = tail.read();
    assert.deepEqual(tail.readAt(locations[1]), { n: 20 });
    assert.equal(locations[2].line, 3);
  });

  it('starts again when the file is replaced, and says so', () => {
    const file = tmpFile();
    fs.writeFileSync(file, '{"n":1}\n{"n":2}\n');
    const tail = new JsonlTail(file, Row);
    tail.read();
    fs.writeFileSync(`${file}.new`, '{"n":7}\n');
    fs.renameSync(`${file}.new`, file);
    const read = tail.read();
    assert.equal(read.restarted, true);
    assert.deepEqual(read.records, [{ n: 7 }]);
  });

  it('reads a part at a time when given a byte budget, always whole lines', () => {
    const file = tmpFile();
    fs.writeFileSync(file, Array.from({ length: 10 }, (_, n) => `{"n":${n}}\n`).join(''));
    const tail = new JsonlTail(file, Row);
    const parts: number[][] = [];
    for (let read = tail.read(20); ; read = tail.read(20)) {
      parts.push(read.records.map((r) => r.n));
      if (!read.more) break;
    }
    assert.ok(parts.length >= 2, `${parts.length} parts`);
    assert.deepEqual(parts.flat(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(
      new JsonlTail(file, Row).read(3).records.length,
      1,
      'a budget smaller than a line still reads that line',
    );
  });

  it('reads lines longer than its read chunk', () => {
    const file = tmpFile();
    const Long = z.object({ s: z.string() });
    const long = 'x'.repeat(5 << 20);
    fs.writeFileSync(file, `${JSON.stringify({ s: long })}\n{"s":"short"}\n`);
    const read = new JsonlTail(file, Long).read();
    assert.equal(read.records.length, 2);
    assert.equal(read.records[0].s.length, long.length);
    assert.equal(read.records[1].s, 'short');
  });
});
