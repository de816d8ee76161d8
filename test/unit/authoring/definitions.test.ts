import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findDefinitions, type Definition } from '../../../extension/authoring/definitions';
import { AUTHORING_COMMANDS, lensSpecs, missingTrainingCommandMessage } from '../../../extension/authoring/lensSpecs';
import { resolveSnippet } from '../../../extension/authoring/snippetSyntax';
import { snippetByPrefix } from '../../../extension/authoring/templates';

const root = path.resolve(__dirname, '../../..');
const example = (file: string) => fs.readFileSync(path.join(root, 'examples', file), 'utf8');
/** Kind, 1-based line and how the trainer reaches it: compact enough to compare whole files. */
const brief = (d: Definition) =>
  d.kind === 'tool'
    ? `tool@${d.at.line + 1} ${d.selector ? (d.selector.by === 'export' ? `export ${d.selector.path}` : d.selector.by === 'mcp' ? `mcp ${d.selector.server} ${d.selector.tool}` : `${d.selector.by} ${d.selector.name}`) : 'unreachable'}`
    : d.kind === 'reward'
      ? `reward@${d.at.line + 1} ${d.rewardKind} ${d.exportPath ?? 'unreachable'}`
      : d.kind === 'mcpServer'
        ? `mcp@${d.at.line + 1} ${d.server}`
        : `config@${d.at.line + 1} ${d.label}`;
const found = (text: string) => findDefinitions(text, 'x.ts').map(brief);

describe('code lens definitions, from the syntax tree', () => {
  it("finds the examples' tools, rewards and config, and how the trainer reaches each", () => {
    assert.deepEqual(found(example('multihop-search/tools.ts')), [
      'tool@19 class KnowledgeBaseSearch',
      'tool@58 class MultiWorldSearch',
    ]);
    assert.deepEqual(found(example('calculator/tools.ts')), ['tool@4 export calculator']);
    assert.deepEqual(found(example('multihop-search/rewards.ts')), [
      'reward@10 config rewards',
      'reward@11 outcome rewards.outcome[0]',
    ]);
    assert.deepEqual(found(example('calculator/rewards.ts')), [
      'reward@16 outcome numericMatch',
      'reward@25 config rewards',
    ]);
    assert.deepEqual(found(example('multihop-search/config.ts')), ['config@11 default']);
    assert.deepEqual(found(example('multihop-search/kb.ts')), []);
  });

  it("finds every snippet's definition once expanded", () => {
    const expand = (prefix: string) =>
      resolveSnippet(snippetByPrefix(prefix).body, { variables: { TM_FILENAME_BASE: 'data' } });
    assert.deepEqual(found(expand('tool')), ['tool@8 class LookupTool']);
    assert.deepEqual(found(expand('reward')), ['reward@4 outcome containsAnswer']);
    assert.deepEqual(found(expand('processreward')), ['reward@4 process novelResult']);
    assert.deepEqual(found(expand('rolloutconfig')), [
      'config@3 default',
      'reward@14 config default.rewards',
      'reward@14 outcome default.rewards.outcome[0]',
    ]);
    assert.deepEqual(found(expand('dataset')), []);
  });

  it('follows export lists, defineTool in exported lists, tools and rewards inline in a config, and aliased imports', () => {
    const source = [
      "import { defineTool as tool, Tool, exactMatch, f1, type ProcessReward, type RewardConfig, defineConfig, SearchTool, type Trajectory } from 'rollout-studio';",
      "import * as rs from 'rollout-studio';",
      "import { z } from 'zod';",
      'class Base extends Tool<any> {}',
      'export class Child extends Base { name = "c"; }',
      'abstract class Abstract extends rs.Tool<any> {}',
      "const local = tool({ name: 'local_tool', description: 'd', parameters: z.object({}), execute: () => 'x' });",
      "const hidden = tool({ description: 'no name', parameters: z.object({}), execute: () => 'x' } as never);",
      'export { local as renamed };',
      'export const tools = [',
      "  tool({ name: 'a', description: 'd', parameters: z.object({}), execute: () => 'a' }),",
      '];',
      'const penalty: ProcessReward = { name: "p", score: () => 0 };',
      'export default defineConfig({',
      '  tools: [new SearchTool([])],',
      '  rewards: {',
      '    outcome: [exactMatch(), f1({ weight: 0.5 })],',
      '    process: [{ name: "inline", score: () => 1 }],',
      '  },',
      '} as never);',
      'export function scoreLength(trajectory: Trajectory, row: unknown): number { return trajectory.ids.length + (row ? 0 : 1); }',
      'export const config2: RewardConfig = { outcome: [] };',
      'class NotATool extends Map {}',
    ].join('\n');
    assert.deepEqual(found(source), [
      'tool@4 class Base',
      'tool@5 class Child',
      'tool@7 export renamed',
      'tool@8 unreachable',
      'tool@11 export tools[0]',
      'reward@13 process unreachable',
      'config@14 default',
      'tool@15 export default.tools[0]',
      'reward@16 config default.rewards',
      'reward@17 outcome default.rewards.outcome[0]',
      'reward@17 outcome default.rewards.outcome[1]',
      'reward@18 process default.rewards.process[0]',
      'reward@21 function scoreLength',
      'reward@22 config config2',
    ]);
  });

  it("finds each server of a config's mcpServers, by its name", () => {
    const source = [
      "import { defineConfig } from 'rollout-studio';",
      'export default defineConfig({',
      '  mcpServers: {',
      "    files: { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', '.'] },",
      "    'web-search': { url: 'http://127.0.0.1:8808/mcp' },",
      '  },',
      '} as never);',
    ].join('\n');
    assert.deepEqual(found(source), ['config@2 default', 'mcp@4 files', 'mcp@5 web-search']);
    const lens = lensSpecs(findDefinitions(source, '/w/a.config.ts'), '/w/a.config.ts').find(
      (l) => l.do.action === 'runMcpTool',
    )!;
    assert.equal(lens.title, '$(play) Run MCP Tool…');
    assert.deepEqual(lens.do, {
      action: 'runMcpTool',
      target: { file: '/w/a.config.ts', server: 'files', label: 'MCP server files' },
    });
  });

  it('ignores files and names that do not come from rollout-studio', () => {
    assert.deepEqual(found('class Tool {}\nexport class Search extends Tool {}\nexport const e = exactMatch();'), []);
    assert.deepEqual(
      found("import { Tool } from './my-tools';\nexport class Search extends Tool {}\n// rollout-studio"),
      [],
    );
    // A tool class from the user's own base still counts when it looks like one.
    assert.deepEqual(
      found(
        "import { z } from 'rollout-studio';\nimport { Base } from './base';\nexport class Search extends Base {\n  parameters = z.object({});\n  execute() { return ''; }\n}",
      ),
      ['tool@3 class Search'],
    );
  });
});

