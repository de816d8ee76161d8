import * as fs from 'node:fs';
import * as path from 'node:path';
import { openModelFolder } from '../modelFolder';
import { mergedAdapterWeight, readLoraAdapter } from '../files/save';
import { expectedTensors } from '../weights';
import {
  architectureMetadata,
  ggufArchitecture,
  ggufTensorName,
  permutationHeads,
  permuteForPairwiseRope,
  ropeFrequencyFactors,
} from './architecture';
import { canEncode, type GgmlType } from './encode';
import { meta, writeGguf, type GgufTensor, type MetadataValue } from './format';
import { vocabularyMetadata } from './vocabulary';

/**
 * A Hugging Face model folder (optionally with a LoRA adapter, merged into the weights) as one
 * GGUF file that llama.cpp, Ollama and LM Studio load.
 *
 * Types follow convert_hf_to_gguf.py: one-dimensional tensors (norms, biases, rope factors)
 * stay float32; matrices take the requested type, and a matrix whose rows are not whole Q8_0 or
 * Q4_0 blocks falls back to F16. q4_0 quantizes every matrix, the embedding and output too
 * (llama-quantize's --pure): the same codes as a QLoRA base at 4 bits in blocks of 32.
 */
export const GGUF_TYPES = ['f32', 'f16', 'q8_0', 'q4_0'] as const;
export type GgufExportType = (typeof GGUF_TYPES)[number];

const MATRIX_TYPE: Record<GgufExportType, GgmlType> = { f32: 'F32', f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' };
/** llama.cpp's llama_ftype for the file as a whole (LLAMA_FTYPE_ALL_F32, MOSTLY_F16, MOSTLY_Q8_0, MOSTLY_Q4_0). */
const FILE_TYPE: Record<GgufExportType, number> = { f32: 0, f16: 1, q8_0: 7, q4_0: 2 };

export interface GgufExportOptions {
  modelDir: string;
  /** A PEFT LoRA adapter folder for this model: merged as W + (alpha/rank)·B·A. */
  adapterDir?: string | undefined;
  out: string;
  type: GgufExportType;
  /** `general.name`; default the model folder's name. */
  name?: string | undefined;
}

export interface GgufExportResult {
  file: string;
  bytes: number;
  architecture: string;
  tensors: number;
  /** How many tensors were written in each ggml type. */
  types: Partial<Record<GgmlType, number>>;
  mergedAdapter: boolean;
}

export function exportGguf(options: GgufExportOptions): GgufExportResult {
  const folder = openModelFolder(options.modelDir);
  try {
    const { config, checkpoint, tokenizer } = folder;
    const adapter = options.adapterDir ? readLoraAdapter(options.adapterDir, config) : undefined;
    const arch = ggufArchitecture(config);
    const metadata: Array<[string, MetadataValue]> = [
      ['general.architecture', meta.str(arch)],
      ['general.type', meta.str('model')],
      ['general.name', meta.str(options.name ?? path.basename(path.resolve(options.modelDir)))],
      ...architectureMetadata(config),
      ['general.file_type', meta.u32(FILE_TYPE[options.type])],
      ['general.quantization_version', meta.u32(2)],
      ...vocabularyMetadata(tokenizer, config),
    ];
    const tensors: GgufTensor[] = [];
    const types: Partial<Record<GgmlType, number>> = {};
    const add = (tensor: GgufTensor) => {
      tensors.push(tensor);
      types[tensor.type] = (types[tensor.type] ?? 0) + 1;
    };
    const factors = ropeFrequencyFactors(config);
    if (factors) add({ name: 'rope_freqs.weight', shape: [factors.length], type: 'F32', values: () => factors });
    for (const expected of expectedTensors(config)) {
      const name = ggufTensorName(expected.name);
      if (!name) throw new Error(`GGUF export: no GGUF name for ${expected.name}`);
      const wanted = expected.shape.length === 1 ? 'F32' : MATRIX_TYPE[options.type];
      const type = canEncode(wanted, expected.shape) ? wanted : 'F16';
      const heads = permutationHeads(config, expected.name);
      const rowLength = expected.shape.length === 1 ? 1 : expected.shape[1];
      add({
        name,
        shape: expected.shape,
        type,
        values: () => {
          let values = checkpoint.read(expected.name, expected.shape);
          if (adapter) values = mergedAdapterWeight(expected.name, values, adapter, config);
          return heads === undefined ? values : permuteForPairwiseRope(values, heads, rowLength);
        },
      });
    }
    fs.mkdirSync(path.dirname(path.resolve(options.out)), { recursive: true });
    const bytes = writeGguf(options.out, metadata, tensors);
    return {
      file: options.out,
      bytes,
      architecture: arch,
      tensors: tensors.length,
      types,
      mergedAdapter: adapter !== undefined,
    };
  } finally {
    folder.close();
  }
}
