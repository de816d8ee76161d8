import * as crypto from 'node:crypto';
import * as fs from 'node:fs';

/**
 * sha256 (hex) of a config file's bytes, as run.json's `configSha256` records it: what lets a
 * later command that runs the recorded config (`reroll`) see that the file is still the one the
 * run trained with (bridges/cli/commands/recordedConfig.ts). Undefined when there is no file to
 * read (a config made in code, whose `file` only names it).
 */
export function configFileSha256(file: string): string | undefined {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  return crypto.createHash('sha256').update(bytes).digest('hex');
}
