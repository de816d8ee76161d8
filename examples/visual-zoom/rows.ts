/** The dataset rows of the visual-zoom example: the fields its rewards and its zoom tool read. */
import { z, type DatasetRow } from 'rollout-studio';

export const ZoomFields = z.object({
  /** The colour of the dot in the asked cell. */
  answer: z.enum(['red', 'green', 'blue', 'yellow']),
  /** The picture, relative to the dataset file (the zoom tool crops it). */
  image: z.string().min(1),
});

export type ZoomRow = DatasetRow<z.output<typeof ZoomFields>>;

export const SYSTEM_PROMPT =
  'The picture is a 9 by 9 grid of cells, each with a small coloured dot. The zoom tool shows the centre cell up close. Reply with <answer> the colour</answer>.';
