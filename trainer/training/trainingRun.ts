import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDevice, type Device } from '../engine/device/device';
import type { ExecutionProviderName } from '../engine/runtime/providers';
import { ModelPolicy } from '../models/generation/generationSession';
import { ModelRuntime } from '../models/runtime';
import type { ChatTemplate } from '../models/chatTemplate';
import { loadJsonlDataset, type Dataset } from '../data/dataset';
import { loadDemonstrations } from '../data/demonstrations';
import type { DatasetRow } from '../data/row';
import { PROTOCOL_VERSION, trajectoryFile, type MetricsRecord, type RunRecord, type TrajectoryRecord, type TrainingEvent } from '../shared/protocol';
import { scoreTrajectories } from '../rewards/score';
import { toRlSample } from '../rl/rewardPlacement';
import { applyKlPenalty } from '../rl/kl';
import type { TrainingSequence } from '../rl/batching';
import { PolicyTrainer } from '../rl/policyTrainer';
import { SftTrainer, type SftSequence } from '../rl/sft';
import { AgentLoop } from '../rollout/agentLoop';
import { toTrajectoryRecord } from '../rollout/record';
import type { RolloutObserver } from '../rollout/observer';
import type { Trajectory, Episode } from '../rollout/trajectory';
import { tokenizeDemonstration } from '../rollout/tokenizeDemonstration';
import { RunStoreReader, RunStoreWriter } from '../shared/runstore';
import { writeFileAtomic } from '../shared/runstore/jsonl';
import { ToolSet } from '../tools/toolSet';
import { McpServers } from '../mcp/servers';
import { Random } from '../util/random';
import { computeAdvantages, scalarAdvantage } from '../rl/advantageEstimators';
import { loadCheckpoint, pruneCheckpoints, saveCheckpoint } from './checkpoint';
import { hashable, type LoadedConfig, type TrainingConfig } from './trainingConfig';
import { RunControl } from './runControl';
import { DataCursor } from './dataCursor';
import { LiveSnapshot } from './liveSnapshot';
import { finiteValues, rolloutMetrics } from './rolloutMetrics';
import { resolveConfigModel } from './modelSource';
import { learningRate } from './schedule';
import { formatScore, scoreKey, taskMetric } from './taskMetric';
import { ROLLOUT_STUDIO_VERSION } from '../version';

export type EventSink = (event: TrainingEvent) => void;

export interface TrainOptions {
  /** Override config.steps. */
  steps?: number;
  device?: ExecutionProviderName;
  /** Where this run's directory goes (default: config.output.runsDir/<id>). */
  runDir?: string;
  /** Continue the run in this directory from its last checkpoint. */
  resume?: string;
  events?: EventSink;
  control?: RunControl;
  /** Progress lines for a terminal. */
  log?: (line: string) => void;
  /** Run the device in this thread (tests). */
  inProcessDevice?: boolean;
}

export interface EvaluationResult {
  /** The task metric's name (see taskMetric.ts) and its mean over the rows; undefined without outcome rewards. */
  metric: string | undefined;
  score: number | undefined;
  reward: number;
  toolCallsPerTrajectory: number;
  rows: number;
}

export interface TrainResult {
  runDir: string;
  run: RunRecord;
  evalBefore?: EvaluationResult;
  evalAfter?: EvaluationResult;
}

function runId(name: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `${stamp}-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'run'}`;
}

function seedFor(seed: number, step: number, salt: number): number {
  return (seed * 1_000_003 + step * 7_919 + salt) % Number.MAX_SAFE_INTEGER;
}

/**
 * A training run from start to end: load the model and data, warm-start with SFT when
 * configured, evaluate, then for each step roll out → score → advantages → update, recording
 * everything in the run store, checkpointing, and obeying the run control.
 */
