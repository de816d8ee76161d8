import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as ts from 'typescript';
import {
  configTemplate,
  rewardTemplate,
  SNIPPETS,
  snippetByPrefix,
  toolTemplate,
} from '../../../extension/authoring/templates';
import { resolveSnippet } from '../../../extension/authoring/snippetSyntax';

/**
 * Every snippet, expanded as VS Code expands it when each placeholder keeps its default, must
 * compile against the package's public API ('rollout-studio' → trainer/index.ts through the
 * tsconfig's `paths`, with the project's strict options). So must the files the New Tool / New
 * Reward / New Training Config commands write. One TypeScript program checks them all.
 */

const root = path.resolve(__dirname, '../../..');
const virtualDir = path.join(root, 'test/unit/authoring/__expanded__');

function compilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  assert.ok(parsed, 'tsconfig.json could not be read');
  return { ...parsed.options, noEmit: true, types: ['node'] };
}

/** Diagnostics of each virtual file (by its name), type-checked together in one program. */
function typeCheck(files: Record<string, string>): Record<string, string[]> {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options);
  const virtual = new Map(Object.entries(files).map(([name, text]) => [path.join(virtualDir, name), text]));
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (file, language, onError, create) =>
    virtual.has(file)
      ? ts.createSourceFile(file, virtual.get(file)!, language)
      : getSourceFile(file, language, onError, create);
  host.fileExists = (file) => virtual.has(file) || fileExists(file);
  // The virtual files import one another ('./tools'): their folder exists for module resolution.
  const directoryExists = host.directoryExists?.bind(host);
  host.directoryExists = (dir) =>
    path.resolve(dir) === virtualDir || (directoryExists ? directoryExists(dir) : ts.sys.directoryExists(dir));
  host.readFile = (file) => virtual.get(file) ?? readFile(file);
  const program = ts.createProgram([...virtual.keys()], options, host);
  const result: Record<string, string[]> = {};
  for (const [file] of virtual) {
    const source = program.getSourceFile(file)!;
    result[path.basename(file)] = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ].map((d) => {
      const at = d.start !== undefined ? source.getLineAndCharacterOfPosition(d.start) : undefined;
      return `${path.basename(file)}${at ? `:${at.line + 1}:${at.character + 1}` : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
  }
  return result;
}

/** The reward hook is a method: it is checked inside a Tool subclass, with the imports its description asks for. */
function insideToolClass(method: string): string {
  return [
    "import { Tool, z, type RewardContext, type ToolCallOutcome, type ToolContext } from 'rollout-studio';",
    'const Args = z.object({ query: z.string() });',
    'export class HookedTool extends Tool<typeof Args> {',
    "  readonly name = 'hooked';",
    "  readonly description = 'A tool with its own process reward.';",
    '  readonly parameters = Args;',
    '  execute(args: z.output<typeof Args>, _ctx: ToolContext): string {',
    '    return args.query;',
    '  }',
    method.replace(/^/gm, '  '),
    '}',
  ].join('\n');
}

describe('snippets', () => {
  it('has the five snippets of the design (and the reward hook and demonstrations), each with a description', () => {
    const prefixes = Object.values(SNIPPETS)
      .map((s) => s.prefix)
      .sort();
    assert.deepEqual(prefixes, [
      'dataset',
      'demonstration',
      'processreward',
      'reward',
      'rewardhook',
      'rolloutconfig',
      'tool',
    ]);
    for (const snippet of Object.values(SNIPPETS)) assert.ok(snippet.description.length > 20, snippet.prefix);
  });

  it(
    'expand to code, and the commands write files, that type-check against rollout-studio; a broken body does not',
    { timeout: 120_000 },
    () => {
      const expand = (prefix: string) =>
        resolveSnippet(snippetByPrefix(prefix).body, { variables: { TM_FILENAME_BASE: 'data' } });
      const files: Record<string, string> = {
        'tool.ts': expand('tool'),
        'reward.ts': expand('reward'),
        'processreward.ts': expand('processreward'),
        'rewardhook.ts': insideToolClass(expand('rewardhook')),
        'rolloutconfig.ts': expand('rolloutconfig'),
        'dataset.ts': expand('dataset'),
        // The demonstrations snippet imports the tool and the rows from the files the other snippets write, by their default names.
        'tools.ts': expand('tool'),
        'data.ts': expand('dataset'),
        'demonstrations.ts': expand('demonstration'),
        'new-tool.ts': toolTemplate('web-search'),
        'new-reward.ts': rewardTemplate('exact_answer'),
        'new-config.ts': configTemplate('calculator-grpo'),
        // The control: a tool whose execute returns a number must not compile, or this test proves nothing.
        'broken.ts': expand('tool').replace("return 'No entry for ' + args.term + '.';", 'return 42;'),
      };
      const diagnostics = typeCheck(files);
      const { 'broken.ts': broken, ...rest } = diagnostics;
      assert.deepEqual(Object.values(rest).flat(), [], 'expanded snippets and templates must compile');
      assert.ok(
        broken.some((d) => /number/.test(d) && /string/.test(d)),
        `the control must fail to compile, got: ${broken.join('\n')}`,
      );
    },
  );

  it('expand placeholders as the editor does: defaults, mirrors, choices', () => {
    const tool = resolveSnippet(snippetByPrefix('tool').body);
    assert.match(tool, /^export class LookupTool extends Tool<typeof LookupArgs> \{$/m);
    assert.match(tool, /readonly name = 'lookup';/);
    assert.match(tool, /^export const lookup = new LookupTool\(\);$/m);
    assert.doesNotMatch(tool, /\$\d|\$\{/);
    const config = resolveSnippet(snippetByPrefix('rolloutconfig').body);
    assert.match(config, /algorithm: \{ name: 'grpo', groupSize: 8 \}/);
    assert.match(config, /tools: \[\],/);
  });

  it('become files named after what the user typed', () => {
    const tool = toolTemplate('web-search');
    assert.match(tool, /export class WebSearchTool extends Tool<typeof WebSearchArgs>/);
    assert.match(tool, /readonly name = 'web-search';/);
    assert.match(tool, /export const webSearch = new WebSearchTool\(\);/);
    assert.match(toolTemplate('lookupTool'), /class LookupTool extends/, 'no "ToolTool"');
    const reward = rewardTemplate('exact-answer');
    assert.match(reward, /export const exactAnswer = outcomeReward\('exact_answer'/);
    assert.match(configTemplate('calc-grpo'), /name: 'calc-grpo',/);
  });
});
