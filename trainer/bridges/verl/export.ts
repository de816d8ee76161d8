import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadJsonlDataset } from '../../foundations/data/dataset';
import type { LoadedConfig } from '../../pipeline/training/config/trainingConfig';
import { rewardModuleSource } from './rewardModule';
import { toVerlRows, writeVerlParquet } from './datasetParquet';
import { mapSettings, shellOverride, type HydraValue, type SettingsMapping } from './verlSettings';

/**
 * `rollout-studio export verl`: what a verl run of a config needs, in one folder.
 *
 *   data/train.parquet, data/val.parquet   the datasets in verl's RLHF layout (datasetParquet.ts)
 *   tools/tool_config.yaml                 verl's tool config: one MCP tool entry (verl.tools.mcp_base_tool.MCPBaseTool)
 *   tools/mcp_server.json                  its MCP server file: serve-tools' /mcp over Streamable HTTP
 *   reward/rollout_studio_reward.py        the custom_reward_function module (rewardModule.ts)
 *   launch.sh                              verl's main_ppo with the Hydra overrides (verlSettings.ts)
 *   README.md                              how to run it, and the table of mapped and unmappable settings
 *
 * Paths inside are relative to the folder (the launch script runs from it), so the folder can be
 * copied to the cluster as it is.
 */

export interface ExportOptions {
  out: string;
  /** Where verl will reach serve-tools (default http://127.0.0.1:8808). */
  url: string;
}

export interface ExportResult {
  files: string[];
  mapping: SettingsMapping;
  overrides: [string, HydraValue | string][];
  trainRows: number;
  valRows: number;
}

const PROJECT = 'rollout_studio';

/** The overrides every export sets, besides the mapped settings: the files, the agent loop, the reward function, the dumps. */
function fixedOverrides(name: string, hasTools: boolean, hasVal: boolean): [string, string][] {
  return [
    ['data.train_files', '$HERE/data/train.parquet'],
    ['data.val_files', hasVal ? '$HERE/data/val.parquet' : '$HERE/data/train.parquet'],
    ['data.prompt_key', 'prompt'],
    ['data.return_raw_chat', 'True'],
    ['actor_rollout_ref.model.path', '$MODEL_PATH'],
    ['actor_rollout_ref.rollout.name', '$ROLLOUT_ENGINE'],
    ['actor_rollout_ref.rollout.mode', 'async'],
    ['actor_rollout_ref.rollout.agent.default_agent_loop', 'tool_agent'],
    ['actor_rollout_ref.rollout.multi_turn.enable', 'True'],
    ...(hasTools
      ? ([['actor_rollout_ref.rollout.multi_turn.tool_config_path', '$HERE/tools/tool_config.yaml']] as [
          string,
          string,
        ][])
      : []),
    ['reward_model.reward_manager', 'batch'],
    ['custom_reward_function.path', '$HERE/reward/rollout_studio_reward.py'],
    ['custom_reward_function.name', 'compute_score_batch'],
    ['trainer.rollout_data_dir', '$HERE/verl-run/rollouts'],
    ['trainer.validation_data_dir', '$HERE/verl-run/validation'],
    ['trainer.logger', '[console,file]'],
    ['trainer.project_name', PROJECT],
    ['trainer.experiment_name', name],
    ['trainer.n_gpus_per_node', '$N_GPUS'],
    ['trainer.nnodes', '$NNODES'],
  ];
}

/** One override line: shell variables stay outside the single quotes so the shell expands them. */
function overrideLine(key: string, value: HydraValue | string): string {
  if (typeof value === 'string' && value.includes('$')) return `${key}="${value}"`;
  return shellOverride(key, value as HydraValue);
}

function table(rows: string[][]): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return rows
    .map((row, i) => `| ${row.map(escape).join(' | ')} |${i === 0 ? `\n|${row.map(() => '---').join('|')}|` : ''}`)
    .join('\n');
}

type WriteFile = (relative: string, text: string, mode?: number) => void;

