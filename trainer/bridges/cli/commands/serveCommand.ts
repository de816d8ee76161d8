import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createDevice } from '../../../foundations/engine/device/device';
import { readJsonFile } from '../../../foundations/models/files/jsonFile';
import { DEFAULT_LIMITS } from '../../../foundations/http/requestGuard';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import { resolveModelPath } from '../../../foundations/models/hub';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { startChatServer } from '../../../pipeline/rollout/gateway/chatServer';
import { ServedModel } from '../../../pipeline/rollout/gateway/servedModel';
import { HermesFormat } from '../../../pipeline/rollout/formats/hermes';
import { modelImages } from '../../../pipeline/rollout/images';
import { DownloadProgressBar } from '../downloadProgress';
import { resolveDevice } from '../resolveDevice';
import { UsageError } from '../usage';
import { readAdapter, setAdapterWeights } from './chatCommand';
import { resolveExportSource } from './exportGgufCommand';
import { positiveNumber, readToken, TOKEN_VARIABLE } from './serveToolsCommand';

export const serveUsage = `rollout-studio serve <run|checkpoint|model> [--port N] [--host H] [options]

Serves a model as OpenAI's Chat Completions API: POST /v1/chat/completions (tools, tool_choice,
response_format json_schema, streaming, n, seed, stop, logprobs) and GET /v1/models, for the
openai SDKs and every framework built on them (base URL http://HOST:PORT/v1). The source is
  a run folder (holding run.json)   its checkpoints/best, else its newest checkpoint, with the
                                    run's rollout.templateKwargs and rollout.stop
  a checkpoint folder               full weights, or a LoRA adapter over its base model
  a model folder, rollout-studio:base or a Hub repo id (org/name)
Concurrent requests share decoding steps (batched). Tool calls and JSON answers are constrained
to the request's schemas while they are sampled.
  --port N              the port (default 8000; 0: any free port)
  --host H              the address to listen on (default 127.0.0.1, this machine only)
  --model-name NAME     the model id clients send (default: the source's folder name)
  --base DIR            the base model of a LoRA checkpoint (default: the run's model, else the
                        adapter's base_model_name_or_path)
  --device NAME         cpu, webgpu, cuda or auto (default cpu)
  --max-tokens N        an answer's limit when a request sets none (default 512)
  --context N           prompt plus answer, at most (default: the model's max_position_embeddings)
  --template-kwargs J   chat-template variables for every request, as JSON ('{"enable_thinking":false}')
  --token-file F        require "Authorization: Bearer <token>" (the clients' API key), the token
                        being the first line of F (or set ${TOKEN_VARIABLE}); needed with another --host
  --allow-host NAME     accept NAME in the Host header too (repeatable)
  --allow-origin O      accept requests from the web page origin O (repeatable; default none)
  --max-body-mb N       the largest request body (default ${DEFAULT_LIMITS.maxBodyBytes / 1024 / 1024})
Prints "serving <url>/v1 as <model id>" once listening; Ctrl-C stops it.`;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/** What a run was trained with that its answers depend on: its chat-template variables and stop strings. */
const TrainedRollout = z.looseObject({
  config: z.looseObject({
    rollout: z
      .looseObject({
        templateKwargs: z.record(z.string(), z.unknown()).optional(),
        stop: z.array(z.string()).optional(),
      })
      .optional(),
  }),
});

/**
 * The model folder (and LoRA adapter) a source names: a run's best checkpoint first, served with
 * the run's template variables and stop strings (so it answers as it was trained to).
 */
async function resolveServedSource(source: string, base: string | undefined) {
  const dir = path.resolve(source);
  if (fs.existsSync(dir) && fs.statSync(dir).isDirectory()) {
    const isRun = fs.existsSync(path.join(dir, 'run.json'));
    const best = path.join(dir, 'checkpoints', 'best');
    const fromBest = isRun && fs.existsSync(best);
    const resolved = resolveExportSource(fromBest ? best : source, base);
    if (fromBest && !resolved.adapterDir && !fs.existsSync(path.join(best, 'config.json')))
      throw new UsageError(`${best}: not a model folder`);
    const trained = isRun
      ? readJsonFile(path.join(dir, 'run.json'), TrainedRollout, (m) => new UsageError(m)).config.rollout
      : undefined;
    return { ...resolved, templateKwargs: trained?.templateKwargs, stop: trained?.stop };
  }
  const bar = new DownloadProgressBar(process.stderr);
  const modelDir = await resolveModelPath(source, {
    baseDir: process.cwd(),
    field: 'serve',
    onProgress: (p) => bar.update(p),
  });
  bar.clear();
  return { modelDir, description: source, templateKwargs: undefined, stop: undefined };
}