export class TrainingRun {
  private device!: Device;
  /** The model folder: `model.path` next to the config, or a Hub repo's snapshot in the Hugging Face cache. */
  private modelDir!: string;
  private model!: ModelRuntime;
  private template!: ChatTemplate;
  private tools!: ToolSet;
  /** The config's MCP servers, started in setup and stopped in dispose. */
  private mcp: McpServers | undefined;
  private loop!: AgentLoop;
  /** The same loop with the evaluation's sampling (greedy by default) and no debugger hooks. */
  private evalLoop!: AgentLoop;
  private trainer: PolicyTrainer | undefined;
  private writer!: RunStoreWriter;
  private train!: Dataset;
  private evalData: Dataset | undefined;
  private cursor!: DataCursor;
  private random!: Random;
  private consecutiveNonFinite = 0;
  private startStep = 1;
  readonly control: RunControl;
  private readonly steps: number;
  private readonly emit: EventSink;
  private readonly log: (line: string) => void;
  /** The step's rollout as it stands, for the debugger's holds (set while a rollout runs). */
  private live: LiveSnapshot | undefined;

  constructor(
    private readonly loaded: LoadedConfig,
    private readonly options: TrainOptions = {},
  ) {
    this.control = options.control ?? new RunControl();
    this.steps = options.steps ?? loaded.config.steps;
    this.emit = options.events ?? (() => undefined);
    this.log = options.log ?? (() => undefined);
  }

  private get config(): TrainingConfig {
    return this.loaded.config;
  }

  private progress(step: number, phase: TrainingEvent & { type: 'progress' } extends infer P ? (P extends { phase: infer X } ? X : never) : never, done: number, total: number, tokensPerSecond?: number): void {
    this.emit({ protocol: PROTOCOL_VERSION, type: 'progress', step, phase, done, total, ...(tokensPerSecond !== undefined ? { tokensPerSecond } : {}) });
  }

  async run(): Promise<TrainResult> {
    const started = Date.now();
    try {
      await this.setup();
    } catch (error) {
      // The MCP servers are child processes: a run that never started must not leave them behind.
      await this.mcp?.close();
      throw error;
    }
    let evalBefore: EvaluationResult | undefined;
    let evalAfter: EvaluationResult | undefined;
    try {
      if (this.startStep === 1) {
        if (this.config.sft) await this.warmStart();
        await this.createTrainer();
        if (this.evalData) evalBefore = await this.evaluate(0);
      } else await this.createTrainer(true);
      for (let step = this.startStep; step <= this.steps && !this.control.stopping; step++) {
        await this.control.waitWhilePaused();
        if (this.control.stopping) break;
        const outcome = await this.step(step);
        if (outcome === 'failed') return { runDir: this.writer.dir, run: this.writer.record, evalBefore };
        if (outcome === 'stopped') break;
        if (this.evalData && this.config.evaluation.every > 0 && step % this.config.evaluation.every === 0 && step < this.steps) await this.evaluate(step);
      }
      const last = this.writer.record.lastStep ?? 0;
      if (this.evalData && !this.control.stopping) evalAfter = await this.evaluate(last);
      this.writer.finish(this.control.stopping ? 'stopped' : 'finished');
      this.log(`run ${this.writer.record.status} after step ${last} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${this.writer.dir}`);
      return { runDir: this.writer.dir, run: this.writer.record, evalBefore, evalAfter };
    } catch (error) {
      const e = error as Error;
      this.writer.finish('failed', { message: e.message, ...(e.stack ? { stack: e.stack } : {}), ...(this.writer.record.lastStep !== undefined ? { step: this.writer.record.lastStep } : {}) });
      throw error;
    } finally {
      this.emit({ protocol: PROTOCOL_VERSION, type: 'run.ended', run: this.writer.record });
      await this.dispose();
    }
  }

