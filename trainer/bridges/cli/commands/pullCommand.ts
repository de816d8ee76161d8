import { parseArgs } from 'node:util';
import { hubSettings, isRepoId, pullModel } from '../../../foundations/models/hub';
import { describePull } from '../../../pipeline/training/config/modelSource';
import { DownloadProgressBar } from '../downloadProgress';
import { UsageError } from '../usage';

export const pullUsage = `rollout-studio pull <org/name> [--revision R]

Downloads a model from the Hugging Face Hub into the Hugging Face cache — only what a model
needs: config.json, generation_config.json, the tokenizer's files, the chat template and the
safetensors weights — and prints its folder. The cache is the one Python's huggingface_hub
uses: a model either side downloaded is not downloaded again. A config's model.path, --model,
--checkpoint and --tokenizer accept the repo id too (and pull it on first use).
  --revision R   a branch, tag or commit hash (default main)
Environment: HF_HUB_CACHE or HF_HOME (where the cache is; default ~/.cache/huggingface/hub),
HF_TOKEN (gated and private models), HF_HUB_OFFLINE=1 (use the cache only), HF_ENDPOINT
(another Hub server). An interrupted download resumes where it stopped.`;

export async function pullCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { revision: { type: 'string' } },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one repo id (org/name)');
  const repo = positionals[0];
  if (!isRepoId(repo))
    throw new UsageError(`"${repo}" is not a Hugging Face repo id: expected org/name, e.g. Qwen/Qwen3-0.6B`);
  const bar = new DownloadProgressBar(process.stderr);
  const stopper = new AbortController();
  process.once('SIGINT', () => {
    bar.clear();
    process.stderr.write('\nstopped; the part downloaded is kept and the next pull resumes it\n');
    stopper.abort();
    process.exit(130);
  });
  const started = Date.now();
  const result = await pullModel(repo, {
    ...(values.revision ? { revision: values.revision } : {}),
    onProgress: (p) => bar.update(p),
    signal: stopper.signal,
  });
  bar.clear();
  process.stdout.write(`${describePull(result, (Date.now() - started) / 1000)}\n`);
  if (result.downloaded.length === 0 && !result.offline)
    process.stdout.write(`(nothing to download; the cache is ${hubSettings().cacheDir})\n`);
  return 0;
}
