import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RewardEvaluation, ToolRunReport } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { writeRecordedRun } from '../../fixtures/recordedRun';
import { rowsForRecordedRun } from '../../fixtures/recordedRows';

const EXTENSION_ID = 'rollout-studio.rollout-studio';
/** The repository (the extension under development): the examples are copied from it. */
const repo = path.resolve(__dirname, '../../../..');

async function activate(): Promise<void> {
  const extension = vscode.extensions.getExtension(EXTENSION_ID);
  assert.ok(extension, `${EXTENSION_ID} is not installed in this VS Code`);
  if (!extension.isActive) await extension.activate();
}

async function until<T>(
  what: string | (() => string),
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function lensesOf(file: string): Promise<vscode.CodeLens[]> {
  const uri = vscode.Uri.file(file);
  await vscode.workspace.openTextDocument(uri);
  // The provider's first answer may come before its parser bundle has loaded; ask until lenses come.
  return until(`code lenses of ${path.basename(file)}`, async () => {
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
    return lenses.length ? lenses : undefined;
  });
}

function resultDocument(name: RegExp): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'rollout-studio-result' && name.test(d.uri.path));
}

describe('Authoring: snippets, New… commands, code lenses, Run Tool, Evaluate on Samples', () => {
  const workspace = vscode.workspace.workspaceFolders![0].uri.fsPath;
  const multihop = path.join(workspace, 'authoring', 'multihop');
  const newFiles = path.join(workspace, 'authoring', 'new');

  before(async () => {
    fs.rmSync(path.join(workspace, 'authoring'), { recursive: true, force: true });
    fs.mkdirSync(multihop, { recursive: true });
    fs.mkdirSync(newFiles, { recursive: true });
    for (const file of ['tools.ts', 'kb.ts', 'rows.ts', 'rewards.ts', 'config.ts'])
      fs.copyFileSync(path.join(repo, 'examples/multihop-search', file), path.join(multihop, file));
    await activate();
  });

  afterEach(() => vscode.commands.executeCommand('workbench.action.closeAllEditors'));

  it('contributes the commands and the TypeScript snippets', async () => {
    const commands = await vscode.commands.getCommands(true);
    for (const id of [
      'rolloutStudio.newTool',
      'rolloutStudio.newReward',
      'rolloutStudio.newTrainingConfig',
      'rolloutStudio.runTool',
      'rolloutStudio.debugTool',
      'rolloutStudio.evaluateReward',
    ]) {
      assert.ok(commands.includes(id), id);
    }
    const manifest = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      contributes: { snippets: { language: string; path: string }[] };
    };
    assert.deepEqual(manifest.contributes.snippets.map((s) => s.language).sort(), ['typescript', 'typescriptreact']);
  });

  it('New Tool, New Reward and New Training Config write files from the snippet text and open them; bad names are refused', async () => {
    const tool = await vscode.commands.executeCommand<vscode.Uri>('rolloutStudio.newTool', {
      name: 'web-search',
      folder: newFiles,
    });
    assert.equal(tool.fsPath, path.join(newFiles, 'web-search.ts'));
    const text = fs.readFileSync(tool.fsPath, 'utf8');
    assert.match(text, /export class WebSearchTool extends Tool<typeof WebSearchArgs> \{/);
    const tabSize = vscode.workspace.getConfiguration('editor', { languageId: 'typescript' }).get<number>('tabSize');
    assert.match(
      text,
      new RegExp(`^ {${tabSize}}readonly name = 'web-search';$`, 'm'),
      'indented with spaces, as the editor is set up',
    );
    assert.doesNotMatch(text, /\t/);
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, tool.fsPath, 'the new file is opened');

    const reward = await vscode.commands.executeCommand<vscode.Uri>('rolloutStudio.newReward', {
      name: 'contains_city',
      folder: newFiles,
    });
    assert.match(fs.readFileSync(reward.fsPath, 'utf8'), /export const containsCity = outcomeReward\('contains_city'/);
    const config = await vscode.commands.executeCommand<vscode.Uri>('rolloutStudio.newTrainingConfig', {
      name: 'search-grpo',
      folder: newFiles,
    });
    assert.equal(path.basename(config.fsPath), 'search-grpo.config.ts');
    assert.match(fs.readFileSync(config.fsPath, 'utf8'), /name: 'search-grpo',/);

    assert.equal(
      await vscode.commands.executeCommand('rolloutStudio.newTool', { name: 'web search', folder: newFiles }),
      undefined,
      "a space breaks the Tool API's name rule",
    );
    assert.equal(
      await vscode.commands.executeCommand('rolloutStudio.newTool', { name: 'web-search', folder: newFiles }),
      undefined,
      'the file exists',
    );
    assert.ok(!fs.existsSync(path.join(newFiles, 'web search.ts')));

    // The new tool's lenses work on the file the command wrote, and the tool runs as written.
    const [run] = await lensesOf(tool.fsPath);
    const report = await vscode.commands.executeCommand<ToolRunReport>(
      run.command!.command,
      ...run.command!.arguments!,
      { args: '{"term": "rollout"}' },
    );
    assert.equal(report.observation, 'No entry for rollout.');
  });

  it('puts Run Tool… and Debug Tool over the search tool, Evaluate on Samples over rewards, Start and Debug Training over the config', async () => {
    const tools = await lensesOf(path.join(multihop, 'tools.ts'));
    assert.deepEqual(
      tools.map((l) => [l.range.start.line, l.command?.title, l.command?.command]),
      [
        [18, '$(play) Run Tool…', 'rolloutStudio.runTool'],
        [18, '$(debug-alt-small) Debug Tool', 'rolloutStudio.debugTool'],
        // The benchmark's tool over freshly drawn worlds (MultiWorldSearch).
        [57, '$(play) Run Tool…', 'rolloutStudio.runTool'],
        [57, '$(debug-alt-small) Debug Tool', 'rolloutStudio.debugTool'],
      ],
    );
    assert.deepEqual(tools[0].command!.arguments, [
      {
        file: path.join(multihop, 'tools.ts'),
        selector: { by: 'class', name: 'KnowledgeBaseSearch' },
        label: 'KnowledgeBaseSearch',
      },
    ]);

    const rewards = await lensesOf(path.join(multihop, 'rewards.ts'));
    assert.deepEqual(
      rewards.map((l) => [
        l.range.start.line,
        l.command?.command,
        (l.command?.arguments?.[0] as { exportPath: string }).exportPath,
      ]),
      [
        [9, 'rolloutStudio.evaluateReward', 'rewards'],
        [10, 'rolloutStudio.evaluateReward', 'rewards.outcome[0]'],
      ],
    );

    const config = await lensesOf(path.join(multihop, 'config.ts'));
    assert.deepEqual(
      config.map((l) => [
        l.range.start.line,
        l.command?.title,
        l.command?.command,
        l.command?.arguments?.[0],
        (l.command?.arguments?.[1] as vscode.Uri).fsPath,
      ]),
      [
        [
          10,
          '$(play) Start Training',
          'rolloutStudio.runTrainingCommand',
          'rolloutStudio.startTraining',
          path.join(multihop, 'config.ts'),
        ],
        [
          10,
          '$(debug-alt) Debug Training',
          'rolloutStudio.runTrainingCommand',
          'rolloutStudio.debugTraining',
          path.join(multihop, 'config.ts'),
        ],
      ],
    );
  });

  it('a training lens forwards to its command with the config, and says so when the command is missing', async () => {
    const config = vscode.Uri.file(path.join(multihop, 'config.ts'));
    const calls: vscode.Uri[] = [];
    const stand = vscode.commands.registerCommand('rolloutStudioTest.trainingStandIn', (uri: vscode.Uri) => {
      calls.push(uri);
      return 'started';
    });
    try {
      assert.equal(
        await vscode.commands.executeCommand(
          'rolloutStudio.runTrainingCommand',
          'rolloutStudioTest.trainingStandIn',
          config,
          'Start Training',
        ),
        'started',
      );
      assert.deepEqual(
        calls.map((u) => u.fsPath),
        [config.fsPath],
      );
    } finally {
      stand.dispose();
    }
    // Missing: a message (not VS Code's "command not found" error), and nothing is run.
    assert.equal(
      await vscode.commands.executeCommand(
        'rolloutStudio.runTrainingCommand',
        'rolloutStudioTest.trainingStandIn',
        config,
        'Start Training',
      ),
      undefined,
    );
  });

  it('Run Tool… from the lens runs the example search tool in a trainer process and shows the result; a bad argument names the field', async () => {
    const [run] = await lensesOf(path.join(multihop, 'tools.ts'));
    // One fact per document: who a person of the example's world works for.
    const report = await vscode.commands.executeCommand<ToolRunReport>(
      run.command!.command,
      ...run.command!.arguments!,
      { args: '{"query": "who does William Harlow work for"}' },
    );
    assert.equal(report.error, undefined);
    assert.equal(report.tool.name, 'search');
    assert.match(report.observation!, /^William Harlow works for [\w ]+\.$/);
    assert.ok(Array.isArray((report.data as { documentIds: unknown }).documentIds));
    const document = await until('the result document', () => resultDocument(/\/search · Run Tool\.txt$/));
    assert.match(document.getText(), /Observation \(what the policy sees\)/);

    const bad = await vscode.commands.executeCommand<ToolRunReport>(run.command!.command, ...run.command!.arguments!, {
      args: '{"q": "x"}',
    });
    assert.equal(bad.error?.kind, 'invalid_arguments');
    assert.deepEqual(
      bad.issues?.map((i) => i.path),
      [['query']],
    );
    await until('the result document to show the bad field', () =>
      /^ {2}query: Invalid input: expected string, received undefined$/m.test(
        resultDocument(/\/search · Run Tool\.txt$/)?.getText() ?? '',
      ),
    );
  });

  it("Run MCP Tool… over a server of a config's mcpServers starts it, runs the tool asked for, and names a bad argument", async () => {
    const config = path.join(workspace, 'authoring', 'mcp.config.ts');
    const server = path.join(repo, 'test/fixtures/mcp/searchServer.mjs');
    fs.writeFileSync(
      config,
      `import { defineConfig } from 'rollout-studio';
export default defineConfig({
  model: { path: 'model' },
  data: { train: 'train.jsonl' },
  rewards: { outcome: [] },
  algorithm: { name: 'grpo' },
  steps: 1,
  mcpServers: {
    kb: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(server)}] },
  },
});
`,
    );
    const lens = (await lensesOf(config)).find((l) => l.command?.command === 'rolloutStudio.runMcpTool');
    assert.ok(lens, 'a Run MCP Tool… lens over the server');
    assert.equal(lens.command!.title, '$(play) Run MCP Tool…');
    assert.equal(lens.range.start.line, 8, 'the line of the server kb');
    const report = await vscode.commands.executeCommand<ToolRunReport>(
      lens.command!.command,
      ...lens.command!.arguments!,
      { tool: 'pid', args: '{}' },
    );
    assert.equal(report.error, undefined);
    assert.equal(report.tool.className, 'McpTool');
    assert.match(report.observation!, /^\d+$/);
    await until('the result document', () =>
      resultDocument(/\/pid \(MCP server kb\) · Run Tool\.txt$|\/pid · Run Tool\.txt$/),
    );
    const bad = await vscode.commands.executeCommand<ToolRunReport>(
      lens.command!.command,
      ...lens.command!.arguments!,
      { tool: 'search', args: '{"query": ""}' },
    );
    assert.equal(bad.error?.kind, 'invalid_arguments');
    assert.deepEqual(
      bad.issues?.map((i) => i.path),
      [['query']],
    );
  });

  it("Debug Tool attaches the JavaScript debugger before the call: a breakpoint in the tool's .ts source stops it", async () => {
    const file = path.join(workspace, 'authoring', 'debug', 'echo.ts');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      [
        "import { Tool, z } from 'rollout-studio';",
        'const Args = z.object({ text: z.string() });',
        'export class EchoTool extends Tool<typeof Args> {',
        "  readonly name = 'echo';",
        "  readonly description = 'Repeats the text.';",
        '  readonly parameters = Args;',
        '  execute(args: z.output<typeof Args>): string {',
        '    const doubled = args.text + args.text;', // line 8 (0-based 7): the breakpoint
        '    return doubled;',
        '  }',
        '}',
        'export const echo = new EchoTool();',
      ].join('\n'),
    );
    const stops: { session: vscode.DebugSession; threadId: number }[] = [];
    const started = new Map<string, string>();
    const ended = new Set<string>();
    const terminations = vscode.debug.onDidTerminateDebugSession((session) => ended.add(session.id));
    const tracker = vscode.debug.registerDebugAdapterTrackerFactory('*', {
      createDebugAdapterTracker: (session) => (
        started.set(session.id, session.name),
        {
          onDidSendMessage: (message: {
            type?: string;
            event?: string;
            body?: { threadId?: number; reason?: string };
          }) => {
            if (message.type === 'event' && message.event === 'stopped' && message.body?.reason !== 'entry')
              stops.push({ session, threadId: message.body?.threadId ?? 0 });
          },
        }
      ),
    });
    const breakpoint = new vscode.SourceBreakpoint(
      new vscode.Location(vscode.Uri.file(file), new vscode.Position(7, 4)),
    );
    vscode.debug.addBreakpoints([breakpoint]);
    try {
      const [, debug] = await lensesOf(file);
      assert.equal(debug.command?.command, 'rolloutStudio.debugTool');
      const running = vscode.commands.executeCommand<ToolRunReport>(
        debug.command!.command,
        ...debug.command!.arguments!,
        { args: '{"text": "ab"}' },
      );
      const stop = await until('the debugger to stop at the breakpoint', () => stops[0], 60_000);
      const trace = (await stop.session.customRequest('stackTrace', {
        threadId: stop.threadId,
        startFrame: 0,
        levels: 1,
      })) as { stackFrames: { line: number; source?: { path?: string } }[] };
      // Under code-server the path comes as a vscode-remote: URI of the same file.
      assert.equal(
        trace.stackFrames[0].source?.path?.replace(/^vscode-remote:\/\/[^/]+/, ''),
        file,
        "the frame is in the tool's TypeScript source",
      );
      assert.equal(trace.stackFrames[0].line, 8);
      await stop.session.customRequest('continue', { threadId: stop.threadId });
      const report = await running;
      assert.equal(report.observation, 'abab');
      // Nothing is left behind: every session the command started (js-debug's parent and child) ends.
      const left = () => [...started].filter(([id]) => !ended.has(id)).map(([, name]) => name);
      await until(
        () => `every debug session to end (open: ${JSON.stringify(left())})`,
        () => left().length === 0,
        60_000,
      );
    } finally {
      vscode.debug.removeBreakpoints([breakpoint]);
      tracker.dispose();
      terminations.dispose();
    }
  });

  it("Evaluate on Samples scores the RewardConfig with the nearest config's rows and tools, and a recorded run", async () => {
    const runDir = writeRecordedRun(path.join(workspace, 'authoring', 'recorded', 'run-authoring'), {
      steps: 2,
      batch: 8,
      groupSize: 4,
      seed: 21,
    });
    const records = new RunStoreReader(runDir).trajectories(2).records;
    fs.mkdirSync(path.join(multihop, 'data'), { recursive: true });
    fs.writeFileSync(
      path.join(multihop, 'data', 'train.jsonl'),
      rowsForRecordedRun(records)
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n',
    );

    const [configLens] = await lensesOf(path.join(multihop, 'rewards.ts'));
    const evaluation = await vscode.commands.executeCommand<RewardEvaluation>(
      configLens.command!.command,
      ...configLens.command!.arguments!,
      { run: runDir, samples: 4 },
    );
    assert.ok(evaluation, 'an evaluation came back');
    assert.equal(evaluation.kind, 'config');
    assert.equal(
      evaluation.data?.file,
      path.join(multihop, 'data', 'train.jsonl'),
      'the rows of multihop/config.ts (the config next to the rewards)',
    );
    const recorded = evaluation.samples.filter((s) => s.source === 'recorded');
    assert.equal(recorded.length, 4);
    for (const sample of recorded) assert.equal(sample.scores['exact_match'], sample.recorded!['exact_match']);
    assert.ok(evaluation.samples.filter((s) => s.source === 'gold').every((s) => s.scores['exact_match'] === 1));
    const document = await until('the evaluation document', () =>
      resultDocument(/rewards · Evaluate on Samples\.txt$/),
    );
    assert.match(document.getText(), /^Summary$/m);
    assert.match(document.getText(), /^recorded +exact_match +4 /m);
  });
});
