#!/usr/bin/env node
import { createModelCommand, createModelUsage } from './commands/createModelCommand';
import { envCommand, envUsage } from './commands/envCommand';
import { pretrainCommand, pretrainUsage } from './commands/pretrainCommand';
import { chatCommand, chatUsage } from './commands/chatCommand';
import { evalCommand, evalUsage, trainCommand, trainUsage } from './commands/trainCommand';
import { evalRewardCommand, evalRewardUsage } from './commands/evalRewardCommand';
import { runToolCommand, runToolUsage } from './commands/runToolCommand';
import { pullCommand, pullUsage } from './commands/pullCommand';
import { serveToolsCommand, serveToolsUsage } from './commands/serveToolsCommand';
import { serveCommand, serveUsage } from './commands/serveCommand';
import { exportCommand, exportUsage } from './commands/exportCommand';
import { rerollCommand, rerollUsage } from './commands/rerollCommand';
import { importCommand, importUsage } from './commands/importVerlCommand';
import { hasParent, sendToParent } from './ipc';
import { describeFailure, endProcessSoon, whenOutputCloses } from './processEnd';
import { currentRelaunchContext, endWithTheLauncher, relaunchWithAllocatorEnv, shouldRelaunch } from './relaunch';
import { UsageError } from './usage';
import { waitForDebuggerIfAsked } from './waitForDebugger';

const commands: Record<string, { run: (argv: string[]) => Promise<number>; usage: string }> = {
  train: { run: trainCommand, usage: trainUsage },
  eval: { run: evalCommand, usage: evalUsage },
  env: { run: envCommand, usage: envUsage },
  pull: { run: pullCommand, usage: pullUsage },
  'create-model': { run: createModelCommand, usage: createModelUsage },
  pretrain: { run: pretrainCommand, usage: pretrainUsage },
  chat: { run: chatCommand, usage: chatUsage },
  'run-tool': { run: runToolCommand, usage: runToolUsage },
  'eval-reward': { run: evalRewardCommand, usage: evalRewardUsage },
  serve: { run: serveCommand, usage: serveUsage },
  'serve-tools': { run: serveToolsCommand, usage: serveToolsUsage },
  export: { run: exportCommand, usage: exportUsage },
  import: { run: importCommand, usage: importUsage },
  reroll: { run: rerollCommand, usage: rerollUsage },
};

const usage = `Usage: rollout-studio <command> [options]

Commands:
${Object.values(commands)
  .map((c) => '  ' + c.usage.split('\n')[0])
  .join('\n')}

Run "rollout-studio <command> --help" for a command's options. --verbose (any command): print
the stack trace of an error too.`;

/** --verbose, taken out before a command parses its own options. */
const verbose = process.argv.includes('--verbose');
const argv = process.argv.slice(2).filter((arg) => arg !== '--verbose');

async function main(argv: string[]): Promise<number> {
  waitForDebuggerIfAsked();
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    process.stdout.write(usage + '\n');
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command "${name}"`);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.usage + '\n');
    return 0;
  }
  return command.run(rest);
}

if (shouldRelaunch(currentRelaunchContext(argv[0]))) relaunchWithAllocatorEnv();
else runHere();

/** Run the command in this process. */
function runHere(): void {
  endWithTheLauncher();
  // A reader that went away ends the command (the training command stops its run cleanly instead: see trainCommand).
  whenOutputCloses(() => {
    if (argv[0] !== 'train') process.exit(141);
  });

  main(argv)
    .then(
      (code) => {
        process.exitCode = code;
      },
      async (error: unknown) => {
        if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
          process.stderr.write(`rollout-studio: ${(error as Error).message}\n\n${usage}\n`);
          process.exitCode = 2;
        } else {
          const err = error instanceof Error ? error : new Error(String(error));
          process.stderr.write(`rollout-studio: ${describeFailure(err, verbose)}\n`);
          if (hasParent())
            await sendToParent({
              type: 'fatal',
              message: err.message,
              ...(err.stack ? { stack: err.stack } : {}),
            }).catch(() => {});
          process.exitCode = 1;
        }
      },
    )
    .finally(() => {
      if (hasParent()) process.disconnect();
      endProcessSoon();
    });
}
