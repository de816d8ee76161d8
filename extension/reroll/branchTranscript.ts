/**
 * A re-roll's branch as a transcript, laid out like its parent's so that a diff of the two shows
 * what changed: the same numbering (the parent's trajectory index), and a first line that says
 * which branch it is, from where, with what. No vscode import.
 */
import type { BranchSet } from '../../trainer/contract/protocol';
import { renderTranscript } from '../../trainer/contract/transcript';

export function describeCut(set: BranchSet): string {
  const { cut } = set;
  return cut.at === 'call'
    ? `before the results of turn ${cut.turn}'s calls`
    : `the start of generated turn ${cut.turn}`;
}

export function describeEdits(set: BranchSet): string {
  if (!set.edits.length) return 'no edit';
  return set.edits
    .map((e) =>
      e.kind === 'result'
        ? `call ${e.call}'s result edited`
        : e.kind === 'arguments'
          ? `call ${e.call}'s arguments edited`
          : `${e.role} message inserted`,
    )
    .join(', ');
}

export function renderBranchTranscript(set: BranchSet, branch: number): string {
  const entry = set.branches[branch];
  if (!entry) throw new Error(`re-roll ${set.id} has ${set.branches.length} branch(es); there is no branch ${branch}`);
  const text = renderTranscript({ ...entry.trajectory, index: set.parent.index }).text;
  const divergence =
    entry.firstDivergence === null ? 'identical to the parent' : `first divergence at token ${entry.firstDivergence}`;
  const header = `═══ branch ${branch} of step ${set.parent.step} · #${set.parent.index} · from ${describeCut(set)} · ${describeEdits(set)} · ${set.checkpoint.spec} · temperature ${set.sampling.temperature} · ${divergence} ═══`;
  return text.replace(/^[^\n]*/, header);
}
