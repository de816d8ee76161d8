import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import {
  ControlMessage,
  parseWith,
  type TrainerMessage,
  type TrainingEvent,
  type Unstamped,
} from '../../../contract/protocol';
import { RunControl } from '../../../pipeline/training/run/runControl';
import { evaluateCheckpoint } from '../../../pipeline/training/evaluation/evaluateCheckpoint';
import { formatScore } from '../../../pipeline/training/step/taskMetric';
import { TrainingRun } from '../../../pipeline/training/trainingRun';
import { exitBySignal } from '../../../pipeline/training/run/unexpectedExit';
import { resolveDevice } from '../resolveDevice';
import { hasParent, sendToParent } from '../ipc';
import { ProgressLine } from '../progress';
import { UsageError } from '../usage';
import { whenOutputCloses } from '../processEnd';
import { loadConfig } from '../../usercode/loadConfig';

export const trainUsage = `rollout-studio train <config.ts> [options]

Trains an agent as the config describes, recording the run in its run store. A Hub repo id
as model.path is downloaded into the Hugging Face cache first (see rollout-studio pull).
  --steps N          RL steps (default: the config's)
  --device NAME      cpu, webgpu, cuda or auto (default: the config's)
  --run-dir DIR      where to write the run (default: <runsDir>/<time>-<name>)
  --resume RUN_DIR   continue a run from its last checkpoint (same config)
  --record-tools     record every tool call and its result in the run's cassette.jsonl
  --replay-tools SRC answer tool calls from a recording (a run directory or a cassette file)
  --on-miss MODE     a call the recording lacks: error (an observation, default) or live
Ctrl-C (or SIGTERM, SIGHUP) stops cleanly after the current turn, records the run as stopped
and exits with 128 + the signal's number (130 for Ctrl-C); another one, a second or more
later, aborts at once.`;

/** The flags, checked: exactly one config file, --on-miss error or live, --steps a positive integer. */
function parseTrainArgs(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      steps: { type: 'string' },
      device: { type: 'string' },
      'run-dir': { type: 'string' },
      resume: { type: 'string' },
      'record-tools': { type: 'boolean' },
      'replay-tools': { type: 'string' },
      'on-miss': { type: 'string' },
      ipc: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one config file');
  const steps = values.steps === undefined ? undefined : Number(values.steps);
  const onMiss = values['on-miss'];
  if (onMiss !== undefined && onMiss !== 'error' && onMiss !== 'live')
    throw new UsageError(`--on-miss: expected error or live, got "${onMiss}"`);
  const miss: 'error' | 'live' | undefined = onMiss;
  const toolCassette = {
    ...(values['record-tools'] ? { record: true } : {}),
    ...(values['replay-tools'] !== undefined ? { replay: values['replay-tools'] } : {}),
    ...(miss !== undefined ? { onMiss: miss } : {}),
  };
  if (steps !== undefined && (!Number.isInteger(steps) || steps < 1))
    throw new UsageError(`--steps: expected a positive integer, got "${values.steps}"`);
  return { values, configFile: positionals[0], steps, toolCassette };
}

export async function trainCommand(argv: string[]): Promise<number> {
  const { values, configFile, steps, toolCassette } = parseTrainArgs(argv);
  const control = new RunControl();
  const ipc = values.ipc && hasParent();
  // `train … | head -2`: the reader went away; the run stops cleanly, marked stopped, as after Ctrl-C.
  if (!ipc) whenOutputCloses(() => control.stop());
  // Once the extension is gone (its window closed or reloaded) there is nobody to tell: the run
  // stops (see 'disconnect' below) and what it still reports is dropped instead of failing it.
  const send = (message: Unstamped<TrainerMessage>) => {
    if (hasParent()) void sendToParent(message).catch(() => control.stop());
  };
  // Listening before the config loads: a stop or a disconnect during loading is not missed.
  if (ipc) listenToExtension(control, send);
  const loaded = await loadConfig(configFile);
  const device = await resolveDevice(values.device ?? loaded.config.device);
  const progress = ipc ? undefined : new ProgressLine(process.stderr);
  const events = (event: TrainingEvent) => {
    if (ipc) send(event);
    else if (event.type === 'progress') progress!.update(event);
  };
  const stoppedBy = stopOnSignals(control);
  const run = new TrainingRun(loaded, {
    ...(steps !== undefined ? { steps } : {}),
    device,
    ...(values['run-dir'] ? { runDir: values['run-dir'] } : {}),
    ...(values.resume ? { resume: values.resume } : {}),
    ...(Object.keys(toolCassette).length ? { toolCassette } : {}),
    events,
    control,
    log: (line) => {
      progress?.clear();
      if (ipc) send({ type: 'log', level: 'info', message: line });
      else process.stdout.write(line + '\n');
    },
  });
  const result = await run.run();
  progress?.clear();
  const { evalBefore: before, evalAfter: after } = result;
  if (before?.metric !== undefined && before.score !== undefined && after?.score !== undefined) {
    process.stdout.write(
      `held-out ${before.metric}: ${before.score.toFixed(3)} before RL → ${after.score.toFixed(3)} after\n`,
    );
  }
  if (result.run.status === 'failed') return 1;
  // Stopped by a signal: the shell convention 128 + its number, so a supervisor (docker, systemd, timeout) sees why.
  const signal = stoppedBy();
  return signal ? 128 + os.constants.signals[signal] : 0;
}