  private async setup(): Promise<void> {
    const c = this.config;
    const provider = this.options.device ?? (c.device === 'auto' ? 'cpu' : c.device);
    this.device = createDevice(provider, { worker: !this.options.inProcessDevice });
    this.modelDir = await resolveConfigModel(this.loaded, { events: this.emit, log: this.log, signal: this.control.signal });
    this.progress(0, 'load', 0, 1);
    const lora = c.model.lora === false ? undefined : c.model.lora;
    this.model = await ModelRuntime.load(this.device, this.modelDir, { lora, valueHead: c.algorithm.name === 'ppo', seed: c.seed });
    const template = this.model.folder.chatTemplate;
    if (!template) throw new Error(`${this.modelDir}: the tokenizer has no chat template; agents need one`);
    this.template = template;
    this.mcp = await McpServers.open(c.mcpServers, { baseDir: path.dirname(this.loaded.file), log: this.log });
    this.tools = new ToolSet([...c.tools, ...this.mcp.tools]);
    this.train = loadJsonlDataset(this.loaded.resolve(c.data.train), { fields: c.data.fields });
    const evalFile = c.evaluation.data ?? c.data.eval;
    this.evalData = evalFile ? loadJsonlDataset(this.loaded.resolve(evalFile), { fields: c.data.fields }) : undefined;
    const loopOptions = {
      policy: new ModelPolicy(this.model),
      template,
      tools: this.tools,
      budget: c.rollout.budget,
      ...(c.rollout.format ? { format: c.rollout.format } : {}),
      ...(c.rollout.systemPrompt ? { systemPrompt: c.rollout.systemPrompt } : {}),
      ...(c.rollout.templateKwargs ? { templateKwargs: c.rollout.templateKwargs } : {}),
    };
    this.loop = new AgentLoop({ ...loopOptions, sampling: { temperature: c.rollout.temperature, topP: c.rollout.topP, topK: c.rollout.topK }, observer: this.observer() });
    this.evalLoop = new AgentLoop({ ...loopOptions, sampling: { temperature: c.evaluation.temperature, topP: 1, topK: 0 } });
    this.loop.checkRows(this.train.rows);
    if (this.evalData) this.loop.checkRows(this.evalData.rows);
    this.random = Random.fromSeed(c.seed);
    this.cursor = new DataCursor(this.train.rows.length, c.seed);

    if (this.options.resume) await this.reopen(this.options.resume);
    else {
      const name = c.name ?? path.basename(this.loaded.file).replace(/\.config\.ts$|\.ts$/, '');
      const dir = this.options.runDir ?? path.join(this.loaded.resolve(c.output.runsDir), runId(name));
      this.writer = RunStoreWriter.create(dir, {
        protocol: PROTOCOL_VERSION,
        id: path.basename(dir),
        name,
        status: 'running',
        createdAt: new Date().toISOString(),
        algorithm: c.algorithm.name,
        device: provider,
        seed: c.seed,
        totalSteps: this.steps,
        model: this.modelSummary(),
        versions: { rolloutStudio: ROLLOUT_STUDIO_VERSION, node: process.versions.node },
        config: { ...hashable(c), configHash: this.loaded.hash },
        configPath: this.loaded.file,
        ...(taskMetric(c) !== undefined ? { metric: taskMetric(c) } : {}),
      });
    }
    this.emit({ protocol: PROTOCOL_VERSION, type: 'run.started', runDirectory: this.writer.dir, run: this.writer.record });
    this.log(`run ${this.writer.record.id}: ${c.algorithm.name} on ${this.model.config.architecture} (${this.writer.record.model.trainableParameters.toLocaleString()} trainable parameters), ${provider}`);
  }

  private modelSummary(): RunRecord['model'] {
    const c = this.config;
    const parameters = this.model.parameterCount(this.model.baseWeights);
    const extra = this.model.parameterCount(this.model.extraWeights);
    return {
      path: this.modelDir,
      family: this.model.config.family,
      parameters,
      trainableParameters: c.model.lora === false ? parameters + extra : extra,
      ...(c.model.lora !== false ? { lora: { rank: c.model.lora.rank, alpha: c.model.lora.alpha, targets: [...c.model.lora.targets] } } : {}),
    };
  }

