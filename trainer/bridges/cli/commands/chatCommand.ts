import * as readline from 'node:readline';
import { parseArgs } from 'node:util';
import { createDevice, type Device } from '../../../foundations/engine/device/device';
import { ModelPolicy, type GenerationSession } from '../../../foundations/models/generation/generationSession';
import type { GeneratedTurn } from '../../../foundations/models/generation/policy';
import { readLoraAdapter, type LoraAdapter } from '../../../foundations/models/files/save';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { loraTensorNames, loraModules } from '../../../foundations/models/lora';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
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

type ChatValues = ReturnType<typeof parseChatArgs>;

function parseChatArgs(argv: string[]) {
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
  return { ...values, model: values.model };
}

/** A numeric option: the fallback when absent, a usage error naming the flag when not a valid number. */
function numberOption(name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || !check(n)) throw new UsageError(`--${name}: ${JSON.stringify(raw)} is not valid`);
  return n;
}

export async function chatCommand(argv: string[]): Promise<number> {
  const values = parseChatArgs(argv);
  const { modelDir, adapterDir } = await resolveChatFolders(values);
  const device = createDevice(await resolveDevice(values.device!));
  const adapter = adapterDir ? await readAdapter(adapterDir, modelDir) : undefined;
  const model = await ModelRuntime.load(
    device,
    modelDir,
    adapter ? { lora: adapter.lora, quantize: adapter.baseQuantization } : {},
  );
  try {
    if (adapter) await setAdapterWeights(device, model, adapter);
    const template = model.folder.chatTemplate;
    if (!template)
      throw new UsageError(
        `${values.model} has no chat template (tokenizer_config.json has no chat_template); it is a base model`,
      );
    const chat: Chat = {
      model,
      template,
      options: samplingOptions(values, model, template),
      policy: new ModelPolicy(model),
      seed: numberOption('seed', values.seed, 0, (n) => Number.isInteger(n) && n >= 0),
      system: values.system,
    };
    await runChat(chat, `${model.config.architecture} from ${modelDir}${adapterDir ? ` + adapter ${adapterDir}` : ''}`);
    return 0;
  } finally {
    model.close();
    await device.close();
  }
}

/** --model and --adapter as local folders, pulling Hub repos into the cache with a progress bar. */
async function resolveChatFolders(values: ChatValues): Promise<{ modelDir: string; adapterDir: string | undefined }> {
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
  return { modelDir, adapterDir };
}

export async function readAdapter(adapterDir: string, modelDir: string): Promise<LoraAdapter> {
  const { loadModelConfig } = await import('../../../foundations/models/modelConfig');
  return readLoraAdapter(adapterDir, loadModelConfig(modelDir));
}

/** The adapter's A and B matrices into the device state the LoRA graph reads. */
export async function setAdapterWeights(device: Device, model: ModelRuntime, adapter: LoraAdapter): Promise<void> {
  const state: Record<string, { dtype: 'float32'; shape: number[]; data: Float32Array }> = {};
  for (const m of loraModules(model.config, adapter.lora)) {
    const names = loraTensorNames(m.module);
    state[names.a] = { dtype: 'float32', ...adapter.tensors[names.a] };
    state[names.b] = { dtype: 'float32', ...adapter.tensors[names.b] };
  }
  await device.setState(state);
}

/** Sampling flags, defaulting to the model's generation_config.json. */
function samplingOptions(values: ChatValues, model: ModelRuntime, template: ChatTemplate): SamplingFlags {
  const gen = model.folder.generationConfig;
  return {
    temperature: numberOption('temperature', values.temperature, gen?.temperature ?? 0.7, (n) => n >= 0),
    topP: numberOption('top-p', values['top-p'], gen?.topP ?? 1, (n) => n > 0 && n <= 1),
    topK: numberOption('top-k', values['top-k'], gen?.topK ?? 0, (n) => Number.isInteger(n) && n >= 0),
    maxNewTokens: numberOption('max-new-tokens', values['max-new-tokens'], 512, (n) => Number.isInteger(n) && n > 0),
    stopTokenIds: [...new Set([...model.tokenizer.eosTokenIds, template.endOfTurnId])],
  };
}

interface SamplingFlags {
  temperature: number;
  topP: number;
  topK: number;
  maxNewTokens: number;
  stopTokenIds: number[];
}

interface Chat {
  model: ModelRuntime;
  template: ChatTemplate;
  options: SamplingFlags;
  policy: ModelPolicy;
  seed: number;
  system: string | undefined;
}

/** The conversation so far: its generation session (the KV cache), messages and token ids. */
interface Conversation {
  session: GenerationSession;
  messages: ChatMessage[];
  ids: number[];
}

async function newConversation(chat: Chat): Promise<Conversation> {
  return {
    session: await chat.policy.startSession(1, chat.seed),
    messages: chat.system ? [{ role: 'system', content: chat.system }] : [],
    ids: [],
  };
}

/** Reads lines from stdin until /exit or end of input, replying to each. */
async function runChat(chat: Chat, title: string): Promise<void> {
  const rl = readline.createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: process.stdin.isTTY,
  });
  const lines = rl[Symbol.asyncIterator]();
  process.stdout.write(`${title}. /reset starts over, /exit quits.\n`);
  let conversation = await newConversation(chat);
  for (;;) {
    process.stdout.write('\n> ');
    const next = await lines.next();
    if (next.done) break;
    const text = next.value.trim();
    if (text === '/exit') break;
    if (text === '/reset') {
      await conversation.session.close();
      conversation = await newConversation(chat);
      continue;
    }
    if (!text) continue;
    const finish = await reply(chat, conversation, text);
    if (finish === 'length') {
      process.stdout.write(`[reply cut at ${chat.options.maxNewTokens} tokens; starting a new conversation]\n`);
      await conversation.session.close();
      conversation = await newConversation(chat);
    }
  }
  rl.close();
  await conversation.session.close();
}

/** One user turn and the streamed reply; the conversation grows by both. Returns how the reply ended. */
async function reply(chat: Chat, conversation: Conversation, text: string): Promise<GeneratedTurn['finish']> {
  const { model, template, options } = chat;
  const { messages, ids } = conversation;
  const user: ChatMessage = { role: 'user', content: text };
  const append =
    ids.length === 0
      ? template.promptTokens([...messages, user], { addGenerationPrompt: true }).ids
      : template.appendTokens({ messages, ids }, [user], { onHistoryRewrite: 'keep-tokens' }).ids;
  const turnTokens: number[] = [];
  let shown = '';
  const [turn] = await conversation.session.generate([{ sequence: 0, append }], {
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
  conversation.ids = [...ids, ...append, ...turn.tokens];
  conversation.messages = [
    ...messages,
    user,
    {
      role: 'assistant',
      content: model.tokenizer.decode(turn.tokens.filter((t) => !options.stopTokenIds.includes(t))),
    },
  ];
  return turn.finish;
}
