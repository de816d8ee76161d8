/**
 * Serves `rollout:` transcript documents (see transcriptUri.ts), the sources of the debugger's
 * stack frames. A rollout debug session renders them (it has the trajectories, in live mode
 * even the unfinished ones); without one — a transcript left open after the session ended —
 * the run directory is read. Either way the text is renderTranscript's, so the frames' lines
 * match. The `.rollout.txt` ending gives them the `rollout-transcript` language.
 *
 * A transcript must not go stale when its run or session ends: open ones are read again then. A step
 * the trainer recorded shows its final records (the calls' results, the rewards); a step that
 * was still in flight when the run ended is never recorded, so the last snapshot the session
 * served is shown, saying that the run ended before the rest was known.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { parseWith } from '../../../trainer/contract/protocol/parse';
import { TranscriptResponseBody } from '../../../trainer/contract/protocol/debugger';
import type { RunStatus, TrajectoryRecord } from '../../../trainer/contract/protocol/runStore';
import type { LiveTrainings } from '../../live/liveTrainings';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';
import { renderTranscript, runEndedPhrase } from '../../../trainer/contract/transcript';
import { renderBranchTranscript } from '../../reroll/branchTranscript';
import { branchDirectoryParts, readBranchSet } from '../replay/branchRun';
import { readBranchSets } from '../../../trainer/contract/runstore/branchStore';
import {
  parseBranchTranscriptPath,
  parseTranscriptPath,
  TRANSCRIPT_SCHEME,
  TRANSCRIPTS_CHANGED_EVENT,
  type TranscriptAddress,
  type TranscriptsChangedBody,
} from './transcriptUri';

export class TranscriptDocuments implements vscode.TextDocumentContentProvider {
  /** The rollout debug sessions whose adapter runs, by session id, with that adapter (a restart starts a new one for the same session). */
  private readonly sessions = new Map<string, { session: vscode.DebugSession; adapter: object }>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** For each open transcript (by URI) an adapter served: that adapter, and the trajectory it last served, for when it is gone. */
  private readonly served = new Map<string, { adapter: object; trajectory?: TrajectoryRecord }>();
  readonly onDidChange = this.changed.event;

  /**
   * Follow rollout debug sessions, the first place to ask for a transcript. Live, a trajectory
   * grows between stops: before each stop, and when a step is recorded, the session says which
   * step changed, and the open transcripts of that step are read again. When a trainer exits
   * (`trainings`, and the session's own word) every open transcript of its run is read again,
   * and so are the ones an adapter served when it stops. Adapters, not sessions, are followed:
   * the toolbar's restart keeps the session and replaces its adapter, and the old adapter's last
   * events may never arrive.
   */
  trackSessions(trainings?: LiveTrainings): vscode.Disposable {
    const stopFollowingTrainings = trainings?.onChange(
      (change) => change.type === 'ended' && this.runChanged(change.training.runDirectory),
    );
    return vscode.Disposable.from(
      this.changed,
      vscode.debug.registerDebugAdapterTrackerFactory('rollout', {
        createDebugAdapterTracker: (session) => this.adapterStarted(session),
      }),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((event) => {
        if (event.session.type !== 'rollout' || event.event !== TRANSCRIPTS_CHANGED_EVENT) return;
        const { runDirectory, step } = event.body as TranscriptsChangedBody;
        this.runChanged(runDirectory, step);
      }),
      vscode.workspace.onDidCloseTextDocument((document) => this.served.delete(document.uri.toString())),
      { dispose: () => stopFollowingTrainings?.() },
    );
  }

  private adapterStarted(session: vscode.DebugSession): vscode.DebugAdapterTracker {
    const adapter = {};
    this.sessions.set(session.id, { session, adapter });
    const stopped = () => this.adapterStopped(session.id, adapter);
    return { onWillStopSession: stopped, onExit: stopped };
  }

  private adapterStopped(sessionId: string, adapter: object): void {
    if (this.sessions.get(sessionId)?.adapter === adapter) this.sessions.delete(sessionId);
    for (const document of this.openTranscripts())
      if (this.served.get(document.uri.toString())?.adapter === adapter) this.changed.fire(document.uri);
  }

  /** Open transcripts of `runDirectory` (of one step, or all) are read again. */
  private runChanged(runDirectory: string, step?: number): void {
    for (const document of this.openTranscripts()) {
      const address = parseTranscriptPath(document.uri.path);
      if (
        address &&
        path.resolve(address.runDirectory) === path.resolve(runDirectory) &&
        (step === undefined || address.step === step)
      )
        this.changed.fire(document.uri);
    }
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const branch = parseBranchTranscriptPath(uri.path);
    if (branch) {
      const set = readBranchSets(branch.runDirectory).find((b) => b.id === branch.id);
      if (!set) return `There is no re-roll ${branch.id} in ${branch.runDirectory}/branches.\n`;
      return renderBranchTranscript(set, branch.branch);
    }
    const address = parseTranscriptPath(uri.path);
    if (!address)
      throw new Error(
        `${uri.toString()} is not a transcript: expected <run directory>/step-NNNNNN/trajectory-N.rollout.txt`,
      );
    for (const { session, adapter } of [...this.sessions.values()]) {
      let body: TranscriptResponseBody;
      try {
        body = parseWith(
          TranscriptResponseBody,
          await session.customRequest('rolloutTranscript', address),
          `transcript from debug session "${session.name}"`,
        );
      } catch {
        continue; // Not this session's run (or it has ended): try the next, then the run directory.
      }
      this.served.set(uri.toString(), { adapter, ...(body.trajectory ? { trajectory: body.trajectory } : {}) });
      return body.text;
    }
    return this.fromRunDirectory(address, this.served.get(uri.toString())?.trajectory);
  }

  /** The recorded trajectory; else the last one a session served, saying the run ended before its step was recorded. */
  private fromRunDirectory(address: TranscriptAddress, lastServed: TrajectoryRecord | undefined): string {
    // A branch replayed in the debugger (debugger/branchRun.ts), its session gone: read its branch set.
    const branch = branchDirectoryParts(address.runDirectory);
    if (branch) {
      const trajectory =
        readBranchSet(branch.runDirectory, branch.id).branches[address.index]?.trajectory ?? lastServed;
      return trajectory ? renderTranscript(trajectory).text : `Re-roll ${branch.id} has no branch ${address.index}.\n`;
    }
    const reader = new RunStoreReader(address.runDirectory);
    const recorded = reader.steps().includes(address.step)
      ? reader.trajectories(address.step).records.find((t) => t.index === address.index)
      : undefined;
    if (recorded) return renderTranscript(recorded).text;
    let status: RunStatus | undefined;
    try {
      status = reader.run().status;
    } catch {
      // run.json unreadable: the generic wording below stands.
    }
    const endedBy = runEndedPhrase(status ?? 'running');
    if (lastServed) return renderTranscript(lastServed, { endedBy }).text;
    // Asked for before any session served it (VS Code reopens a transcript tab whose session was
    // just stopped): say so in the document rather than fail with "An unknown error occurred".
    const where = `step ${address.step}, trajectory #${address.index} of ${address.runDirectory}`;
    if (status === 'finished' || status === 'stopped' || status === 'failed')
      return `There is no ${where}: ${endedBy} before it was recorded.\n`;
    return `There is no ${where} yet, and no debug session of this run serves it.\n`;
  }

  private openTranscripts(): vscode.TextDocument[] {
    return vscode.workspace.textDocuments.filter((document) => document.uri.scheme === TRANSCRIPT_SCHEME);
  }
}