describe('code lens commands', () => {
  const file = '/work/project/agent.ts';
  const lenses = (text: string) => lensSpecs(findDefinitions(text, file), file);

  it('puts Run Tool… and Debug Tool over a tool, with the file and the selector as the argument', () => {
    const [run, debug] = lenses(example('multihop-search/tools.ts'));
    assert.equal(run.title, '$(play) Run Tool…');
    assert.deepEqual(run.do, {
      action: 'runTool',
      target: { file, selector: { by: 'class', name: 'KnowledgeBaseSearch' }, label: 'KnowledgeBaseSearch' },
    });
    assert.equal(debug.title, '$(debug-alt-small) Debug Tool');
    assert.equal(debug.do.action, 'debugTool');
  });

  it('puts Start Training | Debug Training over a config, calling the live commands by id with the config', () => {
    const specs = lenses(example('multihop-search/config.ts'));
    assert.deepEqual(
      specs.map((s) => [s.title, s.do]),
      [
        [
          '$(play) Start Training',
          { action: 'training', command: { id: 'rolloutStudio.startTraining', title: 'Start Training' }, file },
        ],
        [
          '$(debug-alt) Debug Training',
          { action: 'training', command: { id: 'rolloutStudio.debugTraining', title: 'Debug Training' }, file },
        ],
      ],
    );
    assert.equal(
      missingTrainingCommandMessage('Start Training', 'rolloutStudio.startTraining', 'agent/config.ts'),
      'Start Training is not available in this build of Rollout Studio (no command "rolloutStudio.startTraining" is registered). Train from a terminal instead: npx rollout-studio train agent/config.ts',
    );
  });

  it('puts Evaluate on Samples over a reward, and an explanation where the trainer could not reach it', () => {
    const [config, outcome] = lenses(example('multihop-search/rewards.ts'));
    assert.deepEqual(config.do, {
      action: 'evaluateReward',
      target: { file, exportPath: 'rewards', kind: 'config', label: 'rewards' },
    });
    assert.deepEqual(outcome.do, {
      action: 'evaluateReward',
      target: { file, exportPath: 'rewards.outcome[0]', kind: 'outcome', label: 'rewards.outcome[0]' },
    });
    const [hidden] = lenses("import { exactMatch } from 'rollout-studio';\nconst match = exactMatch();");
    assert.equal(hidden.do.action, 'explain');
    assert.match(hidden.tooltip, /not reachable from the module's exports/);
    assert.ok(Object.values(AUTHORING_COMMANDS).includes('rolloutStudio.explainCodeLens'));
  });
});
