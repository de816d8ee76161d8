import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Tokenizer } from '../../foundations/models/text/tokenizer';
import { PROTOCOL_VERSION, type Algorithm, type MetricsRecord } from '../../contract/protocol';
import { RunStoreWriter } from '../../contract/runstore/writer';
import { ROLLOUT_STUDIO_VERSION } from '../../version';
import { dumpStep, readDumpFile, VerlImportError, VerlMetricsLine } from './dumps';
import { metricsRecords } from './metrics';
import { verlStepRecords } from './dumpTrajectories';

/**
 * `rollout-studio import verl`: a verl run — its per-step rollout dumps and its file logger's
 * metrics — as one of our runs, so the Runs view, the panels and the replay debugger open it.
 * `importNew` takes whatever is new since the last call: step files that are complete (ending in
 * a newline, the same size twice in a row), metrics lines that end in a newline. `--follow` calls
 * it until stopped; the run stays `running` meanwhile and is `finished` (or `stopped`) after.
 */

export interface VerlImportOptions {
  /** verl's trainer.rollout_data_dir. */
  rolloutDataDir: string;
  /** verl's file logger output (VERL_FILE_LOGGER_PATH). */
  metricsFile?: string;
  /** Our run directory to write (must not hold a run yet). */
  runDir: string;
  name: string;
  algorithm?: Algorithm;
  tokenizer?: Tokenizer;
  /** For the run record: where the policy came from. */
  modelPath?: string;
}

export class VerlImport {
  private readonly writer: RunStoreWriter;
  private readonly imported = new Set<number>();
  private readonly sizes = new Map<number, number>();
  private metricsOffset = 0;
  private metricsSteps = new Set<number>();

  constructor(private readonly options: VerlImportOptions) {
    if (!fs.existsSync(options.rolloutDataDir) || !fs.statSync(options.rolloutDataDir).isDirectory()) {
      throw new VerlImportError(
        `${options.rolloutDataDir}: not a folder; give verl's trainer.rollout_data_dir (it holds <step>.jsonl files)`,
      );
    }
    if (options.metricsFile !== undefined && !fs.existsSync(options.metricsFile)) {
      throw new VerlImportError(
        `${options.metricsFile}: no such file; give the file verl's file logger writes (VERL_FILE_LOGGER_PATH)`,
      );
    }
    this.writer = RunStoreWriter.create(options.runDir, {
      protocol: PROTOCOL_VERSION,
      id: path.basename(options.runDir),
      name: options.name,
      status: 'running',
      createdAt: new Date().toISOString(),
      algorithm: options.algorithm ?? 'grpo',
      device: 'verl',
      seed: 0,
      totalSteps: 0,
      model: { path: options.modelPath ?? '', family: 'verl', parameters: 0, trainableParameters: 0 },
      versions: { rolloutStudio: ROLLOUT_STUDIO_VERSION, node: process.versions.node },
      config: {
        source: 'verl',
        rolloutDataDir: path.resolve(options.rolloutDataDir),
        ...(options.metricsFile ? { metricsFile: path.resolve(options.metricsFile) } : {}),
      },
    });
  }

  get runDir(): string {
    return this.writer.dir;
  }

  /**
   * Imports what is new and complete; returns the steps imported. `waitForStable` (following a
   * run verl is still writing): a step file is taken once its size is the same as at the last call.
   */
  importNew(waitForStable = false): number[] {
    const metrics = this.readMetrics();
    const steps: number[] = [];
    const files = fs
      .readdirSync(this.options.rolloutDataDir)
      .map((name) => ({ name, step: dumpStep(name) }))
      .filter((f): f is { name: string; step: number } => f.step !== undefined && !this.imported.has(f.step))
      .sort((a, b) => a.step - b.step);
    for (const { name, step } of files) {
      const file = path.join(this.options.rolloutDataDir, name);
      const size = fs.statSync(file).size;
      const stable = !waitForStable || this.sizes.get(step) === size;
      this.sizes.set(step, size);
      if (size === 0 || !stable || !endsWithNewline(file, size)) continue;
      this.writer.appendTrajectories(step, verlStepRecords(readDumpFile(file), step, this.options.tokenizer));
      this.imported.add(step);
      steps.push(step);
    }
    for (const record of metrics) this.writer.appendMetrics(record);
    const last = Math.max(this.writer.record.lastStep ?? 0, ...steps);
    if (steps.length || metrics.length)
      this.writer.update({
        lastStep: last,
        totalSteps: Math.max(this.writer.record.totalSteps, last, ...this.metricsSteps),
      });
    return steps;
  }

  finish(status: 'finished' | 'stopped' = 'finished'): void {
    this.writer.finish(status);
  }

  /** The import ended on an error: the run says failed, with it, and its lock is released. */
  fail(error: Error): void {
    this.writer.finish('failed', {
      message: error.message,
      ...(this.writer.record.lastStep !== undefined ? { step: this.writer.record.lastStep } : {}),
    });
  }

  /** Imports every `intervalMs` until `signal` aborts; then takes what is left and marks the run finished. */
  async follow(signal: AbortSignal, intervalMs = 2000, onSteps?: (steps: number[]) => void): Promise<void> {
    while (!signal.aborted) {
      const steps = this.importNew(true);
      if (steps.length) onSteps?.(steps);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    const steps = this.importNew();
    if (steps.length) onSteps?.(steps);
    this.finish('finished');
  }

  private readMetrics(): MetricsRecord[] {
    const file = this.options.metricsFile;
    if (!file) return [];
    const text = fs.readFileSync(file, 'utf8');
    const complete = text.lastIndexOf('\n') + 1;
    if (complete <= this.metricsOffset) return [];
    const chunk = text.slice(this.metricsOffset, complete);
    const firstLine = text.slice(0, this.metricsOffset).split('\n').length;
    this.metricsOffset = complete;
    const time = new Date().toISOString();
    return chunk.split('\n').flatMap((line, i) => {
      if (!line.trim()) return [];
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new VerlImportError(`${file}:${firstLine + i}: not valid JSON (${(error as Error).message})`);
      }
      const parsed = VerlMetricsLine.safeParse(value);
      if (!parsed.success)
        throw new VerlImportError(
          `${file}:${firstLine + i}: not a verl file-logger line ({"step": N, "data": {...}}): ${parsed.error.issues.map((x) => `${x.path.join('.') || '(root)'}: ${x.message}`).join('; ')}`,
        );
      this.metricsSteps.add(parsed.data.step);
      return metricsRecords(parsed.data, time);
    });
  }
}

function endsWithNewline(file: string, size: number): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, size - 1);
    return byte[0] === 0x0a;
  } finally {
    fs.closeSync(fd);
  }
}
