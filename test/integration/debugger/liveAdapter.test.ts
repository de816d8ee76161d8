/**
 * The rollout debug adapter training live: a real DAP client (@vscode/debugadapter-testsupport's
 * DebugClient) against the real trainer (its CLI from source, with IPC, exactly as the
 * extension starts it) on the tiny agent — a 2-layer model warm-started to call the
 * multihop-search example's `search` tool. Expectations come from the run store the trainer
 * writes, never from the adapter's code.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { renderTranscript } from '#trainer/contract/transcript';
import { serveAdapter, type AdapterServer } from '../../../extension/debugger/standalone';
import { TINY_QUERY, writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { processAlive, processGone, readRun, runsOf, sourceTrainerLaunch } from '../../helpers/liveTraining';

const BATCH = 4; // 2 prompts × 2 samples, 2 steps (the fixture's defaults)

let server: AdapterServer;
let workspace: string;
let config: string;

interface Session {
  dc: DebugClient;
  outputs: string[];
  events: DebugProtocol.Event[];
}

/**
 * Connect as VS Code does (progress reporting on), set breakpoints between `initialized` and
 * `configurationDone`, launch the config. Resolves once the launch has been answered.
 */
async function launch(
  args: Record<string, unknown>,
  breakpoints: {
    functions?: DebugProtocol.FunctionBreakpoint[];
    exceptions?: DebugProtocol.SetExceptionBreakpointsArguments;
  } = {},
): Promise<Session> {
  const dc = new DebugClient('node', 'unused', 'rollout');
  dc.defaultTimeout = 60_000;
  await dc.start(server.port);
  const outputs: string[] = [];
  const events: DebugProtocol.Event[] = [];
  dc.on('output', (event: DebugProtocol.OutputEvent) => outputs.push(event.body.output));
  for (const name of [
    'stopped',
    'terminated',
    'exited',
    'progressStart',
    'progressUpdate',
    'progressEnd',
    'capabilities',
    'thread',
    'rolloutTranscriptsChanged',
  ])
    dc.on(name, (event: DebugProtocol.Event) => events.push(event));
  await dc.initializeRequest({
    adapterID: 'rollout',
    linesStartAt1: true,
    columnsStartAt1: true,
    pathFormat: 'path',
    supportsProgressReporting: true,
  });
  await Promise.all([
    dc.waitForEvent('initialized').then(async () => {
      if (breakpoints.functions) await dc.setFunctionBreakpointsRequest({ breakpoints: breakpoints.functions });
      if (breakpoints.exceptions) await dc.setExceptionBreakpointsRequest(breakpoints.exceptions);
      await dc.configurationDoneRequest();
    }),
    dc.launchRequest({ config, ...args } as DebugProtocol.LaunchRequestArguments),
  ]);
  return { dc, outputs, events };
}

