import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { RolloutConfigurationProvider } from '../../../extension/debugger/configurationProvider';
import { transcriptUri } from '../../../extension/debugger/transcripts/transcriptUri';
import { RunStoreReader } from '#trainer/contract/runstore';
import { renderTranscript } from '#trainer/contract/transcript';
import { writeRecordedRun } from '../../fixtures/recordedRun';

/** Poll until `probe` returns something, or fail saying what never happened. */
async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Debugger: replaying a recorded run', () => {
  let folder: vscode.WorkspaceFolder;
  let runDir: string;
  const stops: DebugProtocol.StoppedEvent[] = [];
  const running = new Set<string>();
  const started: vscode.DebugSession[] = [];
  let tracker: vscode.Disposable;

  /** The next `stopped` event any rollout session sends. */
  function nextStop(): Promise<DebugProtocol.StoppedEvent> {
    const seen = stops.length;
    return waitFor('a stopped event', () => stops.length > seen && stops[seen]);
  }

  before(async () => {
    folder = vscode.workspace.workspaceFolders![0];
    runDir = writeRecordedRun(path.join(folder.uri.fsPath, '.rollout', 'runs', 'replay-it'), {
      steps: 2,
      batch: 4,
      groupSize: 2,
      seed: 7,
    });
    await vscode.extensions.getExtension('rollout-studio.rollout-studio')!.activate();
    // Watch the adapter's messages the way VS Code sees them, and which sessions are alive.
    tracker = vscode.Disposable.from(
      vscode.debug.registerDebugAdapterTrackerFactory('rollout', {
        createDebugAdapterTracker: () => ({
          onDidSendMessage: (message: DebugProtocol.ProtocolMessage) => {
            if (message.type === 'event' && (message as DebugProtocol.Event).event === 'stopped')
              stops.push(message as DebugProtocol.StoppedEvent);
          },
        }),
      }),
      vscode.debug.onDidStartDebugSession((session) => {
        running.add(session.id);
        started.push(session);
      }),
      vscode.debug.onDidTerminateDebugSession((session) => running.delete(session.id)),
    );
  });

  after(() => tracker?.dispose());

  afterEach(async () => {
    await vscode.debug.stopDebugging();
    await waitFor('the debug sessions to end', () => running.size === 0);
    vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
  });

  it('contributes the rollout debugger, the transcript language and Replay Run in Debugger…', async () => {
    assert.ok((await vscode.commands.getCommands(true)).includes('rolloutStudio.openRunInDebugger'));
    assert.ok((await vscode.languages.getLanguages()).includes('rollout-transcript'));
  });

  it('stops before a tool call and shows the frame in its rollout: transcript', async () => {
    vscode.debug.addBreakpoints([new vscode.FunctionBreakpoint('search')]);
    const stopped = nextStop();
    assert.equal(
      await vscode.debug.startDebugging(folder, {
        type: 'rollout',
        request: 'launch',
        name: 'Replay (extension test)',
        runDirectory: runDir,
      }),
      true,
    );
    const event = await stopped;
    assert.equal(event.body.reason, 'function breakpoint');

    const session = vscode.debug.activeDebugSession;
    assert.equal(session?.type, 'rollout');
    assert.equal(session?.name, 'Replay (extension test)');

    const stack = (await session!.customRequest('stackTrace', {
      threadId: event.body.threadId,
    })) as DebugProtocol.StackTraceResponse['body'];
    const top = stack.stackFrames[0];
    assert.match(top.name, /^search\(.*\) · before it runs$/);

    // VS Code opens the top frame's source: the transcript, in our language, at the call's line.
    const editor = await waitFor('the transcript editor', () =>
      vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === 'rollout'),
    );
    assert.equal(editor.document.uri.toString(), vscode.Uri.parse(top.source!.path!).toString());
    assert.equal(editor.document.languageId, 'rollout-transcript');
    assert.match(editor.document.getText(), /^═══ step 1 · #\d+ · row q-\d+/);
    assert.equal(editor.document.lineAt(top.line - 1).text, '<tool_call>');
    await waitFor('the editor to show the frame line', () =>
      editor.visibleRanges.some((r) => r.contains(new vscode.Position(top.line - 1, 0))),
    );
    const item = await waitFor(
      'the focused stack frame',
      () => vscode.debug.activeStackItem instanceof vscode.DebugStackFrame && vscode.debug.activeStackItem,
    );
    assert.equal((item as vscode.DebugStackFrame).session.id, session!.id);

    // The call's arguments, as the VARIABLES view reads them.
    const scopes = (await session!.customRequest('scopes', {
      frameId: top.id,
    })) as DebugProtocol.ScopesResponse['body'];
    assert.equal(scopes.scopes[0].name, 'Tool call');
    const call = (await session!.customRequest('variables', {
      variablesReference: scopes.scopes[0].variablesReference,
    })) as DebugProtocol.VariablesResponse['body'];
    const args = call.variables.find((v) => v.name === 'arguments')!;
    const fields = (await session!.customRequest('variables', {
      variablesReference: args.variablesReference,
    })) as DebugProtocol.VariablesResponse['body'];
    assert.equal(fields.variables[0].name, 'query');

    // Stepping moves the editor along.
    const stepped = nextStop();
    await session!.customRequest('stepIn', { threadId: event.body.threadId });
    assert.equal((await stepped).body.reason, 'step');
  });

  it('Replay Run in Debugger… replays the run it is given, stopped at the first turn', async () => {
    const stopped = nextStop();
    assert.equal(
      await vscode.commands.executeCommand(
        'rolloutStudio.openRunInDebugger',
        vscode.Uri.file(path.join(runDir, 'run.json')),
      ),
      true,
    );
    const event = await stopped;
    assert.equal(event.body.reason, 'entry');
    assert.match(
      vscode.debug.activeDebugSession?.name ?? '',
      /^Replay multihop-search \(recorded fixture\) \(replay-it\)$/,
    );
  });

  it("Open in Debugger (a trajectory of the Trajectories panel) replays stopped at that trajectory's first turn", async () => {
    const wanted = new RunStoreReader(runDir).trajectories(2).records[3];
    const stopped = nextStop();
    assert.equal(
      await vscode.commands.executeCommand('rolloutStudio.openRunInDebugger', {
        runDirectory: runDir,
        step: 2,
        trajectory: wanted.index,
      }),
      true,
    );
    const event = await stopped;
    assert.equal(event.body.reason, 'entry');
    // Named for the trajectory. (Found among the started sessions: VS Code does not always make a
    // new session the active one while the previous test's is being torn down.)
    const name = `Replay multihop-search (recorded fixture) (replay-it) · step 2 #${wanted.index}`;
    const session = await waitFor(`a session named "${name}"`, () => started.find((s) => s.name === name));
    const threads = (await session.customRequest('threads')) as DebugProtocol.ThreadsResponse['body'];
    assert.match(
      threads.threads.find((t) => t.id === event.body.threadId)!.name,
      new RegExp(`^#${wanted.index} ${wanted.rowId} `),
    );
    // VS Code shows that trajectory's transcript (the stopped frame's source).
    const header = new RegExp(`^═══ step 2 · #${wanted.index} · row ${wanted.rowId} `);
    await waitFor(`the transcript of #${wanted.index} in an editor`, () =>
      vscode.window.visibleTextEditors.find(
        (e) => e.document.uri.scheme === 'rollout' && header.test(e.document.getText()),
      ),
    );
  });

  it('offers the workspace runs as replay configurations', async () => {
    const configurations = await new RolloutConfigurationProvider().provideDebugConfigurations(folder);
    assert.deepEqual(
      configurations.find((c) => c.runDirectory === '${workspaceFolder}/.rollout/runs/replay-it'),
      {
        type: 'rollout',
        request: 'launch',
        name: 'Replay multihop-search (recorded fixture) (replay-it)',
        runDirectory: '${workspaceFolder}/.rollout/runs/replay-it',
        stopOnEntry: true,
      },
    );
  });

  it('replays the newest run on F5 without a launch.json, and resolves relative run directories', () => {
    const provider = new RolloutConfigurationProvider();
    const resolved = provider.resolveDebugConfiguration(folder, { type: '', request: '', name: '' });
    assert.equal(resolved?.runDirectory, runDir);
    assert.equal(resolved?.stopOnEntry, true);
    const relative = provider.resolveDebugConfigurationWithSubstitutedVariables(folder, {
      type: 'rollout',
      request: 'launch',
      name: 'r',
      runDirectory: '.rollout/runs/replay-it',
    });
    assert.equal(relative.runDirectory, runDir);
  });

  it('opens a transcript without a session from the run directory', async () => {
    const uri = vscode.Uri.parse(transcriptUri({ runDirectory: runDir, step: 2, index: 1 }));
    const document = await vscode.workspace.openTextDocument(uri);
    const record = new RunStoreReader(runDir).trajectories(2).records.find((t) => t.index === 1)!;
    assert.equal(document.getText(), renderTranscript(record).text);
    assert.equal(document.languageId, 'rollout-transcript');
  });

  it('says a trajectory was never recorded instead of failing to open it', async () => {
    assert.equal(new RunStoreReader(runDir).run().status, 'finished');
    const document = await vscode.workspace.openTextDocument(
      vscode.Uri.parse(transcriptUri({ runDirectory: runDir, step: 9, index: 0 })),
    );
    assert.match(
      document.getText(),
      /^There is no step 9, trajectory #0 of .*replay-it: the run finished before it was recorded\.\n$/,
    );
  });
});
