import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { getHFHubCachePath } from '@huggingface/hub';

/**
 * Where the Hub is and where its downloads go, read from the same environment variables
 * Python's huggingface_hub reads, so both share one cache and one login:
 *
 * - `HF_HUB_CACHE` (or the older `HUGGINGFACE_HUB_CACHE`, or `$HF_HOME/hub`, or
 *   `$XDG_CACHE_HOME/huggingface/hub`, or `~/.cache/huggingface/hub`) — the cache folder;
 * - `HF_ENDPOINT` — another Hub server (a mirror, or a local one in tests);
 * - `HF_TOKEN` — an access token for gated and private repos; without it, the token file
 *   `hf auth login` writes (`HF_TOKEN_PATH`, default `$HF_HOME/token`);
 * - `HF_HUB_OFFLINE=1` (or `TRANSFORMERS_OFFLINE=1`) — never touch the network.
 */
export interface HubSettings {
  endpoint: string;
  cacheDir: string;
  token: string | undefined;
  offline: boolean;
}

const TRUE_VALUES = new Set(['1', 'ON', 'YES', 'TRUE']);

function isTrue(value: string | undefined): boolean {
  return value !== undefined && TRUE_VALUES.has(value.toUpperCase());
}

/** `~` at the start of a path, as Python's `os.path.expanduser` expands it (a quoted `~` is not expanded by the shell). */
function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p;
}

function readToken(env: NodeJS.ProcessEnv): string | undefined {
  const fromEnv = env['HF_TOKEN']?.trim() || env['HUGGING_FACE_HUB_TOKEN']?.trim();
  if (fromEnv) return fromEnv;
  const home = env['HF_HOME'] ?? path.join(env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'huggingface');
  const file = expandHome(env['HF_TOKEN_PATH'] ?? path.join(expandHome(home), 'token'));
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The settings as the environment says now (read at each use: tests and the CLI may change it). */
export function hubSettings(): HubSettings {
  const env = process.env;
  return {
    endpoint: (env['HF_ENDPOINT'] || 'https://huggingface.co').replace(/(?<!\/)\/+$/, ''),
    // @huggingface/hub's lookup follows huggingface_hub's order of variables; only `~` is ours.
    cacheDir: path.resolve(expandHome(getHFHubCachePath())),
    token: readToken(env),
    offline: isTrue(env['HF_HUB_OFFLINE']) || isTrue(env['TRANSFORMERS_OFFLINE']),
  };
}
