/**
 * The rollout debug adapter in replay mode, driven by a real DAP client
 * (@vscode/debugadapter-testsupport's DebugClient) over a socket, on a recorded run written by
 * the run store's own writer. Expectations are computed from the records, not from the
 * adapter's code.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { PROTOCOL_VERSION, type ToolCallRecord, type TrajectoryRecord } from '#trainer/contract/protocol';
import { RunStoreReader, RunStoreWriter, writeBranchSet } from '#trainer/contract/runstore';
import { renderTranscript } from '#trainer/contract/transcript';
import { serveAdapter, type AdapterServer } from '../../../extension/debugger/standalone';
import { transcriptUri } from '../../../extension/debugger/transcripts/transcriptUri';
import { buildTrajectory, writeRecordedRun } from '../../fixtures/recordedRun';

const STEPS = 3;
const BATCH = 4;

let server: AdapterServer;
let runDir: string;
let reader: RunStoreReader;

/** Every call of a step in the order a batch meets them: turn by turn, trajectory by trajectory. */
function callsInBatchOrder(step: number): Array<{ trajectory: TrajectoryRecord; turn: number; call: ToolCallRecord }> {
  const trajectories = reader.trajectories(step).records;
  const rounds = Math.max(...trajectories.map((t) => t.turns.length));
  const out: Array<{ trajectory: TrajectoryRecord; turn: number; call: ToolCallRecord }> = [];
  for (let turn = 0; turn < rounds; turn++) {
    for (const trajectory of trajectories)
      for (const call of trajectory.turns[turn]?.toolCalls ?? []) out.push({ trajectory, turn, call });
  }
  return out;
}

function allCalls() {
  return reader.steps().flatMap((step) => callsInBatchOrder(step).map((c) => ({ step, ...c })));
}

