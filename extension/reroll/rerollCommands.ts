/**
 * "Re-roll From Here": at a stop in a replayed run (or from the Trajectories panel), generate the
 * rest of the trajectory again — with a checkpoint, temperature and number of samples the user
 * picks, after an optional edit of the tool result in an ordinary editor (undo works as anywhere)
 * — by running the trainer's `rollout-studio reroll` (the extension never loads onnxruntime), and
 * show the original beside each branch in a diff editor over `rollout:` documents. Branches are
 * in the run store (`branches/`), so they are still there after a reload.
 */
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { z } from 'zod';
import {
  BranchSet,
  parseWith,
  STOP_POINT_REQUEST,
  StopPointBody,
  type TrajectoryRecord,
} from '../../trainer/contract/protocol';
import { RunStoreReader } from '../../trainer/contract/runstore/reader';
import { resolveTrainerRuntime } from '../trainerProcess';
import { execFileWorkspaceCode, type WorkspaceCodeUse } from '../workspaceCode';
import { requireTrust } from '../workspaceTrust';
import { rerollPoint, rerollPoints, type RerollPoint } from './rerollPoint';
import { branchesChanged } from './branchEvents';
import { replayBranch, showBranches, showBranchOf } from './branchViews';

/** Which trajectory to re-roll (the Trajectories panel's detail), and optionally every answer the command would ask for (tests, scripts). */
export const RerollFromHereArgs = z.object({
  runDirectory: z.string().min(1),
  step: z.number().int().nonnegative(),
  index: z.number().int().nonnegative(),
  /** A timeline point (as the debugger's); absent: ask which point. */
  point: z.object({ phase: z.string(), turn: z.number().int(), call: z.number().int() }).optional(),
  checkpoint: z.string().optional(),
  temperature: z.number().min(0).optional(),
  samples: z.number().int().positive().optional(),
  /** The edited result of the call the cut stands before (skips the editor). */
  editedResult: z.string().optional(),
});
export type RerollFromHereArgs = z.infer<typeof RerollFromHereArgs>;

const RerollOutput = BranchSet.extend({ file: z.string() });

interface Target {
  runDirectory: string;
  step: number;
  index: number;
  record: TrajectoryRecord;
  point: RerollPoint;
}

interface Settings {
  checkpoint?: string;
  temperature: number;
  samples: number;
}

/** A re-roll waiting for the user to finish editing a tool result (keyed by the document's URI). */
interface PendingEdit {
  target: Target;
  settings: Settings;
}

const EDITING_CONTEXT = 'rolloutStudio.rerollEditing';

/** What the commands share: the re-rolls waiting for an edited result, and running one. */
interface RerollState {
  /** By the edited document's URI. */
  pending: Map<string, PendingEdit>;
  /** Sets the context key that shows the editor's re-roll button while the active editor is a pending edit. */
  updateEditing: () => void;
  run: (target: Target, settings: Settings, editedResult?: string) => Promise<void>;
}

/** At a stop before a call: edit the tool result first, or re-roll as it is; undefined when dismissed. */
async function askEditFirst(target: Target): Promise<boolean | undefined> {
  const choice = await vscode.window.showQuickPick(
    [
      {
        label: 'Edit the tool result first',
        description: 'in an editor; then run "Re-roll With Edited Result"',
        edit: true,
      },
      {
        label: 'Re-roll as it is',
        description: 'the calls run again (or come from the run’s recording)',
        edit: false,
      },
    ],
    { title: `Re-roll from ${target.point.label}` },
  );
  return choice?.edit;
}

/**
 * What a re-roll runs: the trainer loads the config the run's run.json names (its tools and
 * rewards with it). Read without trusting it — a planted run.json is how a repository would
 * make Re-roll run its code — only to say what would run.
 */
function rerollUse(runDirectory: string | undefined): WorkspaceCodeUse {
  let config = `the config named in ${runDirectory ? path.join(runDirectory, 'run.json') : "the run's run.json"}`;
  try {
    if (runDirectory) config = `the config ${new RunStoreReader(runDirectory).run().configPath ?? config}`;
  } catch {
    // An unreadable run.json: the generic words above.
  }
  return { action: 'Re-roll', runs: config };
}