function templateKwargs(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--template-kwargs: not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError('--template-kwargs: expected a JSON object');
  return value as Record<string, unknown>;
}

function parseServeArgs(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '8000' },
      host: { type: 'string', default: '127.0.0.1' },
      'model-name': { type: 'string' },
      base: { type: 'string' },
      device: { type: 'string', default: 'cpu' },
      'max-tokens': { type: 'string' },
      context: { type: 'string' },
      'template-kwargs': { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      'allow-origin': { type: 'string', multiple: true },
      'max-body-mb': { type: 'string' },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('serve: name one run, checkpoint or model');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port: expected a port number, got "${values.port}"`);
  const token = readToken(values['token-file'], values.token);
  if (!LOOPBACK.has(values.host) && token === undefined)
    throw new UsageError(
      `--host ${values.host} is reachable from other machines; set ${TOKEN_VARIABLE} or give --token-file FILE (clients send it as their API key), or serve on 127.0.0.1`,
    );
  return { values, source: positionals[0], port, token };
}

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, source, port, token } = parseServeArgs(argv);
  const resolved = await resolveServedSource(source, values.base);
  const device = createDevice(await resolveDevice(values.device!));
  const adapter = resolved.adapterDir ? await readAdapter(resolved.adapterDir, resolved.modelDir) : undefined;
  const model = await ModelRuntime.load(
    device,
    resolved.modelDir,
    adapter ? { lora: adapter.lora, quantize: adapter.baseQuantization } : {},
  );
  try {
    if (adapter) await setAdapterWeights(device, model, adapter);
    const template = model.folder.chatTemplate;
    if (!template)
      throw new UsageError(`${resolved.modelDir} has no chat template; it is a base model, not a chat model`);
    const gen = model.folder.generationConfig;
    const modelId = values['model-name'] ?? path.basename(path.resolve(resolved.adapterDir ?? resolved.modelDir));
    const backend = new ServedModel({
      policy: new ModelPolicy(model),
      template,
      format: new HermesFormat(),
      modelId,
      maxContextTokens: Math.floor(positiveNumber(values.context, '--context', model.config.maxPositionEmbeddings)),
      defaultMaxTokens: Math.floor(positiveNumber(values['max-tokens'], '--max-tokens', 512)),
      temperature: gen?.temperature ?? 1,
      topP: gen?.topP ?? 1,
      templateKwargs: templateKwargs(values['template-kwargs']) ?? resolved.templateKwargs,
      stop: resolved.stop,
      token,
      images: modelImages(model.folder),
    });
    const log = (line: string) => process.stderr.write(line + '\n');
    const server = await startChatServer(backend, {
      host: values.host,
      port,
      allowHosts: values['allow-host'] ?? [],
      allowOrigins: values['allow-origin'] ?? [],
      limits: {
        maxBodyBytes: Math.round(
          positiveNumber(values['max-body-mb'], '--max-body-mb', DEFAULT_LIMITS.maxBodyBytes / 1024 / 1024) *
            1024 *
            1024,
        ),
      },
      log,
    });
    const trained = [
      resolved.templateKwargs && !values['template-kwargs']
        ? `template ${JSON.stringify(resolved.templateKwargs)}`
        : '',
      resolved.stop?.length ? `stops ${JSON.stringify(resolved.stop)} kept` : '',
    ].filter(Boolean);
    process.stdout.write(
      `serving ${server.url}/v1 as ${modelId} (${resolved.description}${trained.length ? `; as the run trained: ${trained.join(', ')}` : ''})\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await server.close();
    return 0;
  } finally {
    model.close();
    await device.close();
  }
}
