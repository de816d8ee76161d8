/**
 * llama.cpp peer for `npm run bench:models`: node-llama-cpp's prebuilt llama.cpp (the CPU
 * backend it picks for this machine) in a process of its own, so its thread pool and memory
 * never share ours. A long-lived server driven by test/bench/lib/peerProcess.ts — one JSON
 * request per stdin line, one reply per stdout line:
 *   {op: 'load', modelPath, gpu?: 'cuda' | 'vulkan'} → build info (llama.cpp release, CPU features,
 *     GPU); with a GPU every layer is offloaded
 *   {op: 'context', name, sequences, contextSize (per sequence), batchSize, flashAttention, threads}
 *     creates a named context; {op: 'dispose', name} frees it
 *   {op: 'generate', context, prompts: number[][], newTokens} → {seconds, tokens}: every prompt in
 *     its own sequence of the named context, all decoded together (llama.cpp batches the
 *     sequences into one llama_decode per step), greedy, exactly newTokens each (end-of-generation
 *     tokens included)
 *   {op: 'open', context, count} opens `count` sequences of the named context, kept between turns
 *     (bench:step's multi-turn rollouts); {op: 'close', context} frees them
 *   {op: 'turn', context, appends: number[][], newTokens, temperature} → {seconds, tokens: number[][]}:
 *     each open sequence takes its appended tokens (the previous turn's last sampled token, which
 *     llama.cpp has not evaluated yet, then the tool result or prompt) and samples exactly
 *     newTokens, all sequences decoded together; the KV cache stays for the next turn
 * Run: node --import tsx test/bench/llamacpp_peer.ts
 */
import * as readline from 'node:readline';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';

let llama: Llama | undefined;
let model: LlamaModel | undefined;
const contexts = new Map<string, LlamaContext>();
const openSequences = new Map<string, LlamaContextSequence[]>();

async function load(request: { modelPath: string; gpu?: 'cuda' | 'vulkan' }) {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  // maxThreads 0: each context uses exactly the threads it asks for.
  llama ??= await getLlama({ gpu: request.gpu ?? false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: 0 });
  model = await llama.loadModel({ modelPath: request.modelPath, gpuLayers: request.gpu ? 'max' : 0 });
  return {
    llamaCpp: llama.llamaCppRelease.release,
    buildType: llama.buildType,
    systemInfo: llama.systemInfo,
    gpu: llama.gpu,
    gpuNames: await llama.getGpuDeviceNames(),
  };
}

async function context(request: {
  name: string;
  sequences: number;
  contextSize: number;
  batchSize: number;
  flashAttention: boolean;
  threads: number;
}) {
  const created = await model!.createContext({
    sequences: request.sequences,
    contextSize: request.contextSize,
    batchSize: request.batchSize,
    threads: request.threads,
    flashAttention: request.flashAttention,
  });
  contexts.set(request.name, created);
  return { contextSize: created.contextSize, flashAttention: created.flashAttention };
}

async function dispose(request: { name: string }) {
  await contexts.get(request.name)?.dispose();
  contexts.delete(request.name);
  return {};
}

async function generate(request: { context: string; prompts: number[][]; newTokens: number }) {
  const ctx = contexts.get(request.context);
  if (!ctx) throw new Error(`no context named ${request.context}`);
  const sequences = request.prompts.map(() => ctx.getSequence());
  let tokens = 0;
  const t0 = performance.now();
  await Promise.all(
    sequences.map(async (sequence, i) => {
      let count = 0;
      for await (const _token of sequence.evaluate(request.prompts[i] as Token[], {
        temperature: 0,
        yieldEogToken: true,
      })) {
        if (++count >= request.newTokens) break;
      }
      tokens += count;
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const sequence of sequences) sequence.dispose();
  return { seconds, tokens };
}

async function open(request: { context: string; count: number }) {
  const ctx = contexts.get(request.context);
  if (!ctx) throw new Error(`no context named ${request.context}`);
  openSequences.set(
    request.context,
    Array.from({ length: request.count }, () => ctx.getSequence()),
  );
  return {};
}

async function close(request: { context: string }) {
  for (const sequence of openSequences.get(request.context) ?? []) sequence.dispose();
  openSequences.delete(request.context);
  return {};
}

async function turn(request: { context: string; appends: number[][]; newTokens: number; temperature: number }) {
  const sequences = openSequences.get(request.context);
  if (!sequences) throw new Error(`no open sequences in context ${request.context}`);
  const tokens: number[][] = sequences.map(() => []);
  const t0 = performance.now();
  await Promise.all(
    sequences.map(async (sequence, i) => {
      for await (const token of sequence.evaluate(request.appends[i] as Token[], {
        temperature: request.temperature,
        seed: i + 1,
        yieldEogToken: true,
      })) {
        tokens[i].push(token);
        if (tokens[i].length >= request.newTokens) break;
      }
    }),
  );
  return { seconds: (performance.now() - t0) / 1000, tokens };
}

const handlers: Record<string, (request: never) => Promise<unknown>> = {
  load,
  context,
  dispose,
  generate,
  open,
  close,
  turn,
};

const input = readline.createInterface({ input: process.stdin });
input.on('close', async () => {
  for (const c of contexts.values()) await c.dispose();
  await model?.dispose();
  await llama?.dispose();
  process.exit(0);
});
input.on('line', async (line) => {
  let reply: unknown;
  try {
    const request = JSON.parse(line) as { op: string };
    const handler = handlers[request.op];
    if (!handler) throw new Error(`unknown op ${request.op}`);
    reply = await handler(request as never);
  } catch (error) {
    reply = { error: (error as Error).stack ?? String(error) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});