export async function exportVerl(loaded: LoadedConfig, options: ExportOptions): Promise<ExportResult> {
  const config = loaded.config;
  const name = exportName(loaded);
  const out = path.resolve(options.out);
  for (const dir of ['data', 'tools', 'reward']) fs.mkdirSync(path.join(out, dir), { recursive: true });
  const files: string[] = [];
  const write: WriteFile = (relative, text, mode) => {
    const file = path.join(out, relative);
    fs.writeFileSync(file, text, mode !== undefined ? { mode } : undefined);
    files.push(relative);
  };

  const { train, val } = writeDatasets(loaded, name, out, files);
  const url = options.url.replace(/(?<!\/)\/+$/, '');
  const hasTools = config.tools.length > 0 || Object.keys(config.mcpServers).length > 0;
  if (hasTools) writeToolConfig(loaded, url, write);
  write('reward/rollout_studio_reward.py', rewardModuleSource(`${url}/reward`));

  const mapping = mapSettings(config);
  const mapped = mapping.mapped.filter((m) => m.key !== '(dataset)');
  const overrides: [string, HydraValue | string][] = [
    ...fixedOverrides(name, hasTools, val !== undefined),
    ...mapped.map((m): [string, HydraValue] => [m.key, m.value]),
  ];
  write('launch.sh', launchScript(loaded, url, hasTools, overrides), 0o755);
  const readme = exportReadme({
    loaded,
    out,
    name,
    url,
    hasTools,
    mapping,
    trainRows: train.rows.length,
    valRows: val?.rows.length,
  });
  write('README.md', readme);
  return { files, mapping, overrides, trainRows: train.rows.length, valRows: val?.rows.length ?? 0 };
}

/** The run's name for verl (trainer.experiment_name, data_source): the config's name or file name, in safe characters. */
function exportName(loaded: LoadedConfig): string {
  return (loaded.config.name ?? path.basename(loaded.file).replace(/\.config\.ts$|\.ts$/, '')).replace(
    /[^A-Za-z0-9_.-]+/g,
    '-',
  );
}

/** data/train.parquet, and data/val.parquet when the config has evaluation data. */
function writeDatasets(loaded: LoadedConfig, name: string, out: string, files: string[]) {
  const config = loaded.config;
  const train = loadJsonlDataset(loaded.resolve(config.data.train), { fields: config.data.fields });
  const valFile = config.evaluation.data ?? config.data.eval;
  const val = valFile ? loadJsonlDataset(loaded.resolve(valFile), { fields: config.data.fields }) : undefined;
  const rowOptions = {
    dataSource: name,
    ...(config.rollout.systemPrompt !== undefined ? { systemPrompt: config.rollout.systemPrompt } : {}),
  };
  writeVerlParquet(path.join(out, 'data/train.parquet'), toVerlRows(train.rows, { ...rowOptions, split: 'train' }));
  files.push('data/train.parquet');
  if (val) {
    writeVerlParquet(path.join(out, 'data/val.parquet'), toVerlRows(val.rows, { ...rowOptions, split: 'val' }));
    files.push('data/val.parquet');
  }
  return { train, val };
}

/** tools/tool_config.yaml and tools/mcp_server.json: verl's MCP tool, pointed at serve-tools' /mcp. */
function writeToolConfig(loaded: LoadedConfig, url: string, write: WriteFile): void {
  const config = loaded.config;
  const timeoutS =
    Math.ceil(
      Math.max(
        30_000,
        ...config.tools.map((t) => t.timeoutMs),
        ...Object.values(config.mcpServers).map((s) => s.timeoutMs),
      ) / 1000,
    ) + 5;
  write(
    'tools/tool_config.yaml',
    `# verl's tool config (verl/tools/utils/tool_registry.py): every tool of ${path.basename(loaded.file)}, served by
# \`rollout-studio serve-tools\` over MCP. The path below is read from the folder launch.sh runs in.
tools:
  - class_name: verl.tools.mcp_base_tool.MCPBaseTool
    config:
      type: mcp
      timeout: ${timeoutS}
      rate_limit: 1000
    mcp:
      mcp_servers_config_path: tools/mcp_server.json
`,
  );
  // One server only: fastmcp's client prefixes tool names with the server's name when it holds several.
  // No "auth_token": verl's client manager then switches to the legacy SSE transport; a header keeps Streamable HTTP.
  write(
    'tools/mcp_server.json',
    JSON.stringify({ mcpServers: { 'rollout-studio': { url: `${url}/mcp`, transport: 'http' } } }, null, 2) + '\n',
  );
}