/** Re-roll From Here: the target and settings, then a re-roll now or after an edit of the tool result. */
async function rerollFromHere(state: RerollState, raw: unknown): Promise<void> {
  // Before any quick pick: the panel offers Re-roll… in Restricted Mode only when it did not hear of it yet.
  const named = RerollFromHereArgs.safeParse(raw);
  if (!requireTrust(rerollUse(named.success ? named.data.runDirectory : undefined))) return;
  try {
    const target = await rerollTarget(raw);
    if (!target) return;
    const given = raw === undefined ? undefined : RerollFromHereArgs.parse(raw);
    const settings = await askSettings(target, given);
    if (!settings) return;
    if (target.point.cut.at !== 'call' || given?.editedResult !== undefined)
      return await state.run(target, settings, given?.editedResult);
    const edit = await askEditFirst(target);
    if (edit === undefined) return;
    if (!edit) return await state.run(target, settings);
    const document = await openResultEditor(target);
    state.pending.set(document.uri.toString(), { target, settings });
    state.updateEditing();
    void vscode.window
      .showInformationMessage(
        `Edit the result the policy will see, then re-roll (the editor's ▷ button or "Rollout Studio: Re-roll With Edited Result").`,
        'Re-roll With Edited Result',
      )
      .then((pick) => pick && vscode.commands.executeCommand('rolloutStudio.rerollWithEditedResult', document.uri));
  } catch (error) {
    void vscode.window.showErrorMessage(`Re-roll From Here: ${(error as Error).message}`);
  }
}

/** Re-roll With Edited Result: the pending re-roll of the document (the active editor's when none is named). */
async function rerollWithEditedResult(state: RerollState, uri: vscode.Uri | undefined): Promise<void> {
  const document = uri
    ? vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString())
    : vscode.window.activeTextEditor?.document;
  const edit = document && state.pending.get(document.uri.toString());
  if (!document || !edit) {
    void vscode.window.showErrorMessage(
      'Re-roll With Edited Result: the active editor is not a tool result being edited for a re-roll (start with "Re-roll From Here").',
    );
    return;
  }
  state.pending.delete(document.uri.toString());
  state.updateEditing();
  try {
    await state.run(edit.target, edit.settings, document.getText());
  } catch (error) {
    void vscode.window.showErrorMessage(`Re-roll: ${(error as Error).message}`);
  }
}

export function registerReroll(context: vscode.ExtensionContext, log: vscode.OutputChannel): void {
  const changed = branchesChanged;
  const pending = new Map<string, PendingEdit>();
  const state: RerollState = {
    pending,
    updateEditing: () =>
      void vscode.commands.executeCommand(
        'setContext',
        EDITING_CONTEXT,
        pending.has(vscode.window.activeTextEditor?.document.uri.toString() ?? ''),
      ),
    run: async (target, settings, editedResult) => {
      const set = await runReroll(context, log, target, settings, editedResult);
      if (!set) return;
      changed.fire({ runDirectory: target.runDirectory, step: target.step, index: target.index });
      await showBranches(target.runDirectory, set);
    },
  };
  context.subscriptions.push(
    changed,
    vscode.window.onDidChangeActiveTextEditor(state.updateEditing),
    vscode.workspace.onDidCloseTextDocument((document) => pending.delete(document.uri.toString())),
    vscode.commands.registerCommand('rolloutStudio.rerollFromHere', (raw?: unknown) => rerollFromHere(state, raw)),
    vscode.commands.registerCommand('rolloutStudio.rerollWithEditedResult', (uri?: vscode.Uri) =>
      rerollWithEditedResult(state, uri),
    ),
    vscode.commands.registerCommand('rolloutStudio.replayBranch', (raw: unknown) => replayBranch(raw)),
    vscode.commands.registerCommand('rolloutStudio.showBranch', (raw: unknown) => showBranchOf(raw)),
  );
}

