import type { CheckpointReader } from './files/checkpointReader';
import type { ModelConfig } from './modelConfig';
import { CheckpointError } from './modelErrors';
import { READABLE_DTYPES } from './files/safetensors';
import type { ExpectedTensor } from './expectedTensor';
import { visionTensors } from './vision/visionWeights';

/**
 * The tensors a Hugging Face checkpoint of each family holds, with their shapes, in the order
 * of the PyTorch module's state dict, and the check of a checkpoint against that list.
 */

export type { ExpectedTensor, WeightRole } from './expectedTensor';

export function expectedTensors(config: ModelConfig): ExpectedTensor[] {
  const { hiddenSize: hidden, intermediateSize: intermediate, headDim, numHeads, numKvHeads, vocabSize } = config;
  const q = numHeads * headDim;
  const kv = numKvHeads * headDim;
  const tensors: ExpectedTensor[] = [
    { name: 'model.embed_tokens.weight', shape: [vocabSize, hidden], role: 'embedding' },
  ];
  const linear = (name: string, out: number, input: number, bias: boolean) => {
    tensors.push({ name: `${name}.weight`, shape: [out, input], role: 'linear' });
    if (bias) tensors.push({ name: `${name}.bias`, shape: [out], role: 'bias' });
  };
  for (let i = 0; i < config.numLayers; i++) {
    const layer = `model.layers.${i}`;
    linear(`${layer}.self_attn.q_proj`, q, hidden, config.qkvBias);
    linear(`${layer}.self_attn.k_proj`, kv, hidden, config.qkvBias);
    linear(`${layer}.self_attn.v_proj`, kv, hidden, config.qkvBias);
    linear(`${layer}.self_attn.o_proj`, hidden, q, config.oProjBias);
    if (config.qkNorm) {
      tensors.push({ name: `${layer}.self_attn.q_norm.weight`, shape: [headDim], role: 'norm' });
      tensors.push({ name: `${layer}.self_attn.k_norm.weight`, shape: [headDim], role: 'norm' });
    }
    linear(`${layer}.mlp.gate_proj`, intermediate, hidden, config.mlpBias);
    linear(`${layer}.mlp.up_proj`, intermediate, hidden, config.mlpBias);
    linear(`${layer}.mlp.down_proj`, hidden, intermediate, config.mlpBias);
    tensors.push({ name: `${layer}.input_layernorm.weight`, shape: [hidden], role: 'norm' });
    tensors.push({ name: `${layer}.post_attention_layernorm.weight`, shape: [hidden], role: 'norm' });
  }
  tensors.push({ name: 'model.norm.weight', shape: [hidden], role: 'norm' });
  if (!config.tieWordEmbeddings) tensors.push({ name: 'lm_head.weight', shape: [vocabSize, hidden], role: 'linear' });
  if (config.vision) tensors.push(...visionTensors(config.vision));
  return tensors;
}

export interface CheckpointProblems {
  missing: { name: string; shape: number[] }[];
  unexpected: { name: string; file: string }[];
  shapeMismatches: { name: string; file: string; expected: number[]; actual: number[] }[];
  unsupportedDtypes: { name: string; file: string; dtype: string }[];
  /** Tensors present but deliberately not used, as transformers ignores them too. */
  ignored: { name: string; reason: string }[];
}

/** Buffers older transformers versions saved; they are recomputed from the config. */
const ROTARY_BUFFER = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

/** Compares the checkpoint's tensors with what `config` needs, without reading any data. */
export function checkCheckpoint(reader: CheckpointReader, config: ModelConfig): CheckpointProblems {
  const problems: CheckpointProblems = {
    missing: [],
    unexpected: [],
    shapeMismatches: [],
    unsupportedDtypes: [],
    ignored: [],
  };
  const expected = expectedTensors(config);
  const expectedNames = new Set(expected.map((t) => t.name));
  for (const tensor of expected) {
    if (!reader.has(tensor.name)) {
      problems.missing.push({ name: tensor.name, shape: tensor.shape });
      continue;
    }
    const info = reader.info(tensor.name);
    if (info.shape.length !== tensor.shape.length || info.shape.some((d, i) => d !== tensor.shape[i])) {
      problems.shapeMismatches.push({ name: tensor.name, file: info.file, expected: tensor.shape, actual: info.shape });
    }
    if (!(READABLE_DTYPES as readonly string[]).includes(info.dtype))
      problems.unsupportedDtypes.push({ name: tensor.name, file: info.file, dtype: info.dtype });
  }
  for (const name of reader.names()) {
    if (expectedNames.has(name)) continue;
    if (ROTARY_BUFFER.test(name))
      problems.ignored.push({ name, reason: 'rotary frequencies are computed from config.json' });
    else if (name === 'lm_head.weight' && config.tieWordEmbeddings) {
      problems.ignored.push({
        name,
        reason: 'tie_word_embeddings is true: the output layer uses model.embed_tokens.weight, as in transformers',
      });
    } else problems.unexpected.push({ name, file: reader.info(name).file });
  }
  return problems;
}

const SHOWN_PER_KIND = 12;

function describeList<T>(title: string, items: T[], line: (item: T) => string): string[] {
  if (items.length === 0) return [];
  const shown = items.slice(0, SHOWN_PER_KIND).map((item) => '  ' + line(item));
  if (items.length > SHOWN_PER_KIND) shown.push(`  … and ${items.length - SHOWN_PER_KIND} more`);
  return [`${title} (${items.length}):`, ...shown];
}

/**
 * Fails with one message listing every missing, unexpected, misshapen or unreadable tensor
 * when the checkpoint does not fit `config`; returns the (harmless) findings otherwise.
 */
export function validateCheckpoint(reader: CheckpointReader, config: ModelConfig): CheckpointProblems {
  const problems = checkCheckpoint(reader, config);
  const shape = (s: number[]) => `[${s.join(', ')}]`;
  const lines = [
    ...describeList('missing tensors', problems.missing, (t) => `${t.name} ${shape(t.shape)}`),
    ...describeList(
      'shapes that disagree with config.json',
      problems.shapeMismatches,
      (t) => `${t.name}: ${shape(t.actual)} in ${t.file}, config needs ${shape(t.expected)}`,
    ),
    ...describeList(
      'unsupported dtypes',
      problems.unsupportedDtypes,
      (t) => `${t.name}: ${t.dtype} in ${t.file} (supported: ${READABLE_DTYPES.join(', ')})`,
    ),
    ...describeList('unexpected tensors', problems.unexpected, (t) => `${t.name} in ${t.file}`),
  ];
  if (lines.length > 0) {
    throw new CheckpointError(
      `${reader.dir}: the checkpoint does not match ${config.configPath} (${config.family}, ${config.numLayers} layers, hidden ${config.hiddenSize}):\n${lines.join('\n')}`,
    );
  }
  return problems;
}