  /** Resume: the last checkpoint's weights, optimizer, data position and random state; later records dropped. */
  private async reopen(dir: string): Promise<void> {
    const reader = new RunStoreReader(dir);
    const run = reader.run();
    if (!run.lastCheckpoint) throw new Error(`${dir}: the run has no checkpoint to resume from`);
    const checkpointDir = path.join(dir, run.lastCheckpoint);
    const checkpoint = loadCheckpoint(checkpointDir);
    if (checkpoint.state.configHash !== this.loaded.hash) {
      throw new Error(`${dir} was trained with another config (hash ${checkpoint.state.configHash}, this one is ${this.loaded.hash}); resume with the same config`);
    }
    const step = checkpoint.state.step;
    truncateRunStore(dir, step);
    this.writer = RunStoreWriter.reopen(dir, { ...run, lastStep: step, lastCheckpoint: run.lastCheckpoint, totalSteps: this.steps });
    this.cursor = new DataCursor(this.train.rows.length, this.config.seed, checkpoint.state.data.epoch, checkpoint.state.data.position);
    this.random = Random.fromState(checkpoint.state.random);
    this.consecutiveNonFinite = checkpoint.state.consecutiveNonFinite;
    this.startStep = step + 1;
    this.resumeState = checkpoint.optimizer;
    this.log(`resuming ${run.id} after step ${step} from ${run.lastCheckpoint}`);
  }

  private resumeState: { step: number; tensors: Record<string, import('../engine/runtime/tensors').HostTensor> } | undefined;

  private async createTrainer(resuming = false): Promise<void> {
    const c = this.config;
    const full = c.model.lora === false;
    this.trainer = await PolicyTrainer.create(this.model, {
      policy: {
        clipLow: c.algorithm.clipLow,
        clipHigh: c.algorithm.clipHigh,
        ...(c.algorithm.dualClip !== undefined ? { dualClip: c.algorithm.dualClip } : {}),
        aggregation: c.algorithm.aggregation,
        klCoef: c.algorithm.kl.mode === 'loss' ? c.algorithm.kl.coef : 0,
        klEstimator: c.algorithm.kl.estimator,
        entropyCoef: c.algorithm.entropyCoef,
      },
      ...(c.algorithm.name === 'ppo' ? { value: { coef: c.algorithm.valueCoef, clip: c.algorithm.valueClip, aggregation: c.algorithm.aggregation } } : {}),
      adamw: { beta1: c.optimization.beta1, beta2: c.optimization.beta2, eps: c.optimization.eps, weightDecay: c.optimization.weightDecay, maxGradNorm: c.optimization.maxGradNorm },
      temperature: c.rollout.temperature,
      miniBatches: c.algorithm.miniBatches,
      epochs: c.algorithm.epochs,
      microBatchSize: c.optimization.microBatchSize,
      fullFineTuning: full,
      reference: c.algorithm.kl.coef > 0,
    });
    if (resuming && this.resumeState) await this.trainer.optimizer.restore(this.resumeState);
    if (!resuming && !this.options.resume) await this.checkpoint(0);
  }

  /** A demonstrations file as token sequences, each laid out as the agent loop would; errors name the file, line and field. */
  private async readDemonstrations(file: string): Promise<SftSequence[]> {
    const demonstrations = await loadDemonstrations(file, { tools: this.tools });
    return demonstrations.map(({ messages, source }) => {
      const tokens = tokenizeDemonstration(this.template, messages, { tools: this.tools.specs(), ...(this.config.rollout.templateKwargs ? { kwargs: this.config.rollout.templateKwargs } : {}), origin: `${source.file}:${source.line}` });
      return { ids: tokens.ids, mask: Uint8Array.from(tokens.mask) };
    });
  }