/**
 * The extension's control messages (pause, resume, stop, the debugger's holds) drive the run; its
 * going away stops it; the run's holds are reported back to it.
 */
function listenToExtension(control: RunControl, send: (message: Unstamped<TrainerMessage>) => void): void {
  process.on('message', (raw) => {
    const message = parseWith(ControlMessage, raw, 'control message from the extension');
    switch (message.type) {
      case 'pause':
        control.pause();
        break;
      case 'resume':
        control.resume();
        break;
      case 'stop':
        control.stop();
        break;
      case 'debug.configure':
        control.configureHolding(message.hold, message.points);
        break;
      case 'debug.release':
        control.release(message.id);
        break;
    }
  });
  // The extension going away (window closed or reloaded) ends the run cleanly. Its ends of
  // stdout and stderr are gone too: a late write must not fail the run (EPIPE) before it is marked stopped.
  process.on('disconnect', () => {
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
    control.stop();
  });
  if (!process.connected) control.stop();
  control.onHold = (id, point, trajectories, metrics) =>
    send({
      type: 'debug.hold',
      id,
      point,
      trajectories,
      ...(metrics ? { metrics } : {}),
    });
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/** How soon after a stop signal the same signal again is taken as the same request, not as "abort". */
const SAME_REQUEST_MS = 1_000;

/**
 * Ctrl-C, and what `docker stop`, systemd, Kubernetes, `timeout` and a closed terminal send
 * (SIGTERM, SIGHUP), stop the run cleanly: the step in flight is dropped, the run is recorded
 * as stopped and its lock released. A second signal ends the process at once (the run is then
 * marked failed, saying so), unless it is the first one again within a second. Returns which
 * signal stopped the run, if one did.
 */
function stopOnSignals(control: RunControl): () => NodeJS.Signals | undefined {
  let first: NodeJS.Signals | undefined;
  let firstAt = 0;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      // The same signal twice within a second is one request: a terminal's Ctrl-C reaches this
      // process and its launcher, which relays it (relaunch.ts); systemd signals both too.
      if (signal === first && performance.now() - firstAt < SAME_REQUEST_MS) return;
      if (first)
        return exitBySignal(signal, `${signal} after ${first}: ended at once; the step in flight was not recorded`);
      first = signal;
      firstAt = performance.now();
      const again = signal === 'SIGINT' ? 'Ctrl-C' : `${signal}`;
      process.stderr.write(
        `\n${signal === 'SIGINT' ? '' : `${signal}: `}stopping after the current turn (${again} again to abort)\n`,
      );
      control.stop();
    });
  }
  return () => first;
}

export const evalUsage = `rollout-studio eval <config.ts> --checkpoint DIR [options]

Rolls out the evaluation rows with a checkpoint and scores them with the config's rewards.
  --checkpoint DIR   a checkpoint folder (full model or LoRA adapter), or a Hub repo id (org/name)
  --data FILE        evaluation rows (default: the config's evaluation.data or data.eval)
  --samples N        evaluate the first N rows
  --temperature T    sampling temperature (default: the config's evaluation.temperature, 0 = greedy)
  --device NAME      cpu, webgpu, cuda or auto
  --record-tools FILE  record every tool call and its result in FILE (a cassette)
  --replay-tools SRC   answer tool calls from a cassette (a file, or a run directory's)
  --on-miss MODE     a call the recording lacks: error (an observation, default) or live
  --json             print the result as JSON`;

export async function evalCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      checkpoint: { type: 'string' },
      data: { type: 'string' },
      samples: { type: 'string' },
      temperature: { type: 'string' },
      device: { type: 'string' },
      'record-tools': { type: 'string' },
      'replay-tools': { type: 'string' },
      'on-miss': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one config file');
  if (!values.checkpoint) throw new UsageError('--checkpoint DIR is required');
  const onMiss = values['on-miss'];
  if (onMiss !== undefined && onMiss !== 'error' && onMiss !== 'live')
    throw new UsageError(`--on-miss: expected error or live, got "${onMiss}"`);
  const miss: 'error' | 'live' | undefined = onMiss;
  const loaded = await loadConfig(positionals[0]);
  const samples = values.samples === undefined ? undefined : Number(values.samples);
  const temperature = values.temperature === undefined ? undefined : Number(values.temperature);
  const progress = new ProgressLine(process.stderr);
  const result = await evaluateCheckpoint(loaded, values.checkpoint, {
    device: await resolveDevice(values.device ?? loaded.config.device),
    events: (event) => {
      if (event.type === 'progress') progress.update(event);
    },
    log: (line) => {
      progress.clear();
      process.stderr.write(line + '\n');
    },
    ...(values.data ? { data: values.data } : {}),
    ...(samples !== undefined ? { samples } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    toolCassette: {
      ...(values['record-tools'] !== undefined ? { record: path.resolve(values['record-tools']) } : {}),
      ...(values['replay-tools'] !== undefined ? { replay: path.resolve(values['replay-tools']) } : {}),
      ...(miss !== undefined ? { onMiss: miss } : {}),
    },
  });
  progress.clear();
  if (values.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  else {
    process.stdout.write(
      `${result.rows} rows: ${result.metric !== undefined && result.score !== undefined ? `${formatScore(result.metric, result.score)}, ` : ''}mean reward ${result.reward.toFixed(3)}, ${result.toolCallsPerTrajectory.toFixed(2)} tool calls per trajectory\n`,
    );
  }
  return 0;
}