/** From the panel's arguments, or from the active rollout debug session's stop. */
async function rerollTarget(raw: unknown): Promise<Target | undefined> {
  let where: {
    runDirectory: string;
    step: number;
    index: number;
    point?: { phase: string; turn: number; call: number } | undefined;
  };
  if (raw !== undefined) where = RerollFromHereArgs.parse(raw);
  else {
    const session = vscode.debug.activeDebugSession;
    if (session?.type !== 'rollout')
      throw new Error(
        'no rollout debug session is active: replay a run in the debugger and stop where you want to re-roll from (or use the Trajectories panel)',
      );
    const item = vscode.debug.activeStackItem;
    const threadId = item && 'threadId' in item ? item.threadId : undefined;
    const stop = parseWith(
      StopPointBody,
      await session.customRequest(STOP_POINT_REQUEST, threadId !== undefined ? { threadId } : {}),
      'the debug session’s stop point',
    );
    if (stop.mode !== 'replay')
      throw new Error(
        're-rolls start from recorded steps: replay the run (Replay Run in Debugger) once this step is recorded',
      );
    where = {
      runDirectory: stop.runDirectory,
      step: stop.step,
      index: stop.index,
      point: { phase: stop.phase, turn: stop.turn, call: stop.call },
    };
  }
  const record = new RunStoreReader(where.runDirectory)
    .trajectories(where.step)
    .records.find((t) => t.index === where.index);
  if (!record) throw new Error(`step ${where.step} of ${where.runDirectory} has no recorded trajectory ${where.index}`);
  let point: RerollPoint;
  if (where.point) point = rerollPoint(record, where.point);
  else {
    const picked = await vscode.window.showQuickPick(
      rerollPoints(record).map((p) => ({ label: p.label, point: p })),
      { title: `Re-roll trajectory #${where.index} of step ${where.step} from…` },
    );
    if (!picked) return undefined;
    point = picked.point;
  }
  return { runDirectory: where.runDirectory, step: where.step, index: where.index, record, point };
}

async function askSettings(target: Target, given: RerollFromHereArgs | undefined): Promise<Settings | undefined> {
  const checkpoint = given?.checkpoint !== undefined ? { value: given.checkpoint } : await askCheckpoint(target);
  if (!checkpoint) return undefined;
  const run = new RunStoreReader(target.runDirectory).run();
  const runTemperature = (run.config['rollout'] as { temperature?: number } | undefined)?.temperature ?? 1;
  const temperature =
    given?.temperature ?? (await askNumber('Sampling temperature (0: greedy)', String(runTemperature), 0));
  if (temperature === undefined) return undefined;
  const samples = given?.samples ?? (await askNumber('How many branches?', '1', 1, true));
  if (samples === undefined) return undefined;
  return { ...(checkpoint.value !== undefined ? { checkpoint: checkpoint.value } : {}), temperature, samples };
}

async function askCheckpoint(target: Target): Promise<{ value: string | undefined } | undefined> {
  const kept = new RunStoreReader(target.runDirectory).checkpoints().map((c) => path.basename(c));
  const hasBest = fs.existsSync(path.join(target.runDirectory, 'checkpoints', 'best'));
  type Item = vscode.QuickPickItem & { value?: string; browse?: boolean };
  const items: Item[] = [
    {
      label: `step-${target.step - 1}`,
      description: 'the weights that generated this trajectory (with its seed: the same random numbers)',
    },
    ...(hasBest
      ? [{ label: 'best', description: 'checkpoints/best: the best held-out evaluation', value: 'best' }]
      : []),
    ...kept
      .filter((k) => k !== `step-${String(target.step - 1).padStart(6, '0')}`)
      .map((k) => ({ label: k.replace(/^step-0*(\d)/, 'step-$1'), description: `checkpoints/${k}`, value: k })),
    {
      label: 'warm-start',
      description: 'the model after the SFT warm start (or the config’s model)',
      value: 'warm-start',
    },
    { label: 'Model folder…', description: 'any Hugging Face model folder', browse: true },
  ];
  const picked = await vscode.window.showQuickPick(items, { title: 'Re-roll with which checkpoint?' });
  if (!picked) return undefined;
  if (!picked.browse) return { value: picked.value };
  const folder = await vscode.window.showOpenDialog({
    canSelectFiles: false,
    canSelectFolders: true,
    canSelectMany: false,
    openLabel: 'Re-roll With This Model',
  });
  return folder?.length ? { value: folder[0].fsPath } : undefined;
}

