/**
 * The visual-zoom example's data, seeded: pictures (images.ts), each asking the centre cell's colour,
 * and demonstrations for the supervised warm start that are deliberately imperfect — most
 * answer straight from the small picture (a guess: the dot is not readable there), a few zoom
 * into the asked cell first and then read the dot. RL has to find out that zooming pays.
 *
 *   npx tsx examples/visual-zoom/data.ts [--out DIR]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { writeJsonl } from 'rollout-studio';
import { CENTRE, COLOUR_NAMES, cropCell, drawPicture, GRID, pictureToPng, type Picture } from './images';
import { SYSTEM_PROMPT } from './rows';

export interface DatasetOptions {
  out: string;
  seed: number;
  train: number;
  heldout: number;
  sft: number;
  /** Share of the demonstrations that zoom before answering (the rest answer at once). */
  zoomShare: number;
  /** Reading drills: one cell shown, its colour answered (the curriculum's first file). */
  reading: number;
}

export const DEFAULTS: Omit<DatasetOptions, 'out'> = {
  seed: 1,
  train: 256,
  heldout: 64,
  sft: 1024,
  zoomShare: 0.3,
  reading: 2048,
};

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const QUESTION = 'What colour is the dot in the centre cell?';
const answer = (colour: string) => `<answer> ${colour}</answer>`;

/** The generator's state: the seeded draws and the number of pictures written so far (their files' numbers). */
interface Drawing {
  out: string;
  random: () => number;
  pictures: number;
}

/** The next picture, written to img/NNNN.png. */
async function newPicture(drawing: Drawing): Promise<{ file: string; picture: Picture }> {
  const p = drawPicture(drawing.random);
  const file = `img/${String(drawing.pictures++).padStart(4, '0')}.png`;
  fs.writeFileSync(path.join(drawing.out, file), await pictureToPng(p));
  return { file, picture: p };
}

/** The user's turn: a picture and the question about its centre cell. */
function askAbout(file: string) {
  return {
    role: 'user',
    content: [
      { type: 'image', path: file },
      { type: 'text', text: QUESTION },
    ],
  };
}

/** `count` question rows (train or held-out), each with a new picture and its centre dot as the answer. */
async function questionRows(drawing: Drawing, count: number, prefix: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const { file, picture: p } = await newPicture(drawing);
    out.push({
      id: `${prefix}-${i}`,
      answer: p.dots[CENTRE - 1][CENTRE - 1],
      image: file,
      messages: [askAbout(file)],
    });
  }
  return out;
}

/** One demonstration: a zoom into the centre cell then the right answer (`zoomShare` of them), else a guess. */
async function demonstration(drawing: Drawing, zoomShare: number): Promise<unknown> {
  const { random, out } = drawing;
  const { file, picture: p } = await newPicture(drawing);
  const user = askAbout(file);
  const truth = p.dots[CENTRE - 1][CENTRE - 1];
  if (random() < zoomShare) {
    // The zoomed cell is made by the tool at training time; the demonstration stores it as the tool's result.
    const cellFile = `img/${String(drawing.pictures++).padStart(4, '0')}-cell.png`;
    fs.writeFileSync(path.join(out, cellFile), await cropCell(fs.readFileSync(path.join(out, file)), CENTRE, CENTRE));
    return {
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        user,
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ type: 'function', function: { name: 'zoom', arguments: {} } }],
        },
        {
          role: 'tool',
          name: 'zoom',
          content: [
            { type: 'image', path: cellFile },
            { type: 'text', text: 'the centre cell' },
          ],
        },
        { role: 'assistant', content: answer(truth) },
      ],
    };
  }
  // Answering from the small picture: a guess, as a model that does not zoom would make.
  return {
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      user,
      { role: 'assistant', content: answer(COLOUR_NAMES[Math.floor(random() * 4)]) },
    ],
  };
}

/** Reading drill `i`: a cell on its own, as the zoom tool shows it, and its colour. */
async function readingDrill(drawing: Drawing, i: number): Promise<unknown> {
  const { random } = drawing;
  const p = drawPicture(random);
  const row = 1 + Math.floor(random() * GRID);
  const col = 1 + Math.floor(random() * GRID);
  const cellFile = `img/read-${String(i).padStart(4, '0')}.png`;
  fs.writeFileSync(path.join(drawing.out, cellFile), await cropCell(await pictureToPng(p), row, col));
  return {
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      {
        role: 'user',
        content: [
          { type: 'image', path: cellFile },
          { type: 'text', text: 'What colour is the dot?' },
        ],
      },
      { role: 'assistant', content: answer(p.dots[row - 1][col - 1]) },
    ],
  };
}

export async function generateDataset(options: DatasetOptions): Promise<Record<string, { rows: number }>> {
  const drawing: Drawing = { out: options.out, random: rng(options.seed), pictures: 0 };
  fs.mkdirSync(path.join(options.out, 'img'), { recursive: true });
  const train = await questionRows(drawing, options.train, 'train');
  const heldout = await questionRows(drawing, options.heldout, 'heldout');
  const demos: unknown[] = [];
  for (let i = 0; i < options.sft; i++) demos.push(await demonstration(drawing, options.zoomShare));
  const reading: unknown[] = [];
  for (let i = 0; i < options.reading; i++) reading.push(await readingDrill(drawing, i));
  writeJsonl(path.join(options.out, 'reading.jsonl'), reading);
  writeJsonl(path.join(options.out, 'train.jsonl'), train);
  writeJsonl(path.join(options.out, 'heldout.jsonl'), heldout);
  writeJsonl(path.join(options.out, 'sft.jsonl'), demos);
  return {
    train: { rows: train.length },
    heldout: { rows: heldout.length },
    reading: { rows: reading.length },
    sft: { rows: demos.length },
  };
}

if (require.main === module) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: path.join(__dirname, 'data') } } });
  void generateDataset({ out: values.out!, ...DEFAULTS }).then((written) => console.log(JSON.stringify(written)));
}
