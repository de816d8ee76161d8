/**
 * The visual-zoom example's data and tool: every answer is the colour of the dot really drawn
 * in the centre cell (read back from the PNG), the demonstrations mix guesses and zooms as
 * documented, and the zoom tool returns that cell at full resolution as an image.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import sharp from 'sharp';
import { loadJsonlDataset } from '#trainer/foundations/data';
import { observationImages } from '#trainer/foundations/tools/result';
import { generateDataset } from '../../../examples/visual-zoom/data';
import { CELL, CENTRE, COLOURS, SIZE, type Colour } from '../../../examples/visual-zoom/images';
import { ZoomFields, type ZoomRow } from '../../../examples/visual-zoom/rows';
import { zoom } from '../../../examples/visual-zoom/tools';

/** The colour of the one non-grey pixel group in an RGB buffer. */
function dotColour(data: Buffer): Colour | undefined {
  for (let i = 0; i < data.length; i += 3) {
    const found = (Object.entries(COLOURS) as [Colour, readonly number[]][]).find(([, rgb]) =>
      rgb.every((v, k) => v === data[i + k]),
    );
    if (found) return found[0];
  }
  return undefined;
}

describe('visual-zoom example', () => {
  it('answers are the centre dots drawn, and the zoom tool shows that cell', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'visual-zoom-'));
    const written = await generateDataset({ out, seed: 3, train: 6, heldout: 2, sft: 20, zoomShare: 0.3, reading: 4 });
    assert.deepEqual(written, { train: { rows: 6 }, heldout: { rows: 2 }, reading: { rows: 4 }, sft: { rows: 20 } });
    const rows = loadJsonlDataset(path.join(out, 'train.jsonl'), { fields: ZoomFields }).rows as ZoomRow[];
    for (const row of rows) {
      const { data, info } = await sharp(path.join(out, row.image)).raw().toBuffer({ resolveWithObject: true });
      assert.deepEqual([info.width, info.height], [SIZE, SIZE]);
      const cell = Buffer.alloc(CELL * CELL * 3);
      for (let y = 0; y < CELL; y++)
        data.copy(
          cell,
          y * CELL * 3,
          (((CENTRE - 1) * CELL + y) * SIZE + (CENTRE - 1) * CELL) * 3,
          (((CENTRE - 1) * CELL + y) * SIZE + CENTRE * CELL) * 3,
        );
      assert.equal(dotColour(cell), row.answer, `${row.id}: the centre dot is ${row.answer}`);
      const result = await zoom.execute({}, { row } as never);
      const [image] = observationImages(typeof result === 'string' ? { content: [] } : result);
      const zoomed = await sharp(image.data as Buffer)
        .raw()
        .toBuffer({ resolveWithObject: true });
      assert.deepEqual([zoomed.info.width, zoomed.info.height], [CELL, CELL]);
      assert.equal(dotColour(zoomed.data), row.answer);
    }
    const demos = fs
      .readFileSync(path.join(out, 'sft.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { messages: { role: string }[] });
    const zooming = demos.filter((d) => d.messages.some((m) => m.role === 'tool')).length;
    assert.ok(zooming > 0 && zooming < demos.length, `${zooming} of ${demos.length} demonstrations zoom`);
    fs.rmSync(out, { recursive: true, force: true });
  });
});
