import * as path from 'node:path';
import { ChatTemplate } from './text/chatTemplate';
import { CheckpointReader } from './files/checkpointReader';
import { loadModelConfig, type ModelConfig } from './modelConfig';
import { ModelConfigError } from './modelErrors';
import { loadGenerationConfig, type GenerationConfig } from './generationConfig';
import { Tokenizer } from './text/tokenizer';
import { validateCheckpoint, type CheckpointProblems } from './weights';
import { releasedVisionLanguageName } from './vision/visionWeights';
import { loadImageProcessorConfig, type ImageProcessorConfig } from './vision/preprocess';

/**
 * A Hugging Face model folder opened as a whole, with the checks that need more than one of
 * its files: the weights fit config.json, and every token id the tokenizer or the generation
 * config can produce has a row in the embedding. No tensor data is read here.
 */
export interface ModelFolder {
  dir: string;
  config: ModelConfig;
  generationConfig: GenerationConfig | undefined;
  tokenizer: Tokenizer;
  /** Undefined for a base model without a chat template. */
  chatTemplate: ChatTemplate | undefined;
  /** Open until `close()`. */
  checkpoint: CheckpointReader;
  /** Tensors present but not used (see `validateCheckpoint`). */
  ignoredTensors: CheckpointProblems['ignored'];
  /** Vision-language models: how images are prepared (preprocessor_config.json, or the processor's defaults). */
  imageProcessor: ImageProcessorConfig | undefined;
  close(): void;
}

export function openModelFolder(dir: string, options: { tokenizer?: Tokenizer } = {}): ModelFolder {
  const declared = loadModelConfig(dir);
  const generationConfig = loadGenerationConfig(dir);
  const tokenizer = options.tokenizer ?? Tokenizer.load(dir);
  const config = withIdsWithoutToken(declared, tokenizer);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new ModelConfigError(
      `${config.configPath}: vocab_size is ${config.vocabSize} but ${path.join(tokenizer.dir, 'tokenizer.json')} has ids up to ${tokenizer.vocabSize - 1}; ` +
        'those tokens would have no embedding row',
    );
  }
  const stopIds = [
    ...config.eosTokenIds.map((id) => ({ id, file: config.configPath })),
    ...(generationConfig?.eosTokenIds ?? []).map((id) => ({ id, file: generationConfig!.file })),
  ];
  for (const { id, file } of stopIds) {
    if (id >= config.vocabSize)
      throw new ModelConfigError(
        `${file}: eos_token_id ${id} is outside the vocabulary (vocab_size ${config.vocabSize})`,
      );
  }
  const chatTemplate = tokenizer.chatTemplates ? ChatTemplate.fromTokenizer(tokenizer) : undefined;
  const imageProcessor = config.vision ? loadImageProcessorConfig(dir, config.vision) : undefined;
  const opened = CheckpointReader.open(dir);
  // Vision-language checkpoints saved by newer transformers versions nest the tower and the decoder under `model.`.
  const checkpoint = config.vision ? opened.renamed(releasedVisionLanguageName) : opened;
  let ignoredTensors: CheckpointProblems['ignored'];
  try {
    ignoredTensors = validateCheckpoint(checkpoint, config).ignored;
  } catch (error) {
    checkpoint.close();
    throw error;
  }
  return {
    dir,
    config,
    generationConfig,
    tokenizer,
    chatTemplate,
    checkpoint,
    ignoredTensors,
    imageProcessor,
    close: () => checkpoint.close(),
  };
}

/** `config` with the ids of its embedding that `tokenizer` has no token for (see ModelConfig.idsWithoutToken). */
function withIdsWithoutToken(config: ModelConfig, tokenizer: Tokenizer): ModelConfig {
  const ids: number[] = [];
  for (let id = 0; id < config.vocabSize; id++) if (!tokenizer.hasToken(id)) ids.push(id);
  return ids.length > 0 ? { ...config, idsWithoutToken: ids } : config;
}
