import { parseArgs } from 'node:util';
import { exportVerl } from '../../verl/export';
import { UsageError } from '../usage';
import { loadConfig } from '../../usercode/loadConfig';

export const exportVerlUsage = `rollout-studio export verl <config.ts> --out DIR [--url URL]

Writes what a verl run of the config needs into DIR: the train and validation data as Parquet in
verl's RLHF layout, a tool config and MCP server file pointing at serve-tools, the reward function
module (Python standard library) that calls serve-tools' reward endpoint, launch.sh with verl's
Hydra overrides for the config's settings, and README.md with the table of what maps and what not.
  --out DIR    the folder to write (created)
  --url URL    where verl will reach \`rollout-studio serve-tools\` (default http://127.0.0.1:8808)`;

export async function exportVerlCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { out: { type: 'string' }, url: { type: 'string', default: 'http://127.0.0.1:8808' } },
    strict: true,
  });
  const [target, config, ...rest] = positionals;
  if (target !== 'verl')
    throw new UsageError(
      target === undefined
        ? 'say what to export to: rollout-studio export verl <config.ts> --out DIR'
        : `cannot export to "${target}"; the one target is verl`,
    );
  if (config === undefined || rest.length) throw new UsageError('expected exactly one config file');
  if (!values.out) throw new UsageError('--out DIR is required');
  try {
    new URL(values.url);
  } catch {
    throw new UsageError(`--url: expected a URL such as http://127.0.0.1:8808, got "${values.url}"`);
  }
  const result = await exportVerl(await loadConfig(config), { out: values.out, url: values.url });
  process.stdout.write(
    `wrote ${result.files.length} files to ${values.out}: ${result.trainRows} training and ${result.valRows} validation rows, ` +
      `${result.mapping.mapped.length} settings mapped, ${result.mapping.unmapped.length} not expressible (see its README.md)\n`,
  );
  return 0;
}
