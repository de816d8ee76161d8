import * as readline from 'node:readline';
import { parseArgs } from 'node:util';
import { createDevice } from '../../../foundations/engine/device/device';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import { readLoraAdapter } from '../../../foundations/models/save';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { loraTensorNames, loraModules } from '../../../foundations/models/lora';
import type { ChatMessage } from '../../../contract/protocol/chatMessages';
import { UsageError } from '../usage';
import { resolveDevice } from '../resolveDevice';
import { DownloadProgressBar } from '../downloadProgress';
import { resolveModelPath } from '../../../foundations/models/hub';

export const chatUsage = `rollout-studio chat --model DIR [--adapter DIR] [options]

An interactive chat with a model (or a checkpoint), tokens streamed as they are sampled.
  --model DIR          a Hugging Face model folder, rollout-studio:base, or a Hub repo id (org/name, pulled into the Hugging Face cache)
  --revision R         the Hub repo's branch, tag or commit (default main)
  --adapter DIR        a LoRA adapter folder (PEFT format) to apply, or a Hub repo id
  --system TEXT        a system message
  --temperature T      sampling temperature (default: generation_config.json, else 0.7; 0 = greedy)
  --top-p P            nucleus sampling (default: generation_config.json, else 1)
  --top-k K            top-k sampling (default: generation_config.json, else 0 = off)
  --max-new-tokens N   per reply (default 512)
  --seed N             sampling seed (default 0)
  --device NAME        cpu, webgpu, cuda or auto (default cpu)
Type /reset to start over, /exit (or Ctrl-D) to quit.`;

export async function chatCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      revision: { type: 'string' },
      adapter: { type: 'string' },
      system: { type: 'string' },
      temperature: { type: 'string' },
      'top-p': { type: 'string' },
      'top-k': { type: 'string' },
      'max-new-tokens': { type: 'string', default: '512' },
      seed: { type: 'string', default: '0' },
      device: { type: 'string', default: 'cpu' },
    },
    strict: true,
  });
  if (!values.model) throw new UsageError('--model DIR is required');
  const number = (name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || !check(n)) throw new UsageError(`--${name}: ${JSON.stringify(raw)} is not valid`);
    return n;
  };
  const bar = new DownloadProgressBar(process.stderr);
  const modelDir = await resolveModelPath(values.model, {
    baseDir: process.cwd(),
    field: '--model',
    ...(values.revision ? { revision: values.revision } : {}),
    onProgress: (p) => bar.update(p),
  });
  const adapterDir = values.adapter
    ? await resolveModelPath(values.adapter, {
        baseDir: process.cwd(),
        field: '--adapter',
        onProgress: (p) => bar.update(p),
      })
    : undefined;
  bar.clear();
  const device = createDevice(await resolveDevice(values.device!));
  let lora;
  let adapterTensors;
  if (adapterDir) {
    const { loadModelConfig } = await import('../../../foundations/models/modelConfig');
    const adapter = readLoraAdapter(adapterDir, loadModelConfig(modelDir));
    lora = adapter.lora;
    adapterTensors = adapter.tensors;
  }
  const model = await ModelRuntime.load(device, modelDir, lora ? { lora } : {});
  try {
    if (adapterTensors && lora) {
      const state: Record<string, { dtype: 'float32'; shape: number[]; data: Float32Array }> = {};
      for (const m of loraModules(model.config, lora)) {
        const names = loraTensorNames(m.module);
        state[names.a] = { dtype: 'float32', ...adapterTensors[names.a] };
        state[names.b] = { dtype: 'float32', ...adapterTensors[names.b] };
      }
      await device.setState(state);
    }
    const template = model.folder.chatTemplate;
    if (!template)
      throw new UsageError(
        `${values.model} has no chat template (tokenizer_config.json has no chat_template); it is a base model`,
      );
    const gen = model.folder.generationConfig;
    const options = {
      temperature: number('temperature', values.temperature, gen?.temperature ?? 0.7, (n) => n >= 0),
      topP: number('top-p', values['top-p'], gen?.topP ?? 1, (n) => n > 0 && n <= 1),
      topK: number('top-k', values['top-k'], gen?.topK ?? 0, (n) => Number.isInteger(n) && n >= 0),
      maxNewTokens: number('max-new-tokens', values['max-new-tokens'], 512, (n) => Number.isInteger(n) && n > 0),
      stopTokenIds: [...new Set([...model.tokenizer.eosTokenIds, template.endOfTurnId])],
    };
    const policy = new ModelPolicy(model);
    const seed = number('seed', values.seed, 0, (n) => Number.isInteger(n) && n >= 0);
    const rl = readline.createInterface({
      input: process.stdin,
      output: process.stdout,
      terminal: process.stdin.isTTY,
    });
    const lines = rl[Symbol.asyncIterator]();
    process.stdout.write(
      `${model.config.architecture} from ${modelDir}${adapterDir ? ` + adapter ${adapterDir}` : ''}. /reset starts over, /exit quits.\n`,
    );
    let session = await policy.startSession(1, seed);
    let messages: ChatMessage[] = values.system ? [{ role: 'system', content: values.system }] : [];
    let ids: number[] = [];
    for (;;) {
      process.stdout.write('\n> ');
      const next = await lines.next();
      if (next.done) break;
      const text = next.value.trim();
      if (text === '/exit') break;
      if (text === '/reset') {
        await session.close();
        session = await policy.startSession(1, seed);
        messages = values.system ? [{ role: 'system', content: values.system }] : [];
        ids = [];
        continue;
      }
      if (!text) continue;
      const user: ChatMessage = { role: 'user', content: text };
      const append =
        ids.length === 0
          ? template.promptTokens([...messages, user], { addGenerationPrompt: true }).ids
          : template.appendTokens({ messages, ids }, [user], { onHistoryRewrite: 'keep-tokens' }).ids;
      const turnTokens: number[] = [];
      let shown = '';
      const [turn] = await session.generate([{ sequence: 0, append }], {
        ...options,
        onToken: (_s, token) => {
          if (options.stopTokenIds.includes(token)) return;
          turnTokens.push(token);
          const decoded = model.tokenizer.decode(turnTokens);
          // Print only whole characters: a token may end inside a UTF-8 sequence.
          if (!decoded.endsWith('\uFFFD')) {
            process.stdout.write(decoded.slice(shown.length));
            shown = decoded;
          }
        },
      });
      process.stdout.write('\n');
      ids = [...ids, ...append, ...turn.tokens];
      messages = [
        ...messages,
        user,
        {
          role: 'assistant',
          content: model.tokenizer.decode(turn.tokens.filter((t) => !options.stopTokenIds.includes(t))),
        },
      ];
      if (turn.finish === 'length') {
        process.stdout.write(`[reply cut at ${options.maxNewTokens} tokens; starting a new conversation]\n`);
        await session.close();
        session = await policy.startSession(1, seed);
        messages = values.system ? [{ role: 'system', content: values.system }] : [];
        ids = [];
      }
    }
    rl.close();
    await session.close();
    return 0;
  } finally {
    model.close();
    await device.close();
  }
}