/** The next event named `name` after those already seen. */
async function next(session: Session, name: string, timeoutMs = 60_000): Promise<DebugProtocol.Event> {
  const seen = session.events.filter((e) => e.event === name).length;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = session.events.filter((e) => e.event === name)[seen];
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no "${name}" event within ${timeoutMs} ms; console:\n${session.outputs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The first event (seen or to come) that `matches`. */
async function first(
  session: Session,
  matches: (event: DebugProtocol.Event) => boolean,
  timeoutMs = 60_000,
): Promise<DebugProtocol.Event> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = session.events.find(matches);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no matching event within ${timeoutMs} ms; console:\n${session.outputs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function resume(
  session: Session,
  request: 'continue' | 'next' | 'stepIn' | 'stepOut',
  threadId: number,
): Promise<DebugProtocol.StoppedEvent> {
  const stopped = next(session, 'stopped');
  await session.dc[`${request}Request`]({ threadId });
  return (await stopped) as DebugProtocol.StoppedEvent;
}

async function frames(dc: DebugClient, threadId: number): Promise<DebugProtocol.StackFrame[]> {
  return (await dc.stackTraceRequest({ threadId })).body.stackFrames;
}

async function variablesOf(dc: DebugClient, reference: number): Promise<Map<string, DebugProtocol.Variable>> {
  return new Map((await dc.variablesRequest({ variablesReference: reference })).body.variables.map((v) => [v.name, v]));
}

async function scopeVariables(
  dc: DebugClient,
  frameId: number,
  scope: string,
): Promise<Map<string, DebugProtocol.Variable>> {
  const scopes = (await dc.scopesRequest({ frameId })).body.scopes;
  const found = scopes.find((s) => s.name === scope);
  assert.ok(found, `no scope "${scope}" among ${scopes.map((s) => s.name).join(', ')}`);
  return variablesOf(dc, found.variablesReference);
}

async function evaluate(dc: DebugClient, expression: string, frameId?: number): Promise<string> {
  return (await dc.evaluateRequest({ expression, context: 'repl', ...(frameId !== undefined ? { frameId } : {}) })).body
    .result;
}

async function status(dc: DebugClient): Promise<{ runDirectory: string; pid?: number; status?: string }> {
  return (await dc.customRequest('rolloutTraining')).body;
}

/** The run directory a session trains, once the trainer has created it. */
async function runDirectoryOf(session: Session): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { runDirectory } = await status(session.dc);
    if (runDirectory) return runDirectory;
    if (Date.now() > deadline) throw new Error(`the trainer created no run; console:\n${session.outputs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every completed step of the run reads back: its trajectories and its metrics validate. */
function assertRunStoreIntact(runDirectory: string, lastStep: number): void {
  const reader = new RunStoreReader(runDirectory);
  const run = reader.run();
  assert.equal(run.lastStep, lastStep);
  for (const step of reader.steps()) {
    const { records, tornLastLine } = reader.trajectories(step);
    assert.equal(tornLastLine, false, `step ${step} ends in a torn line`);
    assert.equal(records.length, BATCH, `step ${step} has ${records.length} trajectories`);
  }
  assert.deepEqual(
    reader.steps(),
    Array.from({ length: lastStep }, (_, i) => i + 1),
    'only completed steps have rollouts',
  );
  const trainMetrics = reader
    .metrics()
    .records.filter((m) => m.kind === 'train')
    .map((m) => m.step);
  assert.deepEqual(
    trainMetrics,
    Array.from({ length: lastStep }, (_, i) => i + 1),
  );
}

describe('rollout debug adapter, training live over DAP', { timeout: 480_000 }, () => {
  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'live-adapter-'));
    config = await writeTinyAgentWorkspace(workspace);
    server = await serveAdapter(0, { live: { launch: sourceTrainerLaunch(), stopTimeoutMs: 20_000 } });
  });
  after(async () => {
    await server?.close();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  it('stops before `search` with trajectories as threads, turns as frames and the arguments; steps in, next and out', async () => {
    const session = await launch({}, { functions: [{ name: 'search' }] });
    const { dc } = session;
    try {
      const stop = (await next(session, 'stopped')) as DebugProtocol.StoppedEvent;
      assert.equal(stop.body.reason, 'function breakpoint');
      assert.equal(stop.body.allThreadsStopped, true);
      assert.equal(stop.body.description, `Paused before search({"query":"${TINY_QUERY}"})`);
      const capabilities = session.events.find((e) => e.event === 'capabilities') as
        DebugProtocol.CapabilitiesEvent | undefined;
      assert.equal(capabilities?.body.capabilities.supportsStepBack, false, 'live training says it cannot step back');

      const threads = (await dc.threadsRequest()).body.threads;
      assert.equal(threads.length, BATCH);
      const threadId = stop.body.threadId!;
      const thread = threads.find((t) => t.id === threadId)!;
      assert.match(thread.name, /^#\d+ train-\d{4} \d\/\d — /);

      // Innermost the pending call, then its turn and the prompt's turns.
      const stack = await frames(dc, threadId);
      assert.equal(stack[0].name, `search({"query":"${TINY_QUERY}"}) · before it runs`);
      assert.deepEqual(
        stack.slice(1).map((f) => f.name),
        ['assistant (turn 2) · tool_call', 'user (turn 1)', 'system (turn 0)'],
      );
      const runDirectory = await runDirectoryOf(session);
      assert.match(
        stack[0].source?.path ?? '',
        new RegExp(`^rollout:${runDirectory}/step-000001/trajectory-\\d\\.rollout\\.txt$`),
      );
      const transcript = (
        await dc.customRequest('rolloutTranscript', {
          runDirectory,
          step: 1,
          index: Number(/#(\d+)/.exec(thread.name)![1]),
        })
      ).body.text as string;
      assert.equal(transcript.split('\n')[stack[0].line - 1], '<tool_call>');
      assert.match(transcript, /^rewards: pending/m);
      assert.match(transcript, /⟨call 0 search · not run yet⟩/);

      // The call's arguments; no result yet; rewards do not exist yet.
      const call = await scopeVariables(dc, stack[0].id, 'Tool call');
      assert.equal(call.get('name')?.value, '"search"');
      assert.equal(call.get('state')?.value, '"pending"');
      assert.equal(call.has('observation'), false);
      const args = await variablesOf(dc, call.get('arguments')!.variablesReference);
      assert.equal(args.get('query')?.value, JSON.stringify(TINY_QUERY));
      const rewards = await scopeVariables(dc, stack[0].id, 'Rewards');
      assert.match(rewards.get('status')?.value ?? '', /^"pending/);
      assert.equal(rewards.has('outcome'), false);
      const turn = await scopeVariables(dc, stack[0].id, 'Turn');
      assert.equal(turn.get('role')?.value, '"assistant"');
      const tokens = await variablesOf(dc, turn.get('tokens')!.variablesReference);
      assert.equal(
        tokens.get('generated')?.value,
        tokens.get('count')?.value,
        'every token of an assistant turn was generated',
      );

      // Conditions evaluate over the live turn context.
      assert.equal(await evaluate(dc, 'call.name === "search" && turn == 2', stack[0].id), 'true');
      assert.equal(await evaluate(dc, 'reward', stack[0].id), 'undefined');
      assert.equal(await evaluate(dc, 'call.arguments.query', stack[0].id), JSON.stringify(TINY_QUERY));

      // Step in: the call's result (it has run now).
      let event = await resume(session, 'stepIn', threadId);
      assert.equal(event.body.reason, 'step');
      assert.equal(event.body.threadId, threadId);
      let top = (await frames(dc, threadId))[0];
      assert.match(top.name, /^search\(\{"query":"William"\}\) → \d+ ms$/);
      const result = await scopeVariables(dc, top.id, 'Tool call');
      assert.equal(result.get('state')?.value, '"done"');
      assert.match(result.get('observation')?.value ?? '', /William/);

      // Next: the trajectory's next turn.
      event = await resume(session, 'next', threadId);
      assert.equal(event.body.reason, 'step');
      top = (await frames(dc, threadId))[0];
      assert.match(top.name, /^assistant \(turn 4\)/);

      // Step out: the trajectory's end.
      event = await resume(session, 'stepOut', threadId);
      assert.equal(event.body.reason, 'step');
      top = (await frames(dc, threadId))[0];
      assert.match(top.name, /^end · (answered|max_turns|max_total_tokens|max_turn_tokens|error) · rewards pending$/);

      await assert.rejects(dc.stepBackRequest({ threadId }), /only moves forwards/);

      // Without breakpoints, continue runs the training to its end.
      await dc.setFunctionBreakpointsRequest({ breakpoints: [] });
      const terminated = next(session, 'terminated');
      await dc.continueRequest({ threadId });
      await terminated;
      const run = readRun(runDirectory);
      assert.equal(run.status, 'finished');
      assert.equal(run.lastStep, 2);
      assertRunStoreIntact(runDirectory, 2);
      const progress = session.events
        .filter((e) => e.event === 'progressStart')
        .map((e) => (e as DebugProtocol.ProgressStartEvent).body.title);
      assert.ok(
        progress.includes('Rollout · step 2/2') && progress.includes('Update · step 2/2'),
        `progress: ${progress.join(', ')}`,
      );
    } finally {
      await dc.stop();
    }
  });

  it('a step goes past the other trajectories’ breakpoints and lists them; with "breakpointsDuringStep": "all" it stops at the next one', async () => {
    /** Step 1's search calls (that reached the tool: parsed, named) in the round of trajectory `index`'s first one, by the other trajectories. */
    const othersInRound = (runDirectory: string, index: number) => {
      const records = new RunStoreReader(runDirectory).trajectories(1).records;
      const searches = (t: (typeof records)[number]) =>
        t.turns.flatMap((u) =>
          (u.toolCalls ?? []).filter((c) => c.name === 'search' && c.error?.kind !== 'parse').map(() => u.index),
        );
      const round = searches(records.find((t) => t.index === index)!)[0];
      return records.filter((t) => t.index !== index && searches(t).includes(round)).map((t) => t.index);
    };
    const indexOf = async (dc: DebugClient, threadId: number) =>
      Number(/^#(\d+)/.exec((await dc.threadsRequest()).body.threads.find((t) => t.id === threadId)!.name)![1]);
    const finish = async (session: Session, threadId: number) => {
      await session.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
      const terminated = next(session, 'terminated');
      await session.dc.continueRequest({ threadId });
      await terminated;
    };

    const stepped = await launch({}, { functions: [{ name: 'search' }] });
    try {
      const stop = (await next(stepped, 'stopped')) as DebugProtocol.StoppedEvent;
      const index = await indexOf(stepped.dc, stop.body.threadId!);
      const event = await resume(stepped, 'next', stop.body.threadId!);
      assert.equal(event.body.reason, 'step');
      assert.equal(event.body.threadId, stop.body.threadId, 'the step ends on the stepped trajectory');
      await finish(stepped, event.body.threadId!);
      const passed = othersInRound(await runDirectoryOf(stepped), index);
      assert.ok(passed.length > 0, 'the tiny agent’s other trajectories search in the same round');
      const said = stepped.outputs.find((o) => o.startsWith('While stepping'));
      assert.ok(said, `the console lists what the step went past:\n${stepped.outputs.join('')}`);
      assert.match(
        said,
        new RegExp(`^While stepping #${index}, ${passed.length} breakpoint hits? in other trajectories did not stop: `),
      );
      for (const other of passed)
        assert.ok(said.includes(`step 1 #${other}: Paused before search(`), `${said} names #${other}`);
    } finally {
      await stepped.dc.stop();
    }

    const all = await launch({ breakpointsDuringStep: 'all' }, { functions: [{ name: 'search' }] });
    try {
      const stop = (await next(all, 'stopped')) as DebugProtocol.StoppedEvent;
      const index = await indexOf(all.dc, stop.body.threadId!);
      const event = await resume(all, 'next', stop.body.threadId!);
      assert.equal(event.body.reason, 'function breakpoint');
      const other = await indexOf(all.dc, event.body.threadId!);
      assert.match(event.body.description ?? '', /^Paused before search\(/);
      await finish(all, event.body.threadId!);
      assert.equal(
        other,
        othersInRound(await runDirectoryOf(all), index)[0],
        'the next search call of the round, in batch order',
      );
      assert.equal(all.outputs.filter((o) => o.startsWith('While stepping')).length, 0);
    } finally {
      await all.dc.stop();
    }
  });

  it('a transcript of a step the trainer has recorded shows its final records; one of a step it never recorded says so once the training has ended', async () => {
    const session = await launch({}, { functions: [{ name: 'search', condition: 'step == 1' }] });
    const { dc } = session;
    try {
      const stop = (await next(session, 'stopped')) as DebugProtocol.StoppedEvent;
      const runDirectory = await runDirectoryOf(session);
      const index = Number(
        /^#(\d+)/.exec((await dc.threadsRequest()).body.threads.find((t) => t.id === stop.body.threadId)!.name)![1],
      );
      const ask = async () =>
        (await dc.customRequest('rolloutTranscript', { runDirectory, step: 1, index })).body as {
          text: string;
          trajectory?: { inFlight?: unknown };
        };
      const during = await ask();
      assert.match(during.text, /⟨call 0 search · not run yet⟩/);
      assert.deepEqual(during.trajectory?.inFlight, { ended: false }, 'the snapshot comes with the text');

      // On to step 2: step 1 is recorded on the way, and the session says its transcripts changed.
      await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'search', condition: 'step == 2' }] });
      const second = await resume(session, 'continue', stop.body.threadId!);
      assert.equal(second.body.reason, 'function breakpoint');
      const changed = session.events
        .filter((e) => e.event === 'rolloutTranscriptsChanged')
        .map((e) => e.body as { runDirectory: string; step: number });
      assert.ok(
        changed.some((c) => c.step === 1 && c.runDirectory === runDirectory),
        `transcripts changed: ${JSON.stringify(changed)}`,
      );
      const recorded = new RunStoreReader(runDirectory).trajectories(1).records.find((t) => t.index === index)!;
      const after = await ask();
      assert.equal(after.text, renderTranscript(recorded).text, 'the recorded trajectory, as the run store has it');
      assert.doesNotMatch(after.text, /not run yet|pending|in progress/);
      assert.match(after.text, new RegExp(`^rewards: outcome ${recorded.rewards.outcome.toFixed(2)} · `, 'm'));

      // Stopped now, held in step 2: that step is never recorded, and its transcripts say so.
      const index2 = Number(
        /^#(\d+)/.exec((await dc.threadsRequest()).body.threads.find((t) => t.id === second.body.threadId)!.name)![1],
      );
      const terminated = next(session, 'terminated');
      await dc.terminateRequest({});
      await terminated;
      const runChanged = session.events
        .filter((e) => e.event === 'rolloutTranscriptsChanged')
        .map((e) => e.body as { runDirectory: string; step?: number });
      assert.ok(
        runChanged.some((c) => c.runDirectory === runDirectory && c.step === undefined),
        'the end of the training changes every transcript of the run',
      );
      assert.equal(readRun(runDirectory).status, 'stopped');
      assert.deepEqual(new RunStoreReader(runDirectory).steps(), [1]);
      const ended = (await dc.customRequest('rolloutTranscript', { runDirectory, step: 2, index: index2 })).body as {
        text: string;
      };
      assert.match(ended.text, /^note: the run stopped before step 2 was recorded; /m);
      assert.match(ended.text, /⟨call 0 search · result never known: the run stopped first⟩/);
      assert.match(ended.text, /^rewards: never computed \(the run stopped before step 2 was scored\)$/m);
      assert.doesNotMatch(ended.text, /not run yet|rewards pending|in progress/);
    } finally {
      await dc.disconnectRequest({}).catch(() => undefined);
      await dc.stop();
    }
  });

  it('a conditional breakpoint that never matches never stops: the training runs to its end', async () => {
    const session = await launch({}, { functions: [{ name: 'search', condition: 'turn > 99' }] });
    try {
      await next(session, 'terminated');
      assert.equal(session.events.filter((e) => e.event === 'stopped').length, 0);
      const runDirectory = runsOf(workspace).at(-1)!;
      assert.equal(readRun(runDirectory).status, 'finished');
      // The trainer did hold before each call and the condition was checked there: every search call of the run.
      const calls = new RunStoreReader(runDirectory)
        .steps()
        .flatMap((s) =>
          new RunStoreReader(runDirectory)
            .trajectories(s)
            .records.flatMap((t) => t.turns.flatMap((u) => u.toolCalls ?? [])),
        );
      assert.ok(
        calls.some((c) => c.name === 'search'),
        'the run made search calls the condition was checked on',
      );
    } finally {
      await session.dc.stop();
    }
  });

  it('stops on a tool-call parse failure (exception filter) at its result', async () => {
    // Constrained calls always parse: this run samples them freely, so the tiny agent garbles some.
    const free = path.join(workspace, 'free-calls.config.ts');
    fs.writeFileSync(
      free,
      fs.readFileSync(config, 'utf8').replace('temperature: 0.7,', 'temperature: 0.7,\n    constrainToolCalls: false,'),
    );
    const session = await launch({ config: free }, { exceptions: { filters: ['toolCallParse'] } });
    const { dc } = session;
    try {
      const stop = (await next(session, 'stopped')) as DebugProtocol.StoppedEvent;
      assert.equal(stop.body.reason, 'exception');
      const info = await dc.exceptionInfoRequest({ threadId: stop.body.threadId! });
      assert.equal(info.body.exceptionId, 'parse');
      const top = (await frames(dc, stop.body.threadId!))[0];
      assert.match(top.name, /→ error: parse$/);
    } finally {
      await dc.disconnectRequest({});
      await dc.stop();
    }
  });

  it('stop while held in the rollout: the trainer exits, run.json says stopped, completed steps intact', async () => {
    // Stop at step 2's first point: step 1 is complete, step 2 is in flight.
    const session = await launch({}, { functions: [{ name: 'search', condition: 'step == 2' }] });
    const { dc } = session;
    try {
      await next(session, 'stopped');
      const { pid, runDirectory } = await status(dc);
      assert.ok(pid && processAlive(pid));
      await dc.disconnectRequest({});
      await processGone(pid, 5_000);
      assert.equal(readRun(runDirectory).status, 'stopped');
      assertRunStoreIntact(runDirectory, 1);
    } finally {
      await dc.stop();
    }
  });

  it('stop during the update: the update finishes, the step is recorded, the run is stopped', async () => {
    const session = await launch({ noDebug: true });
    const { dc } = session;
    try {
      await first(
        session,
        (e) =>
          e.event === 'progressStart' && (e as DebugProtocol.ProgressStartEvent).body.title === 'Update · step 1/2',
      );
      const { pid, runDirectory } = await status(dc);
      await dc.disconnectRequest({});
      await processGone(pid!, 5_000);
      const run = readRun(runDirectory);
      assert.equal(run.status, 'stopped');
      assertRunStoreIntact(runDirectory, run.lastStep!);
      assert.ok(run.lastStep === 1, `the update in flight completed its step (last step ${run.lastStep})`);
    } finally {
      await dc.stop();
    }
  });

  it('a config the trainer refuses ends the session with its error, naming the field', async () => {
    const broken = path.join(workspace, 'broken.config.ts');
    fs.writeFileSync(broken, fs.readFileSync(config, 'utf8').replace(/\n {2}steps: \d+,/, '\n  steps: -1,'));
    const session = await launch({ config: broken });
    try {
      const exited = (await first(session, (e) => e.event === 'exited')) as DebugProtocol.ExitedEvent;
      await first(session, (e) => e.event === 'terminated');
      assert.equal(exited.body.exitCode, 1);
      const said = session.outputs.join('');
      assert.match(said, /The trainer failed: .*broken\.config\.ts: steps: /, said);
      assert.equal(session.events.filter((e) => e.event === 'stopped').length, 0);
    } finally {
      await session.dc.stop();
    }
  });

  it('a setup error after the device started (a bad dataset row) ends the session with its error: the trainer exits, nothing waits forever', async () => {
    const rows = path.join(workspace, 'data', 'bad-row.jsonl');
    fs.writeFileSync(rows, fs.readFileSync(path.join(workspace, 'data', 'train.jsonl'), 'utf8') + '{"id": "broken"}\n');
    const broken = path.join(workspace, 'bad-row.config.ts');
    fs.writeFileSync(
      broken,
      fs.readFileSync(config, 'utf8').replace("train: 'data/train.jsonl'", "train: 'data/bad-row.jsonl'"),
    );
    const session = await launch({ config: broken });
    try {
      const exited = (await first(session, (e) => e.event === 'exited')) as DebugProtocol.ExitedEvent;
      await first(session, (e) => e.event === 'terminated');
      assert.equal(exited.body.exitCode, 1);
      const said = session.outputs.join('');
      assert.match(said, /The trainer failed: .*bad-row\.jsonl:33: /, said);
    } finally {
      await session.dc.stop();
    }
  });

  it('pause stops at the next turn boundary of a training run without breakpoints', async () => {
    const session = await launch({});
    const { dc } = session;
    try {
      await next(session, 'progressStart');
      const stopped = next(session, 'stopped');
      await dc.pauseRequest({ threadId: 0 });
      const stop = (await stopped) as DebugProtocol.StoppedEvent;
      assert.equal(stop.body.reason, 'pause');
      const top = (await frames(dc, stop.body.threadId!))[0];
      assert.match(top.name, /^(assistant \(turn \d+\)|end · )/);
      const terminated = next(session, 'terminated');
      await dc.continueRequest({ threadId: stop.body.threadId! });
      await terminated;
      assert.equal(readRun((await status(dc)).runDirectory).status, 'finished');
    } finally {
      await dc.stop();
    }
  });
});
