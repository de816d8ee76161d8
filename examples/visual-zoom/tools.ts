/** The zoom tool of the visual-zoom example: the centre cell of the row's picture, at full resolution. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineTool, imageResult, z } from 'rollout-studio';
import { CENTRE, cropCell } from './images';
import type { ZoomRow } from './rows';

export const zoom = defineTool<z.ZodObject<Record<string, never>>, ZoomRow>({
  name: 'zoom',
  description: 'Zoom into the centre cell of the picture and see it at full resolution.',
  parameters: z.object({}),
  async execute(_args, ctx) {
    const file = path.resolve(path.dirname(ctx.row.source.file), ctx.row.image);
    return imageResult([await cropCell(fs.readFileSync(file), CENTRE, CENTRE)], 'the centre cell');
  },
});

export const tools = [zoom];
