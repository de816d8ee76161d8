import * as vscode from 'vscode';
import { startDebugSession } from '../workspaceDebug';
import { z } from 'zod';
import type { BranchSet } from '../../trainer/contract/protocol';
import { readBranchSets } from '../../trainer/contract/runstore/branchStore';
import { branchTranscriptUri, transcriptUri } from '../debugger/transcripts/transcriptUri';

/**
 * A re-roll's branches (rerollCommands.ts): each beside the original trajectory in a diff editor,
 * or replayed in the rollout debugger.
 */

export const ShowBranchArgs = z.object({
  runDirectory: z.string().min(1),
  id: z.string().min(1),
  branch: z.number().int().nonnegative().default(0),
});

/** Replays a branch in the rollout debugger, stopped at its start. */
export async function replayBranch(raw: unknown): Promise<void> {
  const args = ShowBranchArgs.parse(raw);
  const folder =
    vscode.workspace.getWorkspaceFolder(vscode.Uri.file(args.runDirectory)) ?? vscode.workspace.workspaceFolders?.[0];
  await startDebugSession(folder, {
    type: 'rollout',
    request: 'launch',
    name: `Re-roll ${args.id}`,
    runDirectory: args.runDirectory,
    branch: args.id,
    stopOnEntry: true,
  });
}

/** Shows a branch of a re-roll beside the original. */
export async function showBranchOf(raw: unknown): Promise<void> {
  const args = ShowBranchArgs.parse(raw);
  const set = readBranchSets(args.runDirectory).find((b) => b.id === args.id);
  if (!set) return void vscode.window.showErrorMessage(`There is no re-roll ${args.id} in ${args.runDirectory}.`);
  await showBranch(args.runDirectory, set, args.branch);
}

/** The first four branches beside the original, and every branch's total reward in a message. */
export async function showBranches(runDirectory: string, set: BranchSet): Promise<void> {
  for (let k = 0; k < Math.min(set.branches.length, 4); k++) await showBranch(runDirectory, set, k);
  const rewards = set.branches
    .map(
      (b, k) =>
        `branch ${k}: total ${b.trajectory.rewards.total.toFixed(2)}${b.firstDivergence === null ? ' (identical)' : ''}`,
    )
    .join(' · ');
  void vscode.window.showInformationMessage(
    `Re-rolled #${set.parent.index} of step ${set.parent.step}: ${rewards}. Saved in branches/${set.id}.json.`,
  );
}

/** A diff editor: the original trajectory beside branch `branch`, titled with its reward and where it diverges. */
async function showBranch(runDirectory: string, set: BranchSet, branch: number): Promise<void> {
  const parent = vscode.Uri.parse(transcriptUri({ runDirectory, step: set.parent.step, index: set.parent.index }));
  const uri = vscode.Uri.parse(branchTranscriptUri({ runDirectory, id: set.id, branch }));
  const entry = set.branches[branch];
  const divergence = entry.firstDivergence === null ? 'identical' : `diverges at token ${entry.firstDivergence}`;
  const title = `#${set.parent.index} step ${set.parent.step} ↔ branch ${branch} · reward ${entry.trajectory.rewards.total.toFixed(2)} · ${divergence}`;
  await vscode.commands.executeCommand('vscode.diff', parent, uri, title, { preview: false });
}
