import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { BreakpointSet, parseHitCondition } from '../../../extension/debugger/breakpoints';
import type { TurnContext } from '../../../extension/debugger/turnContext';

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
    const at = (turn: number, tool = 'search') => set.check({ toolName: tool, exceptions: [] }, context({ turn, call: { arguments: { q: turn } } }));
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
    const result = set.check({ toolName: 'lookup', exceptions: [{ filter: 'toolCallInvalid', id: 'unknown_tool', description: 'Unknown tool (lookup): no such tool' }] }, context({ text: 'abc' }));
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
    assert.deepEqual(filters.map((f) => f.verified), [true, false]);
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
    const answers = set.setLineBreakpoints(1, 3, [{ line: 13, logMessage: 'called {turn}' }, { line: 16 }, { line: 2 }], points);
    assert.deepEqual(answers.map((a) => a.line), [12, 15, 7]);
    const logged = set.check({ exceptions: [] }, context({ turn: 1 }), { step: 1, index: 3, point: { trajectory: 0, phase: 'call', turn: 1, call: 0 } });
    assert.deepEqual(logged, { logs: ['called 1'], errors: [] });
    const elsewhere = set.check({ exceptions: [] }, context({}), { step: 2, index: 3, point: { trajectory: 0, phase: 'result', turn: 1, call: 0 } });
    assert.equal(elsewhere.stop, undefined, 'another step, another trajectory');
    const stopped = set.check({ exceptions: [] }, context({}), { step: 1, index: 3, point: { trajectory: 0, phase: 'result', turn: 1, call: 0 } });
    assert.equal(stopped.stop?.reason, 'breakpoint');
    assert.equal(stopped.stop?.description, 'Paused at a breakpoint: turn 1, call 0 (result) of #3');
  });
});
