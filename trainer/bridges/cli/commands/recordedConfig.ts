import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunRecord } from '../../../contract/protocol/runStore';
import { configFileSha256 } from '../../../pipeline/training/config/configFileHash';
import { UsageError } from '../usage';

/**
 * The config a command reads from a run's run.json (`reroll` without --config) is a program the
 * command will run, and run.json is only a file in a folder: a repository can carry a planted
 * `.rollout/runs/<id>/run.json` whose `configPath` names its own `evil.ts`. So the recorded
 * config is run only when it is what a run records: the absolute path the trainer wrote
 * (`path.resolve` of the config it loaded; a relative one resolves against whatever folder the
 * command runs in), reached without the kernel's per-process links (`/proc/self/cwd/evil.ts` is
 * absolute too). A user who means another config says so with --config.
 *
 * A config edited since the run (its bytes are not the recorded `configSha256`) is still the
 * run's own: users change their configs between runs and re-roll old ones. It runs, with a
 * warning. The hash is no defence (whoever writes run.json can write a matching one): what keeps
 * a planted run.json from running code in an untrusted folder is the editor's gate
 * (extension/workspaceCode.ts) and, here, the path rules.
 */

/** Paths that look absolute but are resolved per process (the command's own working folder, its descriptors). */
const PER_PROCESS = /^\/(proc|dev)\//;

/** The run's own config file, after the checks above; throws a UsageError naming run.json, the field and what was expected. */
export function recordedConfigFile(
  runDir: string,
  run: Pick<RunRecord, 'configPath' | 'configSha256'>,
  warn: (line: string) => void,
): string {
  const where = `${path.join(runDir, 'run.json')}: configPath`;
  const otherwise = 'pass --config FILE to re-roll with a config you choose';
  const recorded = run.configPath;
  if (!recorded) throw new UsageError(`${where} is missing: the run did not record its config file; ${otherwise}`);
  if (!path.isAbsolute(recorded))
    throw new UsageError(
      `${where} is "${recorded}", a relative path; a run records the absolute path of the config it trained with, so this run.json was not written by a run. Refusing to run it; ${otherwise}`,
    );
  if (path.normalize(recorded) !== recorded || PER_PROCESS.test(recorded))
    throw new UsageError(
      `${where} is "${recorded}"; expected the plain absolute path a run records (no "..", not under /proc or /dev). Refusing to run it; ${otherwise}`,
    );
  if (!fs.existsSync(recorded))
    throw new UsageError(`${where} names ${recorded}, which does not exist (moved or deleted?); ${otherwise}`);
  if (run.configSha256 !== undefined) {
    const now = configFileSha256(recorded) ?? 'unreadable';
    if (now !== run.configSha256)
      warn(
        `warning: ${recorded} changed since the run (sha256 ${now.slice(0, 12)}… where run.json recorded ${run.configSha256.slice(0, 12)}…): re-rolling with it as it is now`,
      );
  }
  return recorded;
}
