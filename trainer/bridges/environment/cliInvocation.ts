import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * How to start the trainer CLI as a child process of this one, with the same runtime.
 *
 * In the built package every trainer bundle sits in `dist/trainer/` next to `cli.js`. When
 * running from source (tests under tsx) this file is `trainer/bridges/environment/cliInvocation.ts` and
 * the CLI is `trainer/bridges/cli/main.ts`, started with the TypeScript loader this process was started
 * with. (The environment check probes each provider in a child trainer, so a provider that
 * crashes the process cannot take the check down with it.)
 */
export function trainerCliInvocation(args: string[]): { command: string; args: string[] } {
  const bundled = path.join(__dirname, 'cli.js');
  // Never pass an inspector flag on: the child would fight the parent for the debug port.
  const execArgv = process.execArgv.filter((a) => !/^--inspect|^--debug/.test(a));
  if (__filename.endsWith('.js') && fs.existsSync(bundled)) {
    return { command: process.execPath, args: [...execArgv, bundled, ...args] };
  }
  const source = path.join(__dirname, '..', 'cli', 'main.ts');
  const loader = execArgv.some((a) => /tsx/.test(a)) ? execArgv : [...execArgv, '--import', 'tsx'];
  return { command: process.execPath, args: [...loader, source, ...args] };
}
