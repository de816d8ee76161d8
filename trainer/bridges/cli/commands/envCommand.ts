import { parseArgs } from 'node:util';
import {
  ExecutionProviderName,
  type ProviderCheck,
  type TrainerMessage,
  type Unstamped,
} from '../../../contract/protocol';
import { loadOnnxRuntime } from '../../../foundations/engine/runtime/onnxruntime';
import { describeWebGpuAdapter, runProviderCheck } from '../../environment/providerCheck';
import { collectEnvironmentReport, formatEnvironmentReport } from '../../environment/report';
import { UsageError } from '../usage';
import { sendToParent } from '../ipc';

export const envUsage = `rollout-studio env [--json]

Checks this machine for training: the runtime, onnxruntime-node, and each execution
provider (cpu, webgpu, cuda) by creating a session and running a small graph on it.
  --json     print the report as one JSON object`;

export async function envCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean', default: false },
      ipc: { type: 'boolean', default: false },
      probe: { type: 'string' },
    },
    strict: true,
  });
  if (values.probe !== undefined) return probeCommand(values.probe);
  const report = await collectEnvironmentReport();
  if (values.ipc) {
    const message: Unstamped<TrainerMessage> = { type: 'environment.report', report };
    await sendToParent(message);
  } else if (values.json) {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } else {
    process.stdout.write(formatEnvironmentReport(report) + '\n');
  }
  return 0;
}

/** Internal: `env --probe <provider>` runs one provider check and prints it as one JSON line. */
async function probeCommand(name: string): Promise<number> {
  const provider = ExecutionProviderName.safeParse(name);
  if (!provider.success)
    throw new UsageError(`--probe: expected one of ${ExecutionProviderName.options.join(', ')}, got "${name}"`);
  const loaded = loadOnnxRuntime();
  let check: ProviderCheck;
  if ('error' in loaded) check = { name: provider.data, available: false, reason: loaded.error };
  else {
    check = await runProviderCheck(loaded.ort, provider.data);
    if (check.available && provider.data === 'webgpu') {
      const adapter = await describeWebGpuAdapter();
      check = 'error' in adapter ? { ...check, error: adapter.error } : { ...check, adapter };
    }
  }
  process.stdout.write(JSON.stringify(check) + '\n');
  return 0;
}