  /** Supervised warm start on the demonstrations (a list of files: in order); metrics recorded with kind `sft`. */
  private async warmStart(): Promise<void> {
    const sft = this.config.sft!;
    const stages: SftSequence[][] = [];
    for (const file of typeof sft.data === 'string' ? [sft.data] : sft.data) stages.push(await this.readDemonstrations(this.loaded.resolve(file)));
    const full = this.config.model.lora === false;
    const trainer = await SftTrainer.create(this.model, {
      adamw: { beta1: this.config.optimization.beta1, beta2: this.config.optimization.beta2, eps: this.config.optimization.eps, weightDecay: this.config.optimization.weightDecay, maxGradNorm: this.config.optimization.maxGradNorm },
      batchSize: sft.batchSize,
      microBatchSize: this.config.optimization.microBatchSize,
      fullFineTuning: full,
    });
    // One learning-rate schedule over the whole curriculum; step numbers run on across files and epochs.
    const total = stages.reduce((n, sequences) => n + Math.ceil(sequences.length / sft.batchSize) * sft.epochs, 0);
    const schedule = { lr: sft.lr, warmupSteps: sft.warmupSteps, schedule: 'cosine' as const, minLrRatio: 0.1 };
    try {
      for (const sequences of stages) {
        for (let epoch = 0; epoch < sft.epochs && !this.control.stopping; epoch++) {
          await trainer.epoch(sequences, (s) => learningRate(schedule, s, total), this.random, (s, loss) => {
            this.progress(0, 'sft', s, total);
            const record: MetricsRecord = { step: s, time: new Date().toISOString(), kind: 'sft', ...finiteValues({ 'loss/sft': loss, lr: learningRate(schedule, s - 1, total) }) };
            this.writer.appendMetrics(record);
            this.emit({ protocol: PROTOCOL_VERSION, type: 'metrics', record });
            if (s % Math.max(1, Math.floor(total / 10)) === 0 || s === total) this.log(`sft step ${s}/${total}: loss ${loss.toFixed(4)}`);
          });
        }
      }
    } finally {
      await trainer.release();
    }
  }

  /** Greedy (by default) rollouts of the held-out rows; recorded as `eval` metrics at `step`. */
  async evaluate(step: number): Promise<EvaluationResult> {
    const data = this.evalData!;
    const rows = data.rows.slice(0, this.config.evaluation.samples ?? data.rows.length);
    const episodes: Episode[] = rows.map((row, i) => ({ row, group: i, sample: 0 }));
    this.progress(step, 'eval', 0, episodes.length);
    const trajectories = await this.evalLoop.run(episodes, { seed: seedFor(this.config.seed, step, 17) });
    const rewards = await scoreTrajectories(trajectories, this.config.rewards, this.tools);
    this.writer.writeEvaluation(step, trajectories.map((t, i) => toTrajectoryRecord(t, rewards.trajectories[i], { step, tokenizer: this.model.tokenizer })));
    const metric = taskMetric(this.config);
    const metrics = rolloutMetrics(trajectories, rewards, metric);
    const result: EvaluationResult = {
      metric,
      score: metric === undefined ? undefined : metrics[scoreKey(metric)],
      reward: metrics['reward/mean'],
      toolCallsPerTrajectory: metrics['tools/calls_per_trajectory'],
      rows: rows.length,
    };
    const record: MetricsRecord = { step, time: new Date().toISOString(), kind: 'eval', ...finiteValues(metrics) };
    this.writer.appendMetrics(record);
    this.emit({ protocol: PROTOCOL_VERSION, type: 'metrics', record });
    this.progress(step, 'eval', episodes.length, episodes.length);
    const score = result.metric !== undefined && result.score !== undefined ? `${formatScore(result.metric, result.score)}, ` : '';
    this.log(`eval at step ${step} over ${rows.length} rows: ${score}reward ${result.reward.toFixed(3)}, ${result.toolCallsPerTrajectory.toFixed(2)} tool calls per trajectory`);
    return result;
  }

