import { loadDemonstrations } from '../../../foundations/data/demonstrations';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { SftSequence } from '../../rl/sft';
import { hasImages, type RolloutImages } from '../../rollout/images';
import { tokenizeDemonstration } from '../../rollout/tokenizeDemonstration';
import type { ToolSet } from '../../../foundations/tools/toolSet';

export interface DemonstrationReading {
  template: ChatTemplate;
  tools: ToolSet;
  /** The config's `rollout.templateKwargs`. */
  templateKwargs?: Record<string, unknown>;
  /** Reads and prepares the demonstrations' images (paths relative to the file) as a rollout prepares them. */
  images: RolloutImages;
}

/**
 * A demonstrations file as token sequences for supervised training, each laid out as the agent
 * loop lays out a rollout, with its images (vision-language models); errors name the file, line
 * and field. The warm start and the SFT-only baseline read demonstrations through this one path.
 */
export async function readDemonstrationSequences(file: string, reading: DemonstrationReading): Promise<SftSequence[]> {
  const demonstrations = await loadDemonstrations(file, { tools: reading.tools });
  const imageTokenId = reading.images.imageTokenId;
  const sequences: SftSequence[] = [];
  for (const { id, messages, source } of demonstrations) {
    const origin = `${source.file}:${source.line}`;
    // A text-only model's RolloutImages refuses an image with an error naming the line and part.
    const pictured = hasImages(messages)
      ? await reading.images.rowImages({ id: id ?? origin, messages, toolArgs: {}, source })
      : [];
    const tokens = tokenizeDemonstration(reading.template, messages, {
      tools: reading.tools.specs(),
      ...(reading.templateKwargs ? { kwargs: reading.templateKwargs } : {}),
      origin,
      ...(pictured.length && imageTokenId !== undefined ? { images: { list: pictured, imageTokenId } } : {}),
    });
    sequences.push({
      ids: tokens.ids,
      mask: Uint8Array.from(tokens.mask),
      turns: { of: tokens.turns, calls: tokens.callTurns },
      source: origin,
      ...(pictured.length
        ? { images: pictured.map((im) => ({ key: im.sha256, grid: im.grid, patches: im.patches })) }
        : {}),
    });
  }
  return sequences;
}
