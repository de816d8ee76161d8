import * as inspector from 'node:inspector';
import { WAIT_FOR_DEBUGGER_ENV } from '../../contract/protocol/debugger';

/**
 * When the extension asks (live training with `debugTools`), block until the attached
 * debugger says run, so breakpoints in the user's tools are bound before any of their code
 * loads. The variable is removed so that processes this one starts do not wait too.
 */
export function waitForDebuggerIfAsked(): void {
  if (process.env[WAIT_FOR_DEBUGGER_ENV] !== '1') return;
  delete process.env[WAIT_FOR_DEBUGGER_ENV];
  if (!inspector.url())
    throw new Error(
      `${WAIT_FOR_DEBUGGER_ENV} is set but the Node inspector is not open: start the trainer with --inspect`,
    );
  inspector.waitForDebugger();
}