function directoryDigest(dir: string): string {
  const hash = crypto.createHash('sha256');
  for (const file of (fs.readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const full = path.join(dir, file);
    const stat = fs.statSync(full);
    hash.update(`${file}:${stat.mtimeMs}:${stat.isFile() ? fs.readFileSync(full, 'base64') : 'dir'}\n`);
  }
  return hash.digest('hex');
}

interface Started {
  dc: DebugClient;
  stop: DebugProtocol.StoppedEvent;
  outputs: string[];
}

/** Connect, set breakpoints between `initialized` and `configurationDone`, launch, wait for the first stop. */
async function start(
  launch: Record<string, unknown>,
  breakpoints: {
    functions?: DebugProtocol.FunctionBreakpoint[];
    exceptions?: DebugProtocol.SetExceptionBreakpointsArguments;
    lines?: DebugProtocol.SetBreakpointsArguments;
  } = {},
  answers: { functions?: DebugProtocol.Breakpoint[]; lines?: DebugProtocol.Breakpoint[] } = {},
): Promise<Started> {
  const dc = new DebugClient('node', 'unused', 'rollout');
  await dc.start(server.port);
  const outputs: string[] = [];
  dc.on('output', (event: DebugProtocol.OutputEvent) => outputs.push(event.body.output));
  const stopped = dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await Promise.all([
    dc.waitForEvent('initialized').then(async () => {
      if (breakpoints.functions)
        answers.functions = (
          await dc.setFunctionBreakpointsRequest({ breakpoints: breakpoints.functions })
        ).body.breakpoints;
      if (breakpoints.exceptions) await dc.setExceptionBreakpointsRequest(breakpoints.exceptions);
      if (breakpoints.lines) answers.lines = (await dc.setBreakpointsRequest(breakpoints.lines)).body.breakpoints;
      await dc.configurationDoneRequest();
    }),
    dc.launch({ runDirectory: runDir, ...launch }),
  ]);
  return { dc, stop: await stopped, outputs };
}

async function resume(
  dc: DebugClient,
  request: 'continue' | 'next' | 'stepIn' | 'stepOut' | 'stepBack' | 'reverseContinue',
  threadId: number,
): Promise<DebugProtocol.StoppedEvent> {
  const stopped = dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await dc[`${request}Request`]({ threadId });
  return stopped;
}

async function topFrame(dc: DebugClient, threadId: number): Promise<DebugProtocol.StackFrame> {
  return (await dc.stackTraceRequest({ threadId })).body.stackFrames[0];
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

/** The 1-based transcript line the adapter must point at, from the renderer's tables. */
function transcriptLine(trajectory: TrajectoryRecord, turn: number, call: number, phase: 'call' | 'result'): number {
  const lines = renderTranscript(trajectory).callLines.find((c) => c.turn === turn && c.call === call)!;
  return (phase === 'call' ? lines.line : lines.resultLine) + 1;
}

describe('rollout debug adapter, replaying a recorded run over DAP', { timeout: 60_000 }, () => {
  before(async () => {
    runDir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'replay-adapter-')), 'run-7'), {
      steps: STEPS,
      batch: BATCH,
      groupSize: 2,
      seed: 7,
    });
    reader = new RunStoreReader(runDir);
    server = await serveAdapter();
  });
  after(() => server?.close());

  it('stops before the first search call with threads, frames, scopes and the call arguments', async () => {
    const digest = directoryDigest(runDir);
    const first = callsInBatchOrder(1).find((c) => c.call.name === 'search')!;
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    try {
      assert.equal(stop.body.reason, 'function breakpoint');
      assert.equal(stop.body.allThreadsStopped, true);
      assert.match(stop.body.description ?? '', /^Paused before search\(/);

      const threads = (await dc.threadsRequest()).body.threads;
      assert.equal(threads.length, BATCH);
      const thread = threads.find((t) => t.id === stop.body.threadId)!;
      const t = first.trajectory;
      assert.ok(thread.name.startsWith(`#${t.index} ${t.rowId} ${t.group}/${t.sample} — In which city`), thread.name);

      const frames = (await dc.stackTraceRequest({ threadId: thread.id })).body.stackFrames;
      // Innermost: the pending call; then its turn and every earlier turn, outwards.
      assert.match(frames[0].name, /^search\(\{"query":".+"\}\) · before it runs$/);
      assert.deepEqual(
        frames.slice(1).map((f) => f.name),
        Array.from({ length: first.turn + 1 }, (_, i) => first.turn - i).map((turn) => {
          const record = t.turns[turn];
          return `${record.role} (turn ${turn})${record.finish ? ` · ${record.finish}` : ''}`;
        }),
      );
      assert.equal(frames[0].source?.path, `rollout:${runDir}/step-000001/trajectory-${t.index}.rollout.txt`);
      assert.equal(frames[0].line, transcriptLine(t, first.turn, first.call.index, 'call'));
      assert.equal(frames[1].line, renderTranscript(t).turnLines[first.turn] + 1);

      // The call's scope shows what the policy wrote; its result is not there yet.
      const call = await scopeVariables(dc, frames[0].id, 'Tool call');
      assert.equal(call.get('name')?.value, '"search"');
      assert.equal(call.get('state')?.value, '"pending"');
      assert.equal(call.has('observation'), false, 'a pending call has no observation yet');
      const args = await variablesOf(dc, call.get('arguments')!.variablesReference);
      assert.equal(args.get('query')?.value, JSON.stringify((first.call.arguments as { query: string }).query));
      assert.equal(args.get('query')?.evaluateName, 'call.arguments.query');

      const turn = await scopeVariables(dc, frames[0].id, 'Turn');
      assert.equal(turn.get('role')?.value, '"assistant"');
      assert.equal(turn.get('text')?.value, JSON.stringify(t.turns[first.turn].text));
      const tokens = await variablesOf(dc, turn.get('tokens')!.variablesReference);
      assert.equal(tokens.get('count')?.value, String(t.turns[first.turn].tokenEnd - t.turns[first.turn].tokenStart));
      assert.ok(turn.has('logprob'));

      const rewards = await scopeVariables(dc, frames[0].id, 'Rewards');
      assert.equal(rewards.get('outcome')?.value, String(t.rewards.outcome));
      assert.equal(rewards.get('advantage')?.value, String(t.advantage));
      assert.equal(rewards.get('processSoFar')?.value, '0');

      const step = await scopeVariables(dc, frames[0].id, 'Step');
      assert.equal(step.get('step')?.value, '1');
      const metrics = await variablesOf(dc, step.get('metrics')!.variablesReference);
      assert.equal(metrics.get('reward/mean')?.value, String(reader.metrics().records[0].values['reward/mean']));

      // The transcript the frame points at, served by the adapter.
      const transcript = await dc.customRequest('rolloutTranscript', { runDirectory: runDir, step: 1, index: t.index });
      assert.equal(transcript.body.text, renderTranscript(t).text);
    } finally {
      await dc.stop();
    }
    assert.equal(directoryDigest(runDir), digest, 'replay wrote to the run directory');
  });

  it('steps in to the result, next to the next turn, out to the end, and back', async () => {
    const first = callsInBatchOrder(1).find((c) => c.call.name === 'search')!;
    const t = first.trajectory;
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    const threadId = stop.body.threadId!;
    try {
      let event = await resume(dc, 'stepIn', threadId);
      assert.equal(event.body.reason, 'step');
      assert.equal(event.body.threadId, threadId);
      let frame = await topFrame(dc, threadId);
      assert.match(frame.name, /^search\(.*\) → /);
      assert.equal(frame.line, transcriptLine(t, first.turn, first.call.index, 'result'));
      const result = await scopeVariables(dc, frame.id, 'Tool call');
      assert.equal(result.get('observation')?.value, JSON.stringify(first.call.observation));
      assert.equal(result.get('latencyMs')?.value, String(first.call.latencyMs));

      event = await resume(dc, 'stepIn', threadId);
      frame = await topFrame(dc, threadId);
      assert.equal(frame.name, `tool (turn ${first.turn + 1})`, 'after the result, step in goes to the next turn');

      await resume(dc, 'next', threadId);
      frame = await topFrame(dc, threadId);
      assert.match(frame.name, new RegExp(`^assistant \\(turn ${first.turn + 2}\\)`));

      event = await resume(dc, 'stepOut', threadId);
      assert.equal(event.body.reason, 'step');
      frame = await topFrame(dc, threadId);
      assert.equal(
        frame.name,
        `end · ${t.finishReason} · total ${t.rewards.total.toFixed(2)} · advantage ${t.advantage! >= 0 ? '+' : ''}${t.advantage!.toFixed(2)}`,
      );
      assert.equal(frame.line, renderTranscript(t).endLine + 1);
      const endScopes = (await dc.scopesRequest({ frameId: frame.id })).body.scopes.map((s) => s.name);
      assert.deepEqual(endScopes, ['Rewards', 'Step']);

      event = await resume(dc, 'stepBack', threadId);
      assert.equal(event.body.reason, 'step');
      frame = await topFrame(dc, threadId);
      assert.equal(
        frame.name,
        `${t.turns[t.turns.length - 1].role} (turn ${t.turns.length - 1}) · ${t.turns[t.turns.length - 1].finish}`,
      );

      // Backwards to the breakpoint we came from.
      event = await resume(dc, 'reverseContinue', threadId);
      assert.equal(event.body.reason, 'function breakpoint');
      assert.equal(event.body.threadId, threadId);
      frame = await topFrame(dc, threadId);
      assert.equal(frame.line, transcriptLine(t, first.turn, first.call.index, 'call'));

      // `first` is the first search call of the run: further back there is only the start.
      event = await resume(dc, 'reverseContinue', threadId);
      assert.equal(event.body.reason, 'start');
    } finally {
      await dc.stop();
    }
  });

  it('steps the trajectory asked for, while the others run along with the batch', async () => {
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    try {
      const threads = (await dc.threadsRequest()).body.threads;
      // A trajectory later in the batch, still at a turn boundary (it has not reached this round's calls).
      const atTurn = await Promise.all(
        threads.map(async (t) => /^\w+ \(turn \d+\)/.test((await topFrame(dc, t.id)).name)),
      );
      const other = threads.find((t, i) => t.id !== stop.body.threadId && atTurn[i])!;
      assert.ok(other, 'the fixture has a trajectory waiting at a turn boundary');
      const turnOf = async (threadId: number) =>
        Number(
          /\(turn (\d+)\)/.exec(
            (await dc.stackTraceRequest({ threadId })).body.stackFrames.find((f) => /\(turn \d+\)/.test(f.name))!.name,
          )![1],
        );
      const before = await turnOf(other.id);
      let event = await resume(dc, 'stepBack', other.id);
      assert.equal(event.body.threadId, other.id, 'the stop focuses the stepped trajectory');
      assert.equal(await turnOf(other.id), before - 1);
      event = await resume(dc, 'next', other.id);
      assert.equal(await turnOf(other.id), before);
      event = await resume(dc, 'next', other.id);
      assert.equal(event.body.reason, 'step');
      assert.equal(await turnOf(other.id), before + 1);
      // The batch moved with it: the trajectory that hit the breakpoint is past its call now.
      assert.doesNotMatch((await topFrame(dc, stop.body.threadId!)).name, /before it runs/);
    } finally {
      await dc.stop();
    }
  });

  it('a step goes past other trajectories’ breakpoints and lists them; with "breakpointsDuringStep": "all" it stops at the first', async () => {
    // A step whose first search call has others in its round: between that call and its
    // trajectory's next turn, the batch meets the other trajectories' calls of the round.
    const [step, first, sameRound] = reader
      .steps()
      .map((step) => {
        const searches = callsInBatchOrder(step).filter((c) => c.call.name === 'search');
        return [
          step,
          searches[0],
          searches.filter((c) => c.turn === searches[0]?.turn && c.trajectory.index !== searches[0].trajectory.index),
        ] as const;
      })
      .find(([, , others]) => others.length > 0)!;
    assert.ok(first, 'the fixture has a search call with others in its round');
    const breakpoint = { name: 'search', condition: `step === ${step}` };

    const stepped = await start({}, { functions: [breakpoint] });
    try {
      const event = await resume(stepped.dc, 'next', stepped.stop.body.threadId!);
      assert.equal(event.body.reason, 'step');
      assert.equal(event.body.threadId, stepped.stop.body.threadId);
      assert.equal((await topFrame(stepped.dc, event.body.threadId!)).name, `tool (turn ${first.turn + 1})`);
      const said = stepped.outputs.find((o) => o.startsWith('While stepping'));
      assert.ok(said, `the console lists what the step went past: ${stepped.outputs.join('')}`);
      assert.match(
        said,
        new RegExp(
          `^While stepping #${first.trajectory.index}, ${sameRound.length} breakpoint hits? in other trajectories did not stop: `,
        ),
      );
      for (const c of sameRound)
        assert.ok(
          said.includes(`step ${step} #${c.trajectory.index}: Paused before search(`),
          `${said} names #${c.trajectory.index}`,
        );
    } finally {
      await stepped.dc.stop();
    }

    const all = await start({ breakpointsDuringStep: 'all' }, { functions: [breakpoint] });
    try {
      const event = await resume(all.dc, 'next', all.stop.body.threadId!);
      assert.equal(event.body.reason, 'function breakpoint');
      assert.notEqual(event.body.threadId, all.stop.body.threadId, 'the stop focuses the other trajectory');
      const frame = await topFrame(all.dc, event.body.threadId!);
      const next = sameRound[0];
      assert.equal(
        frame.source?.path,
        `rollout:${runDir}/step-${String(step).padStart(6, '0')}/trajectory-${next.trajectory.index}.rollout.txt`,
      );
      assert.equal(frame.line, transcriptLine(next.trajectory, next.turn, next.call.index, 'call'));
      assert.equal(all.outputs.filter((o) => o.startsWith('While stepping')).length, 0);
    } finally {
      await all.dc.stop();
    }
  });

  it('continues across steps: every search call in order, new threads for each step, then the end', async () => {
    const expected = allCalls().filter((c) => c.call.name === 'search');
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    const threadEvents: DebugProtocol.ThreadEvent[] = [];
    dc.on('thread', (e: DebugProtocol.ThreadEvent) => threadEvents.push(e));
    try {
      let event = stop;
      const seen: string[] = [];
      for (;;) {
        if (event.body.reason === 'end') break;
        assert.equal(event.body.reason, 'function breakpoint');
        const frame = await topFrame(dc, event.body.threadId!);
        const threads = (await dc.threadsRequest()).body.threads;
        seen.push(
          `${frame
            .source!.path!.match(/step-(\d+)\/trajectory-(\d+)/)!
            .slice(1)
            .map(Number)
            .join('/')}@${frame.line}`,
        );
        assert.equal(threads.length, BATCH);
        event = await resume(dc, 'continue', event.body.threadId!);
      }
      assert.deepEqual(
        seen,
        expected.map(
          (c) => `${c.step}/${c.trajectory.index}@${transcriptLine(c.trajectory, c.turn, c.call.index, 'call')}`,
        ),
      );
      assert.match(event.body.description ?? '', /^End of the run \(step 3, finished\)/);
      // Each step change retires the batch's threads and starts the next batch's.
      assert.equal(threadEvents.filter((e) => e.body.reason === 'exited').length, BATCH * (STEPS - 1));
      assert.equal(threadEvents.filter((e) => e.body.reason === 'started').length, BATCH * (STEPS - 1));
    } finally {
      await dc.stop();
    }
  });

  it('a condition that never matches never stops: the replay runs to the end of the run', async () => {
    const answers: { functions?: DebugProtocol.Breakpoint[] } = {};
    const { dc, stop } = await start({}, { functions: [{ name: 'search', condition: 'reward < 0' }] }, answers);
    try {
      assert.equal(answers.functions![0].verified, true);
      assert.equal(stop.body.reason, 'end');
      const threads = (await dc.threadsRequest()).body.threads;
      const frame = await topFrame(dc, threads[0].id);
      assert.match(frame.source!.path!, /step-000003\//);
      assert.match(frame.name, /^end · /);
    } finally {
      await dc.stop();
    }
  });

  it('conditions and hit counts select which calls stop', async () => {
    const calls = allCalls().filter((c) => c.call.name === 'search');
    const third = calls[2];
    const { dc, stop } = await start({}, { functions: [{ name: 'search', hitCondition: '==3' }] });
    try {
      assert.equal(stop.body.reason, 'function breakpoint');
      assert.equal(
        (await topFrame(dc, stop.body.threadId!)).line,
        transcriptLine(third.trajectory, third.turn, third.call.index, 'call'),
      );
      assert.equal(
        (await resume(dc, 'continue', stop.body.threadId!)).body.reason,
        'end',
        '==3 stops at the third hit only',
      );
    } finally {
      await dc.stop();
    }
    const inStep2 = calls.find((c) => c.step === 2 && c.turn > 3)!;
    const second = await start({}, { functions: [{ name: 'search', condition: 'step === 2 && turn > 3' }] });
    try {
      assert.equal(
        (await topFrame(second.dc, second.stop.body.threadId!)).line,
        transcriptLine(inStep2.trajectory, inStep2.turn, inStep2.call.index, 'call'),
      );
    } finally {
      await second.dc.stop();
    }
  });

  it('rejects a condition with a typo when it is set, naming the unknown field', async () => {
    const answers: { functions?: DebugProtocol.Breakpoint[] } = {};
    const { dc, stop } = await start(
      {},
      {
        functions: [
          { name: 'search', condition: 'rewad < 0' },
          { name: 'search', hitCondition: 'often' },
        ],
      },
      answers,
    );
    try {
      assert.equal(answers.functions![0].verified, false);
      assert.match(answers.functions![0].message!, /unknown name "rewad"; the turn context has: .*reward/);
      assert.equal(answers.functions![1].verified, false);
      assert.match(answers.functions![1].message!, /hit count "often"/);
      assert.equal(stop.body.reason, 'end');
    } finally {
      await dc.stop();
    }
  });

  it('exception filters stop on the recorded timeouts and parse failures', async () => {
    const failures = allCalls().filter((c) => c.call.error);
    const timeout = failures.find((c) => c.call.error!.kind === 'timeout' || c.call.error!.kind === 'threw');
    const parse = failures.find((c) => c.call.error!.kind === 'parse');
    assert.ok(timeout && parse, 'the fixture run records a timeout (or throw) and a parse failure');

    const thrown = await start({}, { exceptions: { filters: ['toolThrew'] } });
    try {
      assert.equal(thrown.stop.body.reason, 'exception');
      const frame = await topFrame(thrown.dc, thrown.stop.body.threadId!);
      assert.equal(frame.line, transcriptLine(timeout.trajectory, timeout.turn, timeout.call.index, 'result'));
      const info = await thrown.dc.exceptionInfoRequest({ threadId: thrown.stop.body.threadId! });
      assert.equal(info.body.exceptionId, timeout.call.error!.kind);
      assert.ok(info.body.description!.includes(timeout.call.error!.message.split('\n')[0]));
    } finally {
      await thrown.dc.stop();
    }

    const parsed = await start(
      {},
      { exceptions: { filters: [], filterOptions: [{ filterId: 'toolCallParse', condition: 'phase === "call"' }] } },
    );
    try {
      assert.equal(parsed.stop.body.reason, 'exception');
      assert.match(parsed.stop.body.text ?? '', /^Tool-call parse failure: /);
      const frame = await topFrame(parsed.dc, parsed.stop.body.threadId!);
      assert.equal(frame.name, '<unparsed call>() · before it runs');
      assert.equal(frame.line, transcriptLine(parse.trajectory, parse.turn, parse.call.index, 'call'));
      const call = await scopeVariables(parsed.dc, frame.id, 'Tool call');
      assert.equal(call.get('raw')?.value, JSON.stringify(parse.call.raw));
      const error = await variablesOf(parsed.dc, call.get('error')!.variablesReference);
      assert.equal(error.get('kind')?.value, '"parse"', 'a parse failure is known before the call runs');
    } finally {
      await parsed.dc.stop();
    }
  });

  it('stops on a turn cut by its token budget and on a step whose loss was not finite', async () => {
    // A one-step run edited by hand: trajectory #1 ends in a turn stopped at the per-turn budget,
    // and the update was skipped because the loss was NaN.
    const dir = path.join(path.dirname(runDir), 'run-nan');
    let seed = 5;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const trajectories = [0, 1].map((i) => buildTrajectory(1, i, 2, random));
    const cut = trajectories[1];
    const last = cut.turns[cut.turns.length - 1];
    Object.assign(last, { finish: 'length' });
    Object.assign(cut, { finishReason: 'max_turn_tokens', answer: undefined });
    const writer = RunStoreWriter.create(dir, { ...reader.run(), id: 'run-nan', status: 'running', totalSteps: 1 });
    writer.appendTrajectories(1, trajectories);
    writer.appendMetrics({
      step: 1,
      time: '2026-11-30T09:00:41Z',
      kind: 'train',
      values: { 'reward/mean': 0.5, 'loss/total': null },
      nonFinite: ['loss/total'],
      skipped: { reason: 'the loss was NaN' },
    });
    writer.completeStep(1);
    writer.finish('failed', { message: 'loss became NaN', step: 1 });

    const truncated = await start({ runDirectory: dir }, { exceptions: { filters: ['truncated'] } });
    try {
      assert.equal(truncated.stop.body.reason, 'exception');
      const frame = await topFrame(truncated.dc, truncated.stop.body.threadId!);
      assert.equal(frame.name, `assistant (turn ${last.index}) · length`);
      assert.equal(frame.line, renderTranscript(cut).turnLines[last.index] + 1);
      assert.equal(
        (await truncated.dc.exceptionInfoRequest({ threadId: truncated.stop.body.threadId! })).body.exceptionId,
        'max_turn_tokens',
      );
    } finally {
      await truncated.dc.stop();
    }

    const nan = await start({ runDirectory: dir }, { exceptions: { filters: ['nonFiniteLoss'] } });
    try {
      assert.equal(nan.stop.body.reason, 'exception');
      assert.equal(nan.stop.body.text, 'Step 1: loss/total not finite — the loss was NaN');
      const info = await nan.dc.exceptionInfoRequest({ threadId: nan.stop.body.threadId! });
      assert.equal(info.body.exceptionId, 'non-finite loss');
      // At the update every trajectory has ended; the console reads the step's metrics.
      for (const thread of (await nan.dc.threadsRequest()).body.threads)
        assert.match((await topFrame(nan.dc, thread.id)).name, /^end · /);
      assert.equal(await evaluate(nan.dc, 'metrics["loss/total"]'), 'null');
      assert.equal(await evaluate(nan.dc, 'phase'), '"update"');
      assert.equal(
        (await resume(nan.dc, 'continue', nan.stop.body.threadId!)).body.description,
        'End of the run (step 1, failed): step back or reverse-continue to go back',
      );
    } finally {
      await nan.dc.stop();
    }
  });

  it('evaluates expressions over the turn context in the debug console', async () => {
    const first = callsInBatchOrder(1).find((c) => c.call.name === 'search')!;
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    try {
      const frameId = (await topFrame(dc, stop.body.threadId!)).id;
      assert.equal(await evaluate(dc, 'call.name === "search"', frameId), 'true');
      assert.equal(await evaluate(dc, 'turn > 3', frameId), String(first.turn > 3));
      assert.equal(await evaluate(dc, 'advantage > 0.5', frameId), String(first.trajectory.advantage! > 0.5));
      assert.equal(await evaluate(dc, 'reward < 0', frameId), 'false');
      assert.equal(
        await evaluate(dc, 'call.arguments.query', frameId),
        JSON.stringify((first.call.arguments as { query: string }).query),
      );
      assert.equal(
        await evaluate(dc, 'metrics["reward/mean"]', frameId),
        String(reader.metrics().records[0].values['reward/mean']),
      );
      const object = await dc.evaluateRequest({ expression: 'call.arguments', frameId, context: 'watch' });
      assert.ok(object.body.variablesReference > 0, 'objects can be expanded');
      await assert.rejects(
        dc.evaluateRequest({ expression: 'process.exit(1)', frameId, context: 'repl' }),
        /cannot call \.exit\(\) on number/,
      );
      assert.equal(await evaluate(dc, 'call.constructor', frameId), 'undefined', 'no prototype access');
      await assert.rejects(
        dc.evaluateRequest({ expression: 'rewad', frameId, context: 'repl' }),
        /unknown name "rewad"/,
      );
      const completions = await dc.completionsRequest({ text: 'call.ar', column: 8, frameId });
      assert.deepEqual(
        completions.body.targets.map((c) => c.label),
        ['arguments'],
      );
    } finally {
      await dc.stop();
    }
  });

  it('transcript lines take breakpoints and logpoints for their trajectory', async () => {
    const first = callsInBatchOrder(1).find((c) => c.call.name === 'search')!;
    const t = first.trajectory;
    const rendered = renderTranscript(t);
    const lastTurn = t.turns.length - 1;
    const source = { path: transcriptUri({ runDirectory: runDir, step: 1, index: t.index }) };
    const callLine = transcriptLine(t, first.turn, first.call.index, 'call');
    const answers: { lines?: DebugProtocol.Breakpoint[] } = {};
    const { dc, stop, outputs } = await start(
      {},
      {
        lines: {
          source,
          breakpoints: [
            { line: callLine, logMessage: 'search {call.arguments.query} in #{index}, turn {turn}, {{braces}}' },
            { line: rendered.turnLines[lastTurn] + 2, condition: 'role === "assistant"' },
            { line: rendered.endLine + 1, condition: 'reward < 0' },
          ],
        },
      },
      answers,
    );
    try {
      // A line inside a turn's text stands for the turn: the breakpoint moves to its header.
      assert.deepEqual(
        answers.lines!.map((a) => [a.verified, a.line]),
        [
          [true, callLine],
          [true, rendered.turnLines[lastTurn] + 1],
          [true, rendered.endLine + 1],
        ],
      );
      assert.equal(stop.body.reason, 'breakpoint');
      const frame = await topFrame(dc, stop.body.threadId!);
      assert.equal(frame.source?.path, source.path);
      assert.equal(frame.line, rendered.turnLines[lastTurn] + 1);
      assert.deepEqual(
        outputs.filter((o) => o.startsWith('search ')),
        [`search ${(first.call.arguments as { query: string }).query} in #${t.index}, turn ${first.turn}, {braces}\n`],
      );
      // The end line's condition is false: the replay goes on to the end of the run.
      assert.equal((await resume(dc, 'continue', stop.body.threadId!)).body.reason, 'end');
    } finally {
      await dc.stop();
    }
  });

  it('says which breakpoints it cannot take', async () => {
    const answers: { lines?: DebugProtocol.Breakpoint[] } = {};
    const { dc } = await start(
      { stopOnEntry: true },
      { lines: { source: { path: '/work/tools.ts' }, breakpoints: [{ line: 3 }] } },
      answers,
    );
    try {
      assert.equal(answers.lines![0].verified, false);
      assert.match(answers.lines![0].message!, /not on lines of this file/);
      const missing = await dc.setBreakpointsRequest({
        source: { path: transcriptUri({ runDirectory: runDir, step: 9, index: 0 }) },
        breakpoints: [{ line: 3 }],
      });
      assert.match(missing.body.breakpoints[0].message!, /step 9 has no trajectory #0 in this run/);
      const bad = await dc.setBreakpointsRequest({
        source: { path: transcriptUri({ runDirectory: runDir, step: 1, index: 0 }) },
        breakpoints: [{ line: 9, hitCondition: '>=x' }],
      });
      assert.match(bad.body.breakpoints[0].message!, /hit count ">=x": expected a number/);
    } finally {
      await dc.stop();
    }
  });

  it('stops on entry, pauses a long continue, and says what a run holds without debugging', async () => {
    const entry = await start({ stopOnEntry: true });
    try {
      assert.equal(entry.stop.body.reason, 'entry');
      assert.equal((await topFrame(entry.dc, entry.stop.body.threadId!)).name, 'system (turn 0)');
    } finally {
      await entry.dc.stop();
    }

    const longRun = writeRecordedRun(path.join(path.dirname(runDir), 'run-long'), {
      steps: 60,
      batch: 8,
      groupSize: 4,
      seed: 3,
    });
    const long = await start(
      { runDirectory: longRun, stopOnEntry: true },
      { functions: [{ name: 'search', condition: 'reward < 0' }] },
    );
    try {
      const stopped = long.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
      await Promise.all([
        long.dc.continueRequest({ threadId: long.stop.body.threadId! }),
        long.dc.pauseRequest({ threadId: long.stop.body.threadId! }),
      ]);
      const event = await stopped;
      assert.equal(event.body.reason, 'pause');
      assert.match(event.body.description ?? '', /^Paused at the start of step (\d+)$/);
      assert.ok(Number(/step (\d+)/.exec(event.body.description!)![1]) < 60);
    } finally {
      await long.dc.stop();
    }

    const dc = new DebugClient('node', 'unused', 'rollout');
    await dc.start(server.port);
    const outputs: string[] = [];
    dc.on('output', (e: DebugProtocol.OutputEvent) => outputs.push(e.body.output));
    try {
      const terminated = dc.waitForEvent('terminated');
      await Promise.all([dc.configurationSequence(), dc.launch({ runDirectory: runDir, noDebug: true })]);
      await terminated;
      assert.match(
        outputs.join(''),
        /multihop-search \(recorded fixture\) \(run-7\): grpo on cpu, finished\n3 steps recorded \(1–3\) of 3\n {2}step 1: reward\/mean /,
      );
    } finally {
      await dc.stop();
    }
  });

  it('starts at the trajectory it is asked for (Open in Debugger): its first turn, its thread stopped', async () => {
    const wanted = reader.trajectories(2).records[2];
    const { dc, stop, outputs } = await start({ startAt: { step: 2, trajectory: wanted.index } });
    try {
      assert.equal(stop.body.reason, 'entry');
      assert.equal(stop.body.description, `Paused at the first turn of #${wanted.index}, step 2`);
      const threads = (await dc.threadsRequest()).body.threads;
      assert.deepEqual(
        threads.map((t) => Number(/^#(\d+) /.exec(t.name)![1])),
        reader.trajectories(2).records.map((t) => t.index),
        "the threads are step 2's trajectories",
      );
      assert.match(
        threads.find((t) => t.id === stop.body.threadId)!.name,
        new RegExp(`^#${wanted.index} ${wanted.rowId} `),
      );
      assert.equal((await topFrame(dc, stop.body.threadId!)).name, `${wanted.turns[0].role} (turn 0)`);
      assert.match(outputs.join(''), new RegExp(`stopping at #${wanted.index} of step 2`));
      // Stepping goes on from there: the same trajectory's next turn.
      const next = await resume(dc, 'next', stop.body.threadId!);
      assert.equal(next.body.threadId, stop.body.threadId);
      assert.equal((await topFrame(dc, stop.body.threadId!)).name.split(' · ')[0], `${wanted.turns[1].role} (turn 1)`);
    } finally {
      await dc.stop();
    }

    const dc2 = new DebugClient('node', 'unused', 'rollout');
    await dc2.start(server.port);
    try {
      await dc2.initializeRequest();
      const launch = (startAt: unknown, more: Record<string, unknown> = { runDirectory: runDir }) =>
        dc2.launchRequest({ ...more, startAt } as DebugProtocol.LaunchRequestArguments);
      await assert.rejects(
        launch({ step: 9, trajectory: 0 }),
        /startAt\.step: step 9 is not recorded in .*run-7 \(recorded steps: 1–3\)/,
      );
      const indices = reader
        .trajectories(2)
        .records.map((t) => `#${t.index}`)
        .join(', ');
      await assert.rejects(
        launch({ step: 2, trajectory: 99 }),
        new RegExp(`startAt\\.trajectory: step 2 has no trajectory #99 \\(it has ${indices}\\)`),
      );
      await assert.rejects(launch({ step: 2 }), /launch configuration: startAt\.trajectory: /);
      await assert.rejects(
        launch({ step: 1, trajectory: 0 }, { config: 'train.config.ts' }),
        /startAt: a live training starts at its first step/,
      );
    } finally {
      await dc2.stop();
    }
  });

  it('says where a stopped thread stands (rolloutStopPoint), for Re-roll From Here', async () => {
    const first = callsInBatchOrder(1).find((c) => c.call.name === 'search')!;
    const { dc, stop } = await start({}, { functions: [{ name: 'search' }] });
    try {
      const body = (await dc.customRequest('rolloutStopPoint', { threadId: stop.body.threadId })).body;
      assert.deepEqual(body, {
        mode: 'replay',
        runDirectory: runDir,
        step: 1,
        index: first.trajectory.index,
        phase: 'call',
        turn: first.turn,
        call: first.call.index,
      });
      const next = await resume(dc, 'next', stop.body.threadId!);
      const after = (await dc.customRequest('rolloutStopPoint', {})).body;
      assert.equal(after.phase === 'turn' || after.phase === 'end', true, `after next: ${JSON.stringify(after)}`);
      assert.equal(next.body.threadId, stop.body.threadId);
    } finally {
      await dc.stop();
    }
  });

  it('replays a re-roll’s branches as the threads of the parent’s step, with transcripts of their own', async () => {
    const parent = reader.trajectories(2).records[1];
    const branches = [0, 1].map((k) => ({
      trajectory: { ...buildTrajectory(2, k, 2, () => 0.25 + k / 4), rowId: parent.rowId },
      firstDivergence: 10,
    }));
    writeBranchSet(runDir, {
      protocol: PROTOCOL_VERSION,
      id: 'train-2-1-t0s-test',
      createdAt: '2026-12-05T00:00:00Z',
      parent: { set: 'train', step: 2, index: parent.index, rowId: parent.rowId },
      cut: { turn: 0, at: 'start', tokenIndex: parent.lengths.prompt },
      edits: [],
      checkpoint: { spec: 'best', path: 'x' },
      sampling: { temperature: 1, topK: 0, topP: 1, seed: 0, followsParent: false },
      tools: { source: 'live' },
      branches,
    });
    const { dc, stop } = await start({ branch: 'train-2-1-t0s-test', stopOnEntry: true });
    try {
      assert.equal(stop.body.reason, 'entry');
      const threads = (await dc.threadsRequest()).body.threads;
      assert.deepEqual(
        threads.map((t) => /^#(\d+) /.exec(t.name)![1]),
        ['0', '1'],
        'one thread per branch',
      );
      const frame = await topFrame(dc, stop.body.threadId!);
      const address = path.join(runDir, 'branches', 'train-2-1-t0s-test');
      assert.equal(
        frame.source?.path,
        transcriptUri({ runDirectory: address, step: 2, index: 0 }),
        'a transcript URI of the branch set, not the run’s trajectory #0',
      );
      const text = (await dc.customRequest('rolloutTranscript', { runDirectory: address, step: 2, index: 1 })).body
        .text;
      assert.equal(text, renderTranscript(branches[1].trajectory).text);
    } finally {
      await dc.stop();
    }
  });

  it('fails a launch with a message that names the problem', async () => {
    const dc = new DebugClient('node', 'unused', 'rollout');
    await dc.start(server.port);
    try {
      await dc.initializeRequest();
      await assert.rejects(
        dc.launchRequest({ runDirectory: path.join(runDir, 'missing') } as DebugProtocol.LaunchRequestArguments),
        /missing\/run\.json: not found — .* is not a Rollout Studio run directory/,
      );
      await assert.rejects(
        dc.launchRequest({ name: 'nothing to launch' } as DebugProtocol.LaunchRequestArguments),
        /launch configuration: runDirectory: set "runDirectory" to replay a recorded run, or "config" to train/,
      );
      await assert.rejects(
        dc.launchRequest({
          runDirectory: runDir,
          breakpointsDuringStep: 'others',
        } as DebugProtocol.LaunchRequestArguments),
        /launch configuration: breakpointsDuringStep: .*"stepped-trajectory".*"all"/,
      );
      // This server has no trainer to run (live training is tested in liveAdapter.test.ts).
      await assert.rejects(
        dc.launchRequest({ config: 'train.config.ts' } as DebugProtocol.LaunchRequestArguments),
        /"config": this debug adapter was started without a trainer to run/,
      );
      await assert.rejects(
        dc.launchRequest({ config: 'train.config.ts', runDirectory: runDir } as DebugProtocol.LaunchRequestArguments),
        /set either "config" \(train live\) or "runDirectory"/,
      );
    } finally {
      await dc.stop();
    }
  });
});