  private async step(step: number): Promise<'ok' | 'failed' | 'stopped'> {
    const c = this.config;
    const t0 = performance.now();
    const rows = this.cursor.take(c.rollout.promptsPerStep).map((i) => this.train.rows[i]);
    const episodes: Episode[] = rows.flatMap((row, g) => Array.from({ length: c.algorithm.groupSize }, (_, k) => ({ row, group: g, sample: k })));
    this.progress(step, 'rollout', 0, episodes.length);
    this.live = new LiveSnapshot(step, this.model.tokenizer);
    let trajectories: Trajectory[];
    try {
      trajectories = await this.loop.run(episodes, { seed: seedFor(c.seed, step, 1), signal: this.control.signal });
    } catch (error) {
      // A stop aborts the rollout: the step in flight is dropped, the steps before it stay complete.
      if (this.control.stopping) return 'stopped';
      throw error;
    } finally {
      this.live = undefined;
    }
    const generated = trajectories.reduce((n, t) => n + t.mask.reduce((a, m) => a + m, 0), 0);
    const t1 = performance.now();
    this.progress(step, 'rollout', episodes.length, episodes.length, generated / ((t1 - t0) / 1000));

    this.progress(step, 'reward', 0, trajectories.length);
    const rewards = await scoreTrajectories(trajectories, c.rewards, this.tools);
    const samples = trajectories.map((t, i) => toRlSample(t, rewards.trajectories[i]));
    const t2 = performance.now();

    this.progress(step, 'update', 0, 1);
    // The loss mask: the generated tokens, or (the ablation) every token after the prompt.
    const wholeResponse = c.algorithm.lossMask === 'response';
    const sequences = trajectories.map((t) => ({ ids: t.ids, mask: wholeResponse ? Uint8Array.from(t.ids, (_, k) => (k >= t.promptLength ? 1 : 0)) : Uint8Array.from(t.mask) }));
    if (wholeResponse) samples.forEach((s, i) => (s.mask = sequences[i].mask));
    const needReference = c.algorithm.kl.coef > 0;
    const extra = await this.trainer!.scoreReferenceAndValues(sequences, { reference: needReference, values: c.algorithm.name === 'ppo', policy: wholeResponse });
    let klMean: number | undefined;
    if (extra.reference) {
      let sum = 0;
      let n = 0;
      trajectories.forEach((t, i) => t.mask.forEach((m, k) => {
        if (m) {
          sum += t.logprobs[k] - extra.reference![i][k];
          n++;
        }
      }));
      klMean = n ? sum / n : 0;
      if (c.algorithm.kl.mode === 'reward') {
        samples.forEach((s, i) => (s.rewards = applyKlPenalty(s.rewards, s.mask, Float32Array.from(trajectories[i].logprobs), extra.reference![i], c.algorithm.kl.coef, c.algorithm.kl.estimator)));
      }
    }
    if (extra.values) samples.forEach((s, i) => (s.values = extra.values![i]));
    const advantages = computeAdvantages(c.algorithm, samples);
    const batch: TrainingSequence[] = trajectories.map((t, i) => ({
      ids: t.ids,
      mask: sequences[i].mask,
      // Tokens the policy did not sample have no sampling log-prob: the current policy's stands in (ratio 1 at the first pass).
      logprobs: wholeResponse ? Float32Array.from(t.logprobs, (lp, k) => (t.mask[k] ? lp : extra.policy![i][k])) : Float32Array.from(t.logprobs),
      advantages: advantages.advantages[i],
      ...(advantages.returns ? { returns: advantages.returns[i], values: extra.values![i] } : {}),
      ...(extra.reference ? { refLogprobs: extra.reference[i] } : {}),
    }));
    const schedule = { lr: c.optimization.lr, warmupSteps: c.optimization.warmupSteps, schedule: c.optimization.schedule, minLrRatio: c.optimization.minLrRatio };
    const lr = learningRate(schedule, step - 1, this.steps);
    const policyWeight = c.algorithm.name === 'ppo' && step <= c.algorithm.criticWarmupSteps ? 0 : 1;
    const update = await this.trainer!.update(batch, lr, this.random, policyWeight);
    const t3 = performance.now();
    const trained = batch.reduce((n, s) => n + s.ids.length, 0) * c.algorithm.epochs;

    const records: TrajectoryRecord[] = trajectories.map((t, i) =>
      toTrajectoryRecord(t, rewards.trajectories[i], {
        step,
        tokenizer: this.model.tokenizer,
        advantages: advantages.advantages[i],
        ...(() => {
          const a = scalarAdvantage(advantages.advantages[i], t.mask);
          return a !== undefined ? { advantage: a } : {};
        })(),
      }),
    );
    this.writer.appendTrajectories(step, records);

    const allSkipped = update.steps > 0 && update.skipped === update.steps;
    this.consecutiveNonFinite = allSkipped ? this.consecutiveNonFinite + 1 : 0;
    const metric = taskMetric(c);
    const values: Record<string, number> = {
      ...rolloutMetrics(trajectories, rewards, metric),
      'loss/total': update.loss,
      'loss/policy': update.policyLoss,
      'clip/fraction': update.clipFraction,
      'kl/approx_update': update.approxKl,
      'grad/norm': update.gradNorm,
      lr,
      // Tokens the policy loss covers (the loss mask's ones): the generated tokens, or every response token in the ablation.
      'tokens/in_loss': batch.reduce((n, s) => n + s.mask.reduce((a, m) => a + m, 0), 0),
      'throughput/rollout_tokens_per_s': generated / ((t1 - t0) / 1000),
      'throughput/update_tokens_per_s': trained / ((t3 - t2) / 1000),
      'time/rollout_s': (t1 - t0) / 1000,
      'time/reward_s': (t2 - t1) / 1000,
      'time/update_s': (t3 - t2) / 1000,
      'time/step_s': (t3 - t0) / 1000,
      ...(klMean !== undefined ? { 'kl/mean': klMean } : {}),
      ...(update.klLoss !== undefined ? { 'loss/kl': update.klLoss } : {}),
      ...(update.entropy !== undefined ? { 'loss/entropy': update.entropy } : {}),
      ...(update.valueLoss !== undefined ? { 'loss/value': update.valueLoss } : {}),
    };
    const record: MetricsRecord = {
      step,
      time: new Date().toISOString(),
      kind: 'train',
      ...finiteValues(values),
      ...(update.skipped ? { skipped: { reason: `${update.skipped} of ${update.steps} updates had a non-finite loss or gradient and were skipped` } } : {}),
    };
    this.writer.appendMetrics(record);
    this.emit({ protocol: PROTOCOL_VERSION, type: 'metrics', record });
    this.progress(step, 'update', 1, 1, trained / ((t3 - t2) / 1000));
    this.log(
      `step ${step}/${this.steps}: reward ${values['reward/mean'].toFixed(3)}` +
        (metric !== undefined && values[scoreKey(metric)] !== undefined ? `, ${formatScore(metric, values[scoreKey(metric)])}` : '') +
        `, ${values['tools/calls_per_trajectory'].toFixed(2)} calls/trajectory, loss ${update.loss.toFixed(4)}, ${(values['time/step_s']).toFixed(1)} s` +
        (update.skipped ? ` — ${update.skipped} non-finite update(s) skipped` : ''),
    );

    if (this.consecutiveNonFinite >= c.nonFinite.maxConsecutive) {
      const message = `${this.consecutiveNonFinite} steps in a row had only non-finite losses or gradients; stopped. The last good checkpoint is ${this.writer.record.lastCheckpoint ?? 'none'}.`;
      this.writer.completeStep(step);
      this.emit({ protocol: PROTOCOL_VERSION, type: 'step.completed', step });
      this.writer.finish('failed', { message, step });
      this.log(message);
      return 'failed';
    }
    const due = c.output.checkpointEvery > 0 && (step % c.output.checkpointEvery === 0 || step === this.steps);
    if (due && !allSkipped) await this.checkpoint(step);
    else this.writer.completeStep(step);
    this.emit({ protocol: PROTOCOL_VERSION, type: 'step.completed', step });
    // The debugger's `update` point: the step is done and recorded; it sees the scored records and the metrics.
    await this.control.point({ step, trajectory: 0, kind: 'update' }, () => ({ trajectories: records.map((r) => ({ ...r, tokens: { ids: '', pieces: [], mask: r.tokens.mask, logprobs: '' } })), metrics: record }));
    return 'ok';
  }