/** launch.sh: verl's main_ppo with every override, the MCP server file rewritten for the URL and token first. */
function launchScript(
  loaded: LoadedConfig,
  url: string,
  hasTools: boolean,
  overrides: [string, HydraValue | string][],
): string {
  const modelPath = loaded.resolve(loaded.config.model.path);
  return `#!/usr/bin/env bash
# verl's PPO trainer on ${path.basename(loaded.file)}, written by \`rollout-studio export verl\`.
# Start \`rollout-studio serve-tools ${path.basename(loaded.file)}\` where this machine can reach it first (see README.md).
# Extra Hydra overrides on the command line win: ./launch.sh trainer.n_gpus_per_node=4
set -euo pipefail
HERE="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
MODEL_PATH="\${MODEL_PATH:-${modelPath}}"
ROLLOUT_ENGINE="\${ROLLOUT_ENGINE:-vllm}"
N_GPUS="\${N_GPUS:-8}"
NNODES="\${NNODES:-1}"
SERVE_TOOLS_URL="\${SERVE_TOOLS_URL:-${url}}"
export ROLLOUT_STUDIO_REWARD_URL="$SERVE_TOOLS_URL/reward"
export VERL_FILE_LOGGER_PATH="\${VERL_FILE_LOGGER_PATH:-$HERE/verl-run/metrics.jsonl}"
mkdir -p "$HERE/verl-run"
${
  hasTools
    ? `# The MCP server file, for this URL and token (a token goes in a header: verl's "auth_token" would switch to SSE).
python3 - "$SERVE_TOOLS_URL" <<'PY'
import json, os, sys
server = {"url": sys.argv[1].rstrip("/") + "/mcp", "transport": "http"}
if os.environ.get("ROLLOUT_STUDIO_TOKEN"):
    server["headers"] = {"Authorization": "Bearer " + os.environ["ROLLOUT_STUDIO_TOKEN"]}
with open("tools/mcp_server.json", "w") as f:
    json.dump({"mcpServers": {"rollout-studio": server}}, f, indent=2)
PY
`
    : ''
}python3 -m verl.trainer.main_ppo \\
${overrides.map(([k, v]) => `  ${overrideLine(k, v)} \\`).join('\n')}
  "$@"
`;
}

/** README.md: how to run the export, and the tables of mapped and unmappable settings. */
function exportReadme(facts: {
  loaded: LoadedConfig;
  out: string;
  name: string;
  url: string;
  hasTools: boolean;
  mapping: SettingsMapping;
  trainRows: number;
  valRows: number | undefined;
}): string {
  const { loaded, out, name, url, hasTools, mapping, trainRows, valRows } = facts;
  const relConfig = path.relative(out, loaded.file);
  return `# ${name} on verl

Written by \`rollout-studio export verl ${relConfig}\`. verl (github.com/volcengine/verl; keys checked against commit
b178a3cd56f58b2d502255daba591e92833930a7) trains the policy; Rollout Studio serves the config's tools and rewards.

1. Where verl's workers can reach it (this machine, or one next to the cluster):

       npx rollout-studio serve-tools ${relConfig} --port ${new URL(url).port || 8808}${new URL(url).hostname === '127.0.0.1' ? '' : ` --host 0.0.0.0   # with ROLLOUT_STUDIO_TOKEN set`}

2. On the cluster, with verl installed (and \`ROLLOUT_STUDIO_TOKEN\` set if serve-tools has one):

       SERVE_TOOLS_URL=${url} MODEL_PATH=/path/to/hf-model N_GPUS=8 ./launch.sh

3. Back in the editor, while it runs or after:

       npx rollout-studio import verl verl-run/rollouts --metrics verl-run/metrics.jsonl --follow

Data: ${trainRows} training rows${valRows !== undefined ? `, ${valRows} validation rows` : ''}. Tools: ${hasTools ? 'served at ' + url + '/mcp' : 'none'}.

## Settings verl receives

${table([['our setting', 'verl key', 'value', 'note'], ...mapping.mapped.map((m) => [m.setting, m.key, JSON.stringify(m.value), m.note ?? ''])])}

## Settings verl cannot express

${table([['our setting', 'value', 'why'], ...mapping.unmapped.map((u) => [u.setting, u.value, u.why])])}
`;
}
