/**
 * Serves `rollout:` transcript documents (see transcriptUri.ts), the sources of the debugger's
 * stack frames. A rollout debug session renders them (it has the trajectories, in live mode
 * even the unfinished ones); without one — a transcript left open after the session ended —
 * the run directory is read. Either way the text is renderTranscript's, so the frames' lines
 * match. The `.rollout.txt` ending gives them the `rollout-transcript` language.
 */
import * as vscode from 'vscode';
import { parseWith } from '../../trainer/shared/protocol/parse';
import { TranscriptResponseBody } from '../../trainer/shared/protocol/debugger';
import { RunStoreReader } from '../../trainer/shared/runstore/reader';
import { renderTranscript } from '../../trainer/shared/transcript';
import { parseTranscriptPath, TRANSCRIPT_SCHEME, TRANSCRIPTS_CHANGED_EVENT } from './transcriptUri';

export class TranscriptDocuments implements vscode.TextDocumentContentProvider {
  private readonly sessions = new Set<vscode.DebugSession>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  /**
   * Follow rollout debug sessions, the first place to ask for a transcript. Live, a trajectory
   * grows between stops: before each stop the session says which step changed, and the open
   * transcripts of that step are read again.
   */
  trackSessions(): vscode.Disposable {
    return vscode.Disposable.from(
      this.changed,
      vscode.debug.onDidStartDebugSession((session) => session.type === 'rollout' && this.sessions.add(session)),
      vscode.debug.onDidTerminateDebugSession((session) => this.sessions.delete(session)),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((event) => {
        if (event.session.type !== 'rollout' || event.event !== TRANSCRIPTS_CHANGED_EVENT) return;
        const { runDirectory, step } = event.body as { runDirectory: string; step: number };
        for (const document of vscode.workspace.textDocuments) {
          if (document.uri.scheme !== TRANSCRIPT_SCHEME) continue;
          const address = parseTranscriptPath(document.uri.path);
          if (address && address.step === step && address.runDirectory === runDirectory) this.changed.fire(document.uri);
        }
      }),
    );
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const address = parseTranscriptPath(uri.path);
    if (!address) throw new Error(`${uri.toString()} is not a transcript: expected <run directory>/step-NNNNNN/trajectory-N.rollout.txt`);
    for (const session of this.sessions) {
      try {
        const body = await session.customRequest('rolloutTranscript', address);
        return parseWith(TranscriptResponseBody, body, `transcript from debug session "${session.name}"`).text;
      } catch {
        // Not this session's run (or it has ended): try the next, then the run directory.
      }
    }
    const trajectory = new RunStoreReader(address.runDirectory).trajectories(address.step).records.find((t) => t.index === address.index);
    if (!trajectory) throw new Error(`${address.runDirectory}: step ${address.step} has no trajectory #${address.index}`);
    return renderTranscript(trajectory).text;
  }
}
