/**
 * Errors about a model folder's files. Each message starts with the file (and, where there is
 * one, the tensor or field) so a user can open the file and see what is wrong.
 */

/** config.json or generation_config.json is not a configuration we can run. */
export class ModelConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelConfigError';
  }
}

/** A safetensors file, its index, or the set of tensors in a checkpoint is wrong. */
export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

/** tokenizer.json / tokenizer_config.json cannot be used, or a token is not in the vocabulary. */
export class TokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerError';
  }
}

/** A chat template failed to render, or rewrote a conversation prefix that is already tokenised. */
export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}
