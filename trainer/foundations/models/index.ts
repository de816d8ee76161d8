/**
 * Hugging Face decoder models: reading and writing their folders (config, safetensors,
 * tokenizer, chat template, generation config) and creating tiny ones for tests.
 */
export {
  ARCHITECTURES,
  loadModelConfig,
  parseModelConfig,
  ropeInverseFrequencies,
  type ModelConfig,
  type ModelFamily,
  type RopeScaling,
} from './modelConfig';
export { CheckpointError, ChatTemplateError, ModelConfigError, TokenizerError } from './modelErrors';
export {
  DTYPE_SIZES,
  READABLE_DTYPES,
  SafetensorsFile,
  elementCount,
  readSafetensorsHeader,
  type SafetensorsDtype,
  type SafetensorsHeader,
  type TensorInfo,
} from './files/safetensors';
export {
  DEFAULT_MAX_SHARD_BYTES,
  SAVE_DTYPES,
  planShards,
  writeSafetensors,
  writeShardedSafetensors,
  type SaveDtype,
  type ShardedWriteOptions,
  type ShardedWriteResult,
  type WritableTensor,
  type WriteOptions,
} from './files/safetensorsWriter';
export { CheckpointReader, type CheckpointTensorInfo } from './files/checkpointReader';
export {
  checkCheckpoint,
  expectedTensors,
  validateCheckpoint,
  type CheckpointProblems,
  type ExpectedTensor,
  type WeightRole,
} from './weights';
export { loadGenerationConfig, parseGenerationConfig, type GenerationConfig } from './generationConfig';
export { Tokenizer, type AddedTokenInfo, type ChatTemplateSources, type SpecialTokenStrings } from './text/tokenizer';
export {
  ChatTemplate,
  type AppendOptions,
  type AppendResult,
  type HistoryRewrite,
  type RenderOptions,
  type TokenizedHistory,
  type TokenizedText,
} from './text/chatTemplate';
export { openModelFolder, type ModelFolder } from './modelFolder';
export { createModel, type CreateModelOptions, type CreatedModel } from './createModel';
export {
  bfloat16ToFloat32Bits,
  float16ToFloat32Bits,
  float32BitsToBfloat16,
  float32BitsToFloat16,
  float32Bits,
  float32FromBits,
} from './files/halfFloat';
