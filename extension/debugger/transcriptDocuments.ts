/**
 * Serves `rollout:` transcript documents (see transcriptUri.ts), the sources of the debugger's
 * stack frames. A rollout debug session renders them (it has the trajectories, in live mode
 * even the unfinished ones); without one — a transcript left open after the session ended —
 * the run directory is read. Either way the text is renderTranscript's, so the frames' lines
 * match. The `.rollout.txt` ending gives them the `rollout-transcript` language.
 *
 * A transcript must not go stale when its session ends: open ones are read again then. A step
 * the trainer recorded shows its final records (the calls' results, the rewards); a step that
 * was still in flight when the run ended is never recorded, so the last snapshot the session
 * served is shown, saying that the run ended before the rest was known.
 */
import * as vscode from 'vscode';
import { parseWith } from '../../trainer/shared/protocol/parse';
import { TranscriptResponseBody } from '../../trainer/shared/protocol/debugger';
import type { RunStatus, TrajectoryRecord } from '../../trainer/shared/protocol/runStore';
import { RunStoreReader } from '../../trainer/shared/runstore/reader';
import { renderTranscript } from '../../trainer/shared/transcript';
import { parseTranscriptPath, TRANSCRIPT_SCHEME, TRANSCRIPTS_CHANGED_EVENT, type TranscriptAddress } from './transcriptUri';

/** What ended a run whose step in flight was never recorded, by the status its run.json says. */
const ENDED_BY: Record<RunStatus, string> = {
  stopped: 'the run stopped',
  failed: 'the run failed',
  finished: 'the run finished',
  // A trainer killed before it could mark its run (the status is still "running").
  running: 'the training ended',
};

export class TranscriptDocuments implements vscode.TextDocumentContentProvider {
  private readonly sessions = new Set<vscode.DebugSession>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** The last trajectory a session served for each open transcript (by URI), for when the session is gone. */
  private readonly lastServed = new Map<string, TrajectoryRecord>();
  readonly onDidChange = this.changed.event;

  /**
   * Follow rollout debug sessions, the first place to ask for a transcript. Live, a trajectory
   * grows between stops: before each stop, and when a step is recorded, the session says which
   * step changed, and the open transcripts of that step are read again. When a session ends,
   * every open transcript is read again (from the run directory now).
   */
  trackSessions(): vscode.Disposable {
    return vscode.Disposable.from(
      this.changed,
      vscode.debug.onDidStartDebugSession((session) => session.type === 'rollout' && this.sessions.add(session)),
      vscode.debug.onDidTerminateDebugSession((session) => {
        if (!this.sessions.delete(session)) return;
        for (const document of this.openTranscripts()) this.changed.fire(document.uri);
      }),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((event) => {
        if (event.session.type !== 'rollout' || event.event !== TRANSCRIPTS_CHANGED_EVENT) return;
        const { runDirectory, step } = event.body as { runDirectory: string; step: number };
        for (const document of this.openTranscripts()) {
          const address = parseTranscriptPath(document.uri.path);
          if (address && address.step === step && address.runDirectory === runDirectory) this.changed.fire(document.uri);
        }
      }),
      vscode.workspace.onDidCloseTextDocument((document) => this.lastServed.delete(document.uri.toString())),
    );
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const address = parseTranscriptPath(uri.path);
    if (!address) throw new Error(`${uri.toString()} is not a transcript: expected <run directory>/step-NNNNNN/trajectory-N.rollout.txt`);
    for (const session of this.sessions) {
      let body: TranscriptResponseBody;
      try {
        body = parseWith(TranscriptResponseBody, await session.customRequest('rolloutTranscript', address), `transcript from debug session "${session.name}"`);
      } catch {
        continue; // Not this session's run (or it has ended): try the next, then the run directory.
      }
      if (body.trajectory) this.lastServed.set(uri.toString(), body.trajectory);
      return body.text;
    }
    return this.fromRunDirectory(address, this.lastServed.get(uri.toString()));
  }

  /** The recorded trajectory; else the last one a session served, saying the run ended before its step was recorded. */
  private fromRunDirectory(address: TranscriptAddress, lastServed: TrajectoryRecord | undefined): string {
    const reader = new RunStoreReader(address.runDirectory);
    const recorded = reader.steps().includes(address.step) ? reader.trajectories(address.step).records.find((t) => t.index === address.index) : undefined;
    if (recorded) return renderTranscript(recorded).text;
    if (!lastServed) throw new Error(`${address.runDirectory}: step ${address.step} has no trajectory #${address.index}`);
    let endedBy = ENDED_BY.running;
    try {
      endedBy = ENDED_BY[reader.run().status];
    } catch {
      // run.json unreadable: the generic wording stands.
    }
    return renderTranscript(lastServed, { endedBy }).text;
  }

  private openTranscripts(): vscode.TextDocument[] {
    return vscode.workspace.textDocuments.filter((document) => document.uri.scheme === TRANSCRIPT_SCHEME);
  }
}
