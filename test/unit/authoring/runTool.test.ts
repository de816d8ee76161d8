import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runToolOnce } from '#trainer/bridges/authoring/runTool';
import { selectTool } from '#trainer/bridges/usercode/selectTool';
import { loadUserModule } from '#trainer/bridges/usercode/loadUserModule';
import { ToolSession } from '../../../extension/authoring/toolSession';
import { buildKnowledgeBase } from '../../../examples/multihop-search/kb';

const root = path.resolve(__dirname, '../../..');
const cli = path.join(root, 'trainer/bridges/cli/main.ts');
const multihopTools = path.join(root, 'examples/multihop-search/tools.ts');
const calculatorTools = path.join(root, 'examples/calculator/tools.ts');
const node = { command: process.execPath, env: process.env, description: "the test runner's Node" };

function runCli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: root, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('Run Tool in the trainer: selecting, checking and running one tool', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-run-tool-'));
    fs.writeFileSync(
      path.join(dir, 'tools.ts'),
      [
        "import { defineTool, Tool, z } from 'rollout-studio';",
        'const Echo = z.object({ text: z.string(), times: z.int().min(1).max(3).default(1) });',
        'export class EchoTool extends Tool<typeof Echo> {',
        "  readonly name = 'echo';",
        "  readonly description = 'Repeats the text.';",
        '  readonly parameters = Echo;',
        '  execute(args: z.output<typeof Echo>) {',
        '    return args.text.repeat(args.times);',
        '  }',
        '}',
        'export const tools = [',
        "  defineTool({ name: 'slow', description: 'Never finishes in time.', parameters: z.object({}), timeoutMs: 50, execute: () => new Promise<string>((r) => setTimeout(() => r('late'), 2000)) }),",
        "  defineTool({ name: 'broken', description: 'Always throws.', parameters: z.object({}), execute: () => { throw new Error('the index is not loaded'); } }),",
        '];',
      ].join('\n'),
    );
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('runs the multi-hop search tool found by its class and returns the observation and the data', async () => {
    const exports = await loadUserModule(multihopTools);
    const tool = selectTool(exports, { by: 'class', name: 'KnowledgeBaseSearch' }, multihopTools);
    const person = buildKnowledgeBase().people[0];
    const report = await runToolOnce(tool, { query: `who does ${person.name} work for` });
    assert.equal(report.error, undefined);
    assert.equal(report.tool.name, 'search');
    assert.equal(report.tool.className, 'KnowledgeBaseSearch');
    assert.match(report.observation!, new RegExp(`^${person.name} works for [\\w ]+\\.$`));
    assert.deepEqual((report.data as { documentIds: string[] }).documentIds, [`${person.id}/company`]);
    assert.deepEqual(report.tool.parameters['required'], ['query']);
  });

  it('names the field when the arguments fail the schema, and does not run the tool', async () => {
    const exports = await loadUserModule(multihopTools);
    const tool = selectTool(exports, { by: 'export', path: 'tools[0]' }, multihopTools);
    const report = await runToolOnce(tool, { q: 'Ada' });
    assert.equal(report.error?.kind, 'invalid_arguments');
    assert.deepEqual(
      report.issues?.map((i) => i.path),
      [['query']],
    );
    assert.match(report.error!.message, /query: Invalid input: expected string, received undefined/);
    assert.equal(report.latencyMs, 0);
  });

  it('reports a timeout and a throw as the runner does in a rollout, with the user file in the stack', async () => {
    const exports = await loadUserModule(path.join(dir, 'tools.ts'));
    const slow = await runToolOnce(selectTool(exports, { by: 'name', name: 'slow' }, 'tools.ts'), {});
    assert.equal(slow.error?.kind, 'timeout');
    const broken = await runToolOnce(selectTool(exports, { by: 'export', path: 'tools[1]' }, 'tools.ts'), {});
    assert.equal(broken.error?.kind, 'threw');
    assert.match(broken.error!.message, /the index is not loaded/);
    assert.match(broken.error!.message, /tools\.ts:13:\d+/, "the stack points at the user's TypeScript line");
  });

  it('makes an instance of an exported class whose constructor needs nothing, and applies schema defaults', async () => {
    const exports = await loadUserModule(path.join(dir, 'tools.ts'));
    const report = await runToolOnce(selectTool(exports, { by: 'class', name: 'EchoTool' }, 'tools.ts'), {
      text: 'ab',
    });
    assert.equal(report.observation, 'ab');
    assert.deepEqual(report.arguments, { text: 'ab', times: 1 });
  });

  it('says what the module exports when the selector finds nothing', async () => {
    const exports = await loadUserModule(path.join(dir, 'tools.ts'));
    assert.throws(
      () => selectTool(exports, { by: 'name', name: 'search' }, 'tools.ts'),
      /exports no tool named "search" \(its tools: "slow" \(DefinedTool\), "broken" \(DefinedTool\)\)/,
    );
    assert.throws(
      () => selectTool(exports, { by: 'export', path: 'tools[5]' }, 'tools.ts'),
      /tools has 2 elements, so tools\[5\] does not exist/,
    );
    assert.throws(
      () => selectTool(exports, { by: 'export', path: 'search' }, 'tools.ts'),
      /does not export "search"; its exports are: EchoTool, tools/,
    );
    assert.throws(
      () => selectTool(exports, { by: 'export', path: 'EchoTool' }, 'tools.ts'),
      /is the class EchoTool, not a tool; export an instance/,
    );
    // A class named by the lens may be a base of the exported instance's class.
    const multihop = await loadUserModule(multihopTools);
    assert.equal(
      selectTool(multihop, { by: 'class', name: 'SearchTool' }, 'x.ts').constructor.name,
      'KnowledgeBaseSearch',
    );
  });
});

