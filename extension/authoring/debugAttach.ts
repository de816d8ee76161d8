import * as vscode from 'vscode';
import { startDebugSession } from '../workspaceDebug';

/**
 * Debug Tool: VS Code's JavaScript debugger (a `node` attach session) attached to the trainer
 * process that holds the tool, through the inspector that process opened. The trainer compiled
 * the user's file with an inline source map, so breakpoints set in the tool's .ts source bind
 * to the code that runs.
 *
 * The call must not run before the debugger has set those breakpoints. The JavaScript debugger
 * attaches through a child session per target, and VS Code sends a session's breakpoints before
 * its `configurationDone`; so the debugger is ready once a child session of this attach has
 * answered `configurationDone` (or the root has, and no child came within a second).
 */

export interface AttachedDebugger {
  session: vscode.DebugSession;
  /** Fires when the root debug session ends (the user pressed Stop). */
  onDidEnd: vscode.Event<void>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

function inspectorPort(url: string): number {
  const port = Number(new URL(url).port);
  if (!Number.isInteger(port) || port <= 0)
    throw new Error(`the trainer reported an inspector URL without a port: ${url}`);
  return port;
}

function isDescendant(session: vscode.DebugSession | undefined, root: string): boolean {
  for (let s = session; s; s = s.parentSession)
    if (s.id === root || (s.configuration as { rolloutStudioAttach?: string }).rolloutStudioAttach === root)
      return true;
  return false;
}

export async function attachDebugger(
  inspectorUrl: string,
  name: string,
  folder: vscode.WorkspaceFolder | undefined,
): Promise<AttachedDebugger> {
  const token = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const configured = new Set<string>();
  const configuredAt = new Map<string, number>();
  const sessions = new Map<string, vscode.DebugSession>();
  let root: vscode.DebugSession | undefined;
  const ended = new vscode.EventEmitter<void>();

  const disposables: vscode.Disposable[] = [
    vscode.debug.registerDebugAdapterTrackerFactory('*', {
      createDebugAdapterTracker(session) {
        if (!isDescendant(session, token)) return undefined;
        sessions.set(session.id, session);
        return {
          onDidSendMessage(message: { type?: string; command?: string; success?: boolean }) {
            if (message.type === 'response' && message.command === 'configurationDone' && message.success) {
              configured.add(session.id);
              configuredAt.set(session.id, Date.now());
            }
          },
        };
      },
    }),
    vscode.debug.onDidStartDebugSession((session) => {
      if ((session.configuration as { rolloutStudioAttach?: string }).rolloutStudioAttach === token) root = session;
    }),
    vscode.debug.onDidTerminateDebugSession((session) => {
      if (session === root || (root && session.id === root.id)) {
        ended.fire();
        disposables.forEach((d) => d.dispose());
      }
    }),
  ];

  const started = await startDebugSession(folder, {
    type: 'node',
    request: 'attach',
    name,
    address: '127.0.0.1',
    port: inspectorPort(inspectorUrl),
    // The tool's code is compiled in memory next to the user's file; its source map is inline.
    sourceMaps: true,
    resolveSourceMapLocations: ['**', '!**/node_modules/**'],
    skipFiles: ['<node_internals>/**'],
    rolloutStudioAttach: token,
  });
  if (!started || !root) {
    disposables.forEach((d) => d.dispose());
    throw new Error(`VS Code's JavaScript debugger could not attach to the trainer process (${inspectorUrl}).`);
  }
  const session = root;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const children = [...sessions.values()].filter((s) => s.id !== session.id);
    if (children.some((c) => configured.has(c.id))) break;
    // A debugger that starts no child session is ready once its root is configured (given a moment to start one).
    const rootConfigured = configuredAt.get(session.id);
    if (children.length === 0 && rootConfigured !== undefined && Date.now() - rootConfigured > 1000) break;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    session,
    onDidEnd: ended.event,
    async stop() {
      await vscode.debug.stopDebugging(session);
    },
  };
}
