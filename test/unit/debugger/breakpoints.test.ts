import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  BreakpointSet,
  parseHitCondition,
  type ReachedPoint,
} from '../../../extension/debugger/breakpoints/breakpoints';
import type { StopPoint } from '../../../extension/debugger/timeline';
import { pointFacts, type TurnContext } from '../../../extension/debugger/breakpoints/turnContext';
import { buildTrajectory } from '../../fixtures/recordedRun';

const context = (fields: Partial<TurnContext>) => () => ({ ...fields }) as TurnContext;

describe('hit conditions', () => {
  it('reads a bare number as "from the Nth hit on", and the operators as written', () => {
    const hits = (text: string) => [1, 2, 3, 4, 5, 6].filter(parseHitCondition(text));
    assert.deepEqual(hits('3'), [3, 4, 5, 6]);
    assert.deepEqual(hits('>=3'), [3, 4, 5, 6]);
    assert.deepEqual(hits('==3'), [3]);
    assert.deepEqual(hits('> 3'), [4, 5, 6]);
    assert.deepEqual(hits('<3'), [1, 2]);
    assert.deepEqual(hits('<=3'), [1, 2, 3]);
    assert.deepEqual(hits('%2'), [2, 4, 6]);
    assert.throws(() => parseHitCondition('%0'), /would never stop/);
    assert.throws(() => parseHitCondition('three'), /hit count "three": expected a number/);
  });
});

describe('BreakpointSet', () => {
  it('stops before a named tool only when its condition holds, counting hits after the condition', () => {
    const set = new BreakpointSet();
    const [answer] = set.setFunctionBreakpoints([{ name: 'search', condition: 'turn > 2', hitCondition: '==2' }]);
    assert.equal(answer.verified, true);
    const at = (turn: number, tool = 'search') =>
      set.check({ toolName: tool, exceptions: [] }, context({ turn, call: { arguments: { q: turn } } }));
    assert.equal(at(2).stop, undefined, 'condition false: not counted');
    assert.equal(at(3).stop, undefined, 'first hit');
    assert.equal(at(5, 'calc').stop, undefined, 'another tool');
    const stop = at(4).stop!;
    assert.equal(stop.reason, 'function breakpoint');
    assert.deepEqual(stop.hitBreakpointIds, [answer.id]);
    assert.equal(stop.description, 'Paused before search({"q":4})');
    assert.equal(at(6).stop, undefined, '==2 stops once');
  });

  it('prefers a failure over a tool breakpoint at the same point, and reports condition errors as false', () => {
    const set = new BreakpointSet();
    set.setFunctionBreakpoints([{ name: 'lookup' }, { name: 'lookup', condition: 'text.replace("x")' }]);
    set.setExceptionBreakpoints({ filters: ['toolCallInvalid'] });
    const result = set.check(
      {
        toolName: 'lookup',
        exceptions: [
          { filter: 'toolCallInvalid', id: 'unknown_tool', description: 'Unknown tool (lookup): no such tool' },
        ],
      },
      context({ text: 'abc' }),
    );
    assert.equal(result.stop?.reason, 'exception');
    assert.equal(result.stop?.exception?.id, 'unknown_tool');
    assert.equal(result.errors.length, 1);
    assert.match(result.errors[0], /condition "text\.replace\("x"\)": cannot call \.replace\(\)/);
  });

  it('answers unverified, with the reason, for what it cannot take', () => {
    const set = new BreakpointSet();
    const answers = set.setFunctionBreakpoints([{ name: 'search tool' }, { name: 'search', condition: 'turn >' }]);
    assert.match(answers[0].message!, /"search tool" is not a tool name/);
    assert.match(answers[1].message!, /condition "turn >": unexpected end of expression/);
    const filters = set.setExceptionBreakpoints({ filters: ['toolThrew', 'segfault'] });
    assert.deepEqual(
      filters.map((f) => f.verified),
      [true, false],
    );
    assert.match(filters[1].message!, /unknown exception filter "segfault"; known: toolThrew, toolCallParse/);
    assert.equal(set.isEmpty, false);
    set.setFunctionBreakpoints([]);
    set.setExceptionBreakpoints({ filters: [] });
    assert.equal(set.isEmpty, true);
  });

  it('maps a transcript line to the point above it and logs there without stopping', () => {
    const set = new BreakpointSet();
    const points = [
      { phase: 'turn' as const, turn: 0, call: -1, line: 7 },
      { phase: 'turn' as const, turn: 1, call: -1, line: 10 },
      { phase: 'call' as const, turn: 1, call: 0, line: 12 },
      { phase: 'result' as const, turn: 1, call: 0, line: 15 },
      { phase: 'end' as const, turn: 2, call: -1, line: 18 },
    ];
    const answers = set.setLineBreakpoints(
      1,
      3,
      [{ line: 13, logMessage: 'called {turn}' }, { line: 16 }, { line: 2 }],
      points,
    );
    assert.deepEqual(
      answers.map((a) => a.line),
      [12, 15, 7],
    );
    const logged = set.check({ exceptions: [] }, context({ turn: 1 }), {
      step: 1,
      index: 3,
      point: { trajectory: 0, phase: 'call', turn: 1, call: 0 },
    });
    assert.deepEqual(logged, { logs: ['called 1'], errors: [] });
    const elsewhere = set.check({ exceptions: [] }, context({}), {
      step: 2,
      index: 3,
      point: { trajectory: 0, phase: 'result', turn: 1, call: 0 },
    });
    assert.equal(elsewhere.stop, undefined, 'another step, another trajectory');
    const stopped = set.check({ exceptions: [] }, context({}), {
      step: 1,
      index: 3,
      point: { trajectory: 0, phase: 'result', turn: 1, call: 0 },
    });
    assert.equal(stopped.stop?.reason, 'breakpoint');
    assert.equal(stopped.stop?.description, 'Paused at a breakpoint: turn 1, call 0 (result) of #3');
  });
});

