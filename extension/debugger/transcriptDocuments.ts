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
import type { TrajectoryRecord } from '../../trainer/shared/protocol/runStore';
import { RunStoreReader } from '../../trainer/shared/runstore/reader';
import { renderTranscript, runEndedPhrase } from '../../trainer/shared/transcript';
import { parseTranscriptPath, TRANSCRIPT_SCHEME, TRANSCRIPTS_CHANGED_EVENT, type TranscriptAddress, type TranscriptsChangedBody } from './transcriptUri';

export class TranscriptDocuments implements vscode.TextDocumentContentProvider {
  private readonly sessions = new Set<vscode.DebugSession>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** For each open transcript (by URI) a session served: that session, and the trajectory it last served, for when it is gone. */
  private readonly served = new Map<string, { session: vscode.DebugSession; trajectory?: TrajectoryRecord }>();
  readonly onDidChange = this.changed.event;

  /**
   * Follow rollout debug sessions, the first place to ask for a transcript. Live, a trajectory
   * grows between stops: before each stop, and when a step is recorded, the session says which
   * step changed, and the open transcripts of that step are read again; when its trainer has
   * exited it says so for the whole run (a restart keeps the debug session, so its end is not
   * always an ended session). When a session ends, the open transcripts it served are read again.
   */
  trackSessions(): vscode.Disposable {
    return vscode.Disposable.from(
      this.changed,
      vscode.debug.onDidStartDebugSession((session) => session.type === 'rollout' && this.sessions.add(session)),
      vscode.debug.onDidTerminateDebugSession((session) => {
        if (!this.sessions.delete(session)) return;
        for (const document of this.openTranscripts()) if (this.served.get(document.uri.toString())?.session === session) this.changed.fire(document.uri);
      }),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((event) => {
        if (event.session.type !== 'rollout' || event.event !== TRANSCRIPTS_CHANGED_EVENT) return;
        const { runDirectory, step } = event.body as TranscriptsChangedBody;
        for (const document of this.openTranscripts()) {
          const address = parseTranscriptPath(document.uri.path);
          if (address && address.runDirectory === runDirectory && (step === undefined || address.step === step)) this.changed.fire(document.uri);
        }
      }),
      vscode.workspace.onDidCloseTextDocument((document) => this.served.delete(document.uri.toString())),
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
      this.served.set(uri.toString(), { session, ...(body.trajectory ? { trajectory: body.trajectory } : {}) });
      return body.text;
    }
    return this.fromRunDirectory(address, this.served.get(uri.toString())?.trajectory);
  }

  /** The recorded trajectory; else the last one a session served, saying the run ended before its step was recorded. */
  private fromRunDirectory(address: TranscriptAddress, lastServed: TrajectoryRecord | undefined): string {
    const reader = new RunStoreReader(address.runDirectory);
    const recorded = reader.steps().includes(address.step) ? reader.trajectories(address.step).records.find((t) => t.index === address.index) : undefined;
    if (recorded) return renderTranscript(recorded).text;
    if (!lastServed) throw new Error(`${address.runDirectory}: step ${address.step} has no trajectory #${address.index}`);
    let endedBy = runEndedPhrase('running');
    try {
      endedBy = runEndedPhrase(reader.run().status);
    } catch {
      // run.json unreadable: the generic wording stands.
    }
    return renderTranscript(lastServed, { endedBy }).text;
  }

  private openTranscripts(): vscode.TextDocument[] {
    return vscode.workspace.textDocuments.filter((document) => document.uri.scheme === TRANSCRIPT_SCHEME);
  }
}