describe('rollout-studio run-tool', () => {
  it('runs the calculator example and prints the report as JSON', () => {
    const { status, stdout, stderr } = runCli([
      'run-tool',
      calculatorTools,
      '--args',
      '{"expression": "6 * (3 + 4)"}',
      '--json',
    ]);
    assert.equal(status, 0, stderr);
    const report = JSON.parse(stdout);
    assert.equal(report.observation, '42');
    assert.equal(report.tool.name, 'calculator');
  });

  it('fails with exit code 1 and names the field when the arguments do not match', () => {
    const { status, stdout } = runCli([
      'run-tool',
      calculatorTools,
      '--tool',
      'calculator',
      '--args',
      '{"expr": "1+1"}',
    ]);
    assert.equal(status, 1);
    assert.match(stdout, /Error: invalid_arguments/);
    assert.match(stdout, /^ {2}expression: Invalid input: expected string, received undefined$/m);
  });

  it('refuses bad JSON and an unknown tool with a clear message', () => {
    const json = runCli(['run-tool', calculatorTools, '--args', '{expression: 1}']);
    assert.equal(json.status, 2);
    assert.match(json.stderr, /--args: not valid JSON/);
    const unknown = runCli(['run-tool', multihopTools, '--tool', 'lookup']);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /exports no tool named "lookup" \(its tools: "search" \(KnowledgeBaseSearch\)\)/);
  });
});

describe('ToolSession (the extension side of Run Tool… and Debug Tool) against the real CLI', () => {
  it('loads the search tool once, checks arguments as they are typed, runs a call, and ends when closed', async () => {
    const output: string[] = [];
    const session = await ToolSession.start({
      use: { action: 'A test', runs: 'a test trainer' },
      runtime: node,
      cliPath: cli,
      nodeArgs: ['--import', 'tsx'],
      file: multihopTools,
      selector: { by: 'class', name: 'KnowledgeBaseSearch' },
      inspect: true,
      onOutput: (text) => output.push(text),
    });
    try {
      assert.equal(session.tool.name, 'search');
      assert.match(session.inspectorUrl ?? '', /^ws:\/\/127\.0\.0\.1:\d+\//);
      const bad = await session.check({ query: 7 });
      assert.equal(bad.ok, false);
      assert.ok(!bad.ok && bad.issues[0].path[0] === 'query' && /expected string, received number/.test(bad.message));
      assert.deepEqual(await session.check({ query: 'Ada' }), { ok: true });
      const person = buildKnowledgeBase().people[3];
      const report = await session.run({ query: person.name });
      assert.match(report.observation ?? '', new RegExp(person.name));
      const invalid = await session.run({});
      assert.equal(invalid.error?.kind, 'invalid_arguments');
    } finally {
      session.close();
    }
    await new Promise<void>((resolve) => session.onExit(resolve));
    assert.equal(session.running, false);
  });

  it("rejects with the trainer's reason when the tool cannot be loaded", async () => {
    await assert.rejects(
      ToolSession.start({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: node,
        cliPath: cli,
        nodeArgs: ['--import', 'tsx'],
        file: multihopTools,
        selector: { by: 'name', name: 'lookup' },
      }),
      (error: Error & { title?: string; detail?: string }) =>
        error.title === 'The tool could not be loaded.' && /exports no tool named "lookup"/.test(error.detail ?? ''),
    );
  });
});