describe('breakpoints during a step (breakpointsDuringStep)', () => {
  // Two trajectories of step 1 that both call search in turn 2 (the fixture's first hop).
  let seed = 5;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const trajectories = [buildTrajectory(1, 0, 2, random), buildTrajectory(1, 1, 2, random)];
  const callAt = (position: number): StopPoint => {
    const turn = trajectories[position].turns.find((t) => t.toolCalls?.some((c) => c.name === 'search'))!;
    return {
      trajectory: position,
      phase: 'call',
      turn: turn.index,
      call: turn.toolCalls!.find((c) => c.name === 'search')!.index,
    };
  };
  const reached = (point: StopPoint): ReachedPoint => ({
    step: 1,
    trajectories,
    point,
    facts: (t) => pointFacts(t, point, undefined),
  });
  const withSearch = (duringStep?: 'stepped-trajectory' | 'all') => {
    const set = new BreakpointSet();
    set.setFunctionBreakpoints([{ name: 'search' }]);
    if (duringStep) set.duringStep = duringStep;
    return set;
  };
  const quiet = () => {};

  it('by default, another trajectory’s breakpoint does not interrupt a step: it is counted and listed when the step ends', () => {
    assert.ok(callAt(0) && callAt(1), 'both fixture trajectories call search');
    const set = withSearch();
    assert.equal(set.duringStep, 'stepped-trajectory');
    assert.equal(
      set.stopAt(reached(callAt(1)), quiet, { trajectory: 0 }),
      undefined,
      'trajectory 1’s search, stepping trajectory 0',
    );
    const own = set.stopAt(reached(callAt(0)), quiet, { trajectory: 0 });
    assert.equal(own?.reason, 'function breakpoint', 'the stepped trajectory’s own breakpoint stops the step');
    assert.equal(own?.trajectory, 0);
    const passed = set.takePassedOver()!;
    assert.match(
      passed,
      /^While stepping #0, 1 breakpoint hit in other trajectories did not stop: step 1 #1: Paused before search\(\{"query":"[^"]+"\}\)\. /,
    );
    assert.match(passed, /"breakpointsDuringStep": "all"/);
    assert.equal(set.takePassedOver(), undefined, 'each step reports its own');
    // Outside a step every breakpoint stops, whoever's it is.
    assert.equal(set.stopAt(reached(callAt(1)), quiet)?.trajectory, 1);
  });

  it('with "all", another trajectory’s breakpoint ends the step there, focused on that trajectory', () => {
    const set = withSearch('all');
    const stop = set.stopAt(reached(callAt(1)), quiet, { trajectory: 0 });
    assert.equal(stop?.reason, 'function breakpoint');
    assert.equal(stop?.trajectory, 1);
    assert.equal(set.takePassedOver(), undefined);
  });

  it('logpoints of other trajectories still print during a step, and passed-over hits count for hit conditions', () => {
    const set = new BreakpointSet();
    set.setFunctionBreakpoints([{ name: 'search', hitCondition: '==2' }]);
    const printed: string[] = [];
    assert.equal(
      set.stopAt(reached(callAt(1)), (text) => printed.push(text), { trajectory: 0 }),
      undefined,
      'the first hit: ==2 does not fire',
    );
    assert.equal(set.takePassedOver(), undefined, 'a hit that would not have stopped is not listed');
    assert.equal(
      set.stopAt(reached(callAt(0)), quiet)?.reason,
      'function breakpoint',
      'the second hit fires: the passed-over one counted',
    );
    const logs = new BreakpointSet();
    const at = callAt(1);
    logs.setLineBreakpoints(
      1,
      trajectories[1].index,
      [{ line: 9, logMessage: 'search at turn {turn}' }],
      [{ phase: 'call', turn: at.turn, call: at.call, line: 9 }],
    );
    assert.equal(
      logs.stopAt(reached(callAt(1)), (text) => printed.push(text), { trajectory: 0 }),
      undefined,
    );
    assert.deepEqual(printed, [`search at turn ${callAt(1).turn}`]);
  });

  it('lists at most five passed-over hits by name, then how many more', () => {
    const set = withSearch();
    for (let i = 0; i < 7; i++) set.stopAt(reached(callAt(1)), quiet, { trajectory: 0 });
    const passed = set.takePassedOver()!;
    assert.match(passed, /^While stepping #0, 7 breakpoint hits in other trajectories did not stop: /);
    assert.equal(passed.split('step 1 #1: ').length - 1, 5);
    assert.match(passed, /; and 2 more\. /);
  });
});