async function askNumber(title: string, value: string, min: number, integer = false): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title,
    value,
    validateInput: (v) => {
      const n = Number(v);
      return v.trim() !== '' && Number.isFinite(n) && n >= min && (!integer || Number.isInteger(n))
        ? undefined
        : `expected ${integer ? 'an integer' : 'a number'} ≥ ${min}`;
    },
  });
  return text === undefined ? undefined : Number(text);
}

/** An untitled editor holding the recorded result of the call the cut stands before. */
async function openResultEditor(target: Target): Promise<vscode.TextDocument> {
  const turn = target.record.turns.filter((t) => t.role === 'assistant' && t.finish !== undefined)[
    target.point.cut.turn
  ];
  const call = turn?.toolCalls?.find((c) => c.index === (target.point.call ?? 0));
  const document = await vscode.workspace.openTextDocument({ content: call?.observation ?? '', language: 'plaintext' });
  await vscode.window.showTextDocument(document, { preview: false });
  return document;
}

function workspaceFolderOf(dir: string): string {
  return vscode.workspace.getWorkspaceFolder(vscode.Uri.file(dir))?.uri.fsPath ?? path.dirname(dir);
}

function cliArgs(target: Target, settings: Settings, editFile: string | undefined): string[] {
  const { cut } = target.point;
  return [
    'reroll',
    target.runDirectory,
    '--step',
    String(target.step),
    '--trajectory',
    String(target.index),
    '--turn',
    String(cut.turn),
    '--at',
    cut.at,
    ...(editFile ? ['--edit-result', editFile, '--call', String(target.point.call ?? 0)] : []),
    ...(settings.checkpoint !== undefined ? ['--checkpoint', settings.checkpoint] : []),
    '-n',
    String(settings.samples),
    '--temperature',
    String(settings.temperature),
    '--json',
  ];
}

async function runReroll(
  context: vscode.ExtensionContext,
  log: vscode.OutputChannel,
  target: Target,
  settings: Settings,
  editedResult: string | undefined,
): Promise<BranchSet | undefined> {
  const editFile =
    editedResult === undefined
      ? undefined
      : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-reroll-')), 'result.txt');
  if (editFile) fs.writeFileSync(editFile, editedResult!);
  const runtime = resolveTrainerRuntime(
    vscode.workspace.getConfiguration('rolloutStudio').get<string>('trainer.nodePath'),
  );
  const cliPath = vscode.Uri.joinPath(context.extensionUri, 'dist', 'trainer', 'cli.js').fsPath;
  const args = cliArgs(target, settings, editFile);
  log.appendLine(`[Re-roll] ${runtime.command} ${cliPath} ${args.join(' ')}`);
  try {
    return await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Re-rolling #${target.index} of step ${target.step} from ${target.point.label}`,
        cancellable: true,
      },
      (_, token) =>
        new Promise<BranchSet | undefined>((resolve, reject) => {
          const child: ChildProcess = execFileWorkspaceCode(
            rerollUse(target.runDirectory),
            runtime.command,
            [cliPath, ...args],
            {
              cwd: workspaceFolderOf(target.runDirectory),
              env: runtime.env,
              maxBuffer: 256 * 1024 * 1024,
              timeout: 30 * 60_000,
            },
            (error, stdout, stderr) => {
              log.append(stderr);
              if (token.isCancellationRequested) return resolve(undefined);
              if (error)
                return reject(
                  new Error(
                    stderr
                      .split('\n')
                      .filter((l) => l.startsWith('rollout-studio: '))
                      .pop()
                      ?.replace(/^rollout-studio: /, '') || error.message,
                  ),
                );
              try {
                resolve(parseWith(RerollOutput, JSON.parse(stdout), 'the re-roll’s output'));
              } catch (parseError) {
                reject(parseError);
              }
            },
          );
          token.onCancellationRequested(() => child.kill());
        }),
    );
  } finally {
    if (editFile) fs.rmSync(path.dirname(editFile), { recursive: true, force: true });
  }
}
