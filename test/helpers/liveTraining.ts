/**
 * Running the real trainer from tests: its TypeScript sources under tsx (so a test never runs
 * a stale build), started exactly as the extension starts its bundle — same arguments, same
 * IPC channel — plus small probes for what a test must check afterwards.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TrainerLaunch } from '../../extension/trainerProcess';
import { RunRecord } from '#trainer/contract/protocol';
import { parseWith } from '#trainer/contract/protocol/parse';

const ROOT = path.resolve(__dirname, '../..');

/** The trainer CLI from source: `node --import <tsx> trainer/bridges/cli/main.ts …` (absolute, so any cwd works). */
export function sourceTrainerLaunch(): TrainerLaunch {
  return {
    runtime: { command: process.execPath, env: { ...process.env }, description: "the test runner's Node with tsx" },
    cliPath: path.join(ROOT, 'trainer/bridges/cli/main.ts'),
    execArgv: ['--import', pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href],
  };
}

/** Is a process with this id still there? */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Wait until the process is gone (fails after `timeoutMs`). */
export async function processGone(pid: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is still running after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** run.json of a run directory, validated. */
export function readRun(runDirectory: string): RunRecord {
  const file = path.join(runDirectory, 'run.json');
  return parseWith(RunRecord, JSON.parse(fs.readFileSync(file, 'utf8')), file);
}

/** The runs a workspace's config wrote (its default runs folder), newest last. */
export function runsOf(workspace: string): string[] {
  const root = path.join(workspace, '.rollout', 'runs');
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .sort()
    .map((d) => path.join(root, d));
}
