/**
 * Seeded pictures of the visual-zoom example: 144 × 144 pixels of grey, cut into a 9 × 9 grid of
 * 16 × 16 cells, each holding one 8 × 8 dot of red, green, blue or yellow at a random place.
 * The model sees the whole picture at the processor's size (16 × 16 pixels, four image tokens: a
 * dot shrinks to a tint of 0.9 of a pixel among 80 others, and the centre cell straddles all four
 * tokens), so reading the centre cell's dot needs the zoom tool, which returns that cell at full
 * resolution (16 × 16: the dot covers a quarter of it).
 */
import sharp from 'sharp';

export const COLOURS = {
  red: [220, 30, 30],
  green: [30, 190, 60],
  blue: [40, 70, 230],
  yellow: [235, 210, 40],
} as const;
export type Colour = keyof typeof COLOURS;
export const COLOUR_NAMES = Object.keys(COLOURS) as Colour[];
export const GRID = 9;
/** The dot's side in pixels. */
export const DOT = 8;
export const SIZE = GRID * 16;
export const CELL = 16;
const GREY = 128;

export interface Picture {
  /** dots[row][col]: each cell's dot colour. */
  dots: Colour[][];
  /** Interleaved RGB, SIZE × SIZE. */
  rgb: Uint8Array;
}

/** A picture from a seeded stream of uniform numbers in [0, 1). */
export function drawPicture(random: () => number): Picture {
  const rgb = new Uint8Array(SIZE * SIZE * 3).fill(GREY);
  const dots: Colour[][] = [];
  for (let r = 0; r < GRID; r++) {
    dots.push([]);
    for (let c = 0; c < GRID; c++) {
      const colour = COLOUR_NAMES[Math.floor(random() * 4)];
      dots[r].push(colour);
      const y0 = r * CELL + 1 + Math.floor(random() * (CELL - DOT - 1));
      const x0 = c * CELL + 1 + Math.floor(random() * (CELL - DOT - 1));
      for (let y = y0; y < y0 + DOT; y++)
        for (let x = x0; x < x0 + DOT; x++) rgb.set(COLOURS[colour], (y * SIZE + x) * 3);
    }
  }
  return { dots, rgb };
}

export async function pictureToPng(picture: Picture): Promise<Buffer> {
  return sharp(Buffer.from(picture.rgb), { raw: { width: SIZE, height: SIZE, channels: 3 } })
    .png()
    .toBuffer();
}

/** The centre cell, 1-based. */
export const CENTRE = (GRID + 1) / 2;

/** One cell of a PNG picture, at full resolution. */
export async function cropCell(png: Uint8Array, row: number, col: number): Promise<Buffer> {
  return sharp(png)
    .extract({ left: (col - 1) * CELL, top: (row - 1) * CELL, width: CELL, height: CELL })
    .png()
    .toBuffer();
}