  private async checkpoint(step: number): Promise<void> {
    this.progress(step, 'checkpoint', 0, 1);
    const relative = await saveCheckpoint(this.writer.dir, this.model, this.trainer!.optimizer, {
      step,
      random: this.random.state() as [number, number, number, number],
      data: { epoch: this.cursor.epoch, position: this.cursor.position },
      consecutiveNonFinite: this.consecutiveNonFinite,
      configHash: this.loaded.hash,
    });
    pruneCheckpoints(this.writer.dir, this.config.output.keepCheckpoints);
    this.writer.completeStep(step, relative);
    this.progress(step, 'checkpoint', 1, 1);
  }

  /** Hooks into the agent loop: pause at turn boundaries, hold at stop points for the debugger, report rollout progress. */
  private observer(): RolloutObserver {
    const snapshot = () => ({ trajectories: this.live?.records() ?? [] });
    const step = () => this.live?.step ?? 0;
    return {
      rolloutStarted: (trajectories) => this.live?.rolloutStarted(trajectories),
      turnGenerated: async (trajectory, turn) => this.control.point({ step: step(), trajectory: trajectory.index, kind: 'turn', turn: turn.index }, snapshot),
      beforeToolCall: async (trajectory, call) => {
        this.live?.callAnnounced(trajectory.index, call);
        await this.control.point({ step: step(), trajectory: trajectory.index, kind: 'call', turn: call.turnIndex, call: call.index }, snapshot);
      },
      toolCallFinished: async (trajectory, call) => {
        this.live?.callFinished(trajectory.index, call);
        await this.control.point({ step: step(), trajectory: trajectory.index, kind: 'result', turn: call.turnIndex, call: call.index }, snapshot);
      },
      trajectoryFinished: async (trajectory) => {
        this.live?.trajectoryEnded(trajectory.index);
        if (this.live) {
          const { ended, total } = this.live.progress;
          this.progress(this.live.step, 'rollout', ended, total, this.live.tokensPerSecond());
        }
        await this.control.point({ step: step(), trajectory: trajectory.index, kind: 'end' }, snapshot);
      },
    };
  }

  private async dispose(): Promise<void> {
    await this.mcp?.close();
    await this.trainer?.release().catch(() => undefined);
    this.model?.close();
    await this.device?.close();
  }
}

/** Drop the records of steps after `step` (a resume recomputes them). */
function truncateRunStore(dir: string, step: number): void {
  const reader = new RunStoreReader(dir);
  for (const s of reader.steps()) if (s > step) fs.rmSync(path.join(dir, trajectoryFile('train', s)));
  for (const s of reader.evaluations()) if (s > step) fs.rmSync(path.join(dir, trajectoryFile('eval', s)));
  const metricsFile = path.join(dir, 'metrics.jsonl');
  if (fs.existsSync(metricsFile)) {
    const kept = reader.metrics().records.filter((r) => (r.kind === 'sft' ? true : r.step <= step));
    writeFileAtomic(metricsFile, kept.map((r) => JSON.stringify(r)).join('\n') + (kept.length ? '\n' : ''));
  }
}

export type { DatasetRow };
