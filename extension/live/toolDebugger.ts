/**
 * Debugging the user's own tool code during a live training (`"debugTools": true`): when a
 * rollout session says its trainer's Node inspector is listening, attach VS Code's JavaScript
 * debugger (js-debug, built in) to it as a child of that session. The user's tools are
 * compiled by esbuild with inline source maps (trainer/bridges/usercode/loadUserModule.ts), so breakpoints set
 * in their .ts files bind. The trainer waits for the debugger (inspector.waitForDebugger(), see
 * trainerProcess.ts for why not --inspect-brk) and js-debug
 * lets it run once the breakpoints are in (`continueOnAttach`). A config's `agent` module runs in a
 * process the trainer forks; js-debug attaches to it as a child of this session by itself
 * (attach mode's `autoAttachChildProcesses` sets NODE_OPTIONS in the trainer), so its breakpoints
 * hit too.
 */
import * as vscode from 'vscode';
import { startDebugSession } from '../workspaceDebug';
import { parseWith } from '../../trainer/contract/protocol/parse';
import {
  TOOL_DEBUGGER_EVENT,
  TOOL_DEBUGGER_FAILED_REQUEST,
  ToolDebuggerEventBody,
} from '../../trainer/contract/protocol/debugger';

export function registerToolDebugger(): vscode.Disposable {
  return vscode.debug.onDidReceiveDebugSessionCustomEvent(async (event) => {
    if (event.session.type !== 'rollout' || event.event !== TOOL_DEBUGGER_EVENT) return;
    const session = event.session;
    let started = false;
    let reason = 'VS Code did not start the Node debug session';
    try {
      const body = parseWith(ToolDebuggerEventBody, event.body, `${TOOL_DEBUGGER_EVENT} event`);
      started = await startDebugSession(
        session.workspaceFolder,
        {
          type: 'pwa-node',
          request: 'attach',
          name: `Your code · ${session.name}`,
          address: body.address,
          port: body.port,
          continueOnAttach: true,
          skipFiles: ['<node_internals>/**', ...body.skipFiles.map((dir) => `${dir.replace(/\\/g, '/')}/**`)],
        },
        { parentSession: session, lifecycleManagedByParent: true, compact: true },
      );
    } catch (error) {
      reason = (error as Error).message;
    }
    if (!started)
      await session.customRequest(TOOL_DEBUGGER_FAILED_REQUEST, { message: reason }).then(undefined, () => undefined);
  });
}
