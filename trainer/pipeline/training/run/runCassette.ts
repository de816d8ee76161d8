import * as fs from 'node:fs';
import * as path from 'node:path';
import { CASSETTE_FILE, CassetteEntry } from '../../../contract/protocol/cassetteFile';
import { appendJsonl, readJsonl } from '../../../contract/runstore/jsonl';
import { CassettePlayer, ToolCassette, type CassetteMiss } from '../../../foundations/tools/cassette';
import { ConfigError, type LoadedConfig } from '../config/trainingConfig';
import { definedFields } from '../../../contract/definedFields';

/** A cassette's recordings: `cassette.jsonl` of a run directory, or a cassette file. */
export function readCassette(source: string): CassettePlayer {
  const file = fs.existsSync(source) && fs.statSync(source).isDirectory() ? path.join(source, CASSETTE_FILE) : source;
  if (!fs.existsSync(file)) {
    throw new ConfigError(
      `${file}: no recorded tool calls there; record them with toolCassette: { record: true } in the config (or train --record-tools)`,
    );
  }
  const read = readJsonl(file, CassetteEntry);
  return new CassettePlayer(read.records, file);
}

/**
 * The run's cassette from its config's `toolCassette` (and the command line's overrides): one that
 * records (into the run store, once it is open: ToolCassette.recordInto), replays, or both;
 * undefined when the run does neither.
 */
export interface CassetteOverrides {
  record?: boolean;
  replay?: string;
  onMiss?: CassetteMiss;
}

export function runCassette(
  loaded: LoadedConfig,
  overrides: CassetteOverrides = {},
): { cassette: ToolCassette; record: boolean } | undefined {
  const settings = loaded.config.toolCassette;
  const record = overrides.record ?? settings?.record ?? false;
  const replay =
    overrides.replay !== undefined
      ? path.resolve(overrides.replay)
      : settings?.replay !== undefined
        ? loaded.resolve(settings.replay)
        : undefined;
  if (!record && replay === undefined) return undefined;
  const cassette = new ToolCassette({
    ...definedFields({ player: replay !== undefined ? readCassette(replay) : undefined }),
    onMiss: overrides.onMiss ?? settings?.onMiss ?? 'error',
  });
  return { cassette, record };
}

/** `eval`'s recorded tool results: it has no run store, so the recording is a file of its own. */
export interface EvalCassette {
  /** A cassette file to write every call to (replaced if it exists). */
  record?: string;
  /** A run directory or cassette file to answer calls from. */
  replay?: string;
  onMiss?: CassetteMiss;
}

export function evalCassette(settings: EvalCassette | undefined): ToolCassette | undefined {
  if (!settings || (settings.record === undefined && settings.replay === undefined)) return undefined;
  const record = settings.record;
  if (record !== undefined) fs.rmSync(record, { force: true });
  const cassette = new ToolCassette({
    ...definedFields({ player: settings.replay !== undefined ? readCassette(settings.replay) : undefined }),
    onMiss: settings.onMiss ?? 'error',
    ...(record !== undefined
      ? {
          record: (entries) =>
            appendJsonl(
              record,
              entries.map((e) => CassetteEntry.parse(e)),
            ),
        }
      : {}),
  });
  // Evaluation rows are one rollout: the calls' origin is (eval, 0, row position).
  cassette.enter('eval', 0);
  return cassette;
}
