import { UsageError } from '../usage';
import { exportGgufCommand, exportGgufUsage } from './exportGgufCommand';
import { exportVerlCommand, exportVerlUsage } from './exportVerlCommand';

/** `rollout-studio export <target> …`: each target has its own command; the target comes first. */
const targets: Record<string, (argv: string[]) => Promise<number>> = {
  gguf: exportGgufCommand,
  verl: exportVerlCommand,
};

// The first line is the command's line in `rollout-studio --help`: both targets.
export const exportUsage = `rollout-studio export gguf <run|checkpoint|model> --out FILE | export verl <config.ts> --out DIR\n\n${exportGgufUsage}\n\n${exportVerlUsage}`;

export async function exportCommand(argv: string[]): Promise<number> {
  const target = argv[0];
  const run = target !== undefined && Object.hasOwn(targets, target) ? targets[target] : undefined;
  if (!run) {
    const supported = Object.keys(targets).join(', ');
    throw new UsageError(
      target === undefined || target.startsWith('-')
        ? `export: name the format first (${supported}), e.g. rollout-studio export gguf <run> --out FILE`
        : `export: unknown format "${target}"; supported: ${supported}`,
    );
  }
  return run(argv);
}
