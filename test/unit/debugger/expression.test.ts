import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { compileExpression } from '../../../extension/debugger/breakpoints/expression';
import { compileTemplate } from '../../../extension/debugger/breakpoints/logTemplate';

const context = {
  turn: 4,
  role: 'assistant',
  reward: -0.5,
  advantage: 0.87,
  call: { name: 'search', arguments: { query: 'Ada Brenner', k: 3 }, error: undefined },
  calls: [{ name: 'search' }, { name: 'calc' }],
  metrics: { 'reward/mean': 0.25 },
  text: 'I will <tool_call> search',
  missing: undefined,
};
const run = (source: string) => compileExpression(source, Object.keys(context)).evaluate(context);

describe('expression evaluator', () => {
  it('evaluates comparisons, logic and arithmetic like JavaScript', () => {
    assert.equal(run('reward < 0'), true);
    assert.equal(run('turn > 3 && role === "assistant"'), true);
    assert.equal(run('advantage > 0.5 || reward > 0'), true);
    assert.equal(run('turn * 2 + 1'), 9);
    assert.equal(run('turn % 3'), 1);
    assert.equal(run('-reward'), 0.5);
    assert.equal(run('!(turn > 3)'), false);
    assert.equal(run('turn >= 4 ? "late" : "early"'), 'late');
    assert.equal(run("'a' + turn"), 'a4');
    assert.equal(run('1e-3 < .5'), true);
    assert.equal(run('turn ?.5 : 1'), 0.5, 'a conditional, not optional chaining');
  });

  it('reads fields, indexes and own properties only', () => {
    assert.equal(run('call.name === "search"'), true);
    assert.equal(run('call.arguments.query'), 'Ada Brenner');
    assert.equal(run('call?.arguments["k"]'), 3);
    assert.equal(run('metrics["reward/mean"]'), 0.25);
    assert.equal(run('calls[1].name'), 'calc');
    assert.equal(run('calls.length'), 2);
    assert.equal(run('text.length'), 25);
    assert.equal(run('call.constructor'), undefined);
    assert.equal(run('call["__proto__"]'), undefined);
    assert.equal(run('text.constructor'), undefined);
  });

  it('is forgiving about missing values, and comparisons with them are false', () => {
    assert.equal(run('missing.name'), undefined);
    assert.equal(run('call.error.kind'), undefined);
    assert.equal(run('missing < 0'), false);
    assert.equal(run('missing > 0'), false);
    assert.equal(run('missing ?? "none"'), 'none');
    assert.equal(run('missing == null'), true);
    assert.equal(run('missing === null'), false);
  });

  it('calls only the listed functions and methods', () => {
    assert.equal(run('text.includes("<tool_call>")'), true);
    assert.equal(run('role.startsWith("assi")'), true);
    assert.equal(run('calls.length > 0 && abs(reward) === 0.5'), true);
    assert.equal(run('max(turn, 10)'), 10);
    assert.equal(run('round(advantage, 1)'), 0.9);
    assert.equal(run('len(call.arguments)'), 2);
    assert.equal(run('json(call.arguments)'), '{"query":"Ada Brenner","k":3}');
    assert.equal(run('["search", "calc"].includes(call.name)'), true);
    assert.throws(() => run('text.replace("a", "b")'), /cannot call \.replace\(\) on a string/);
    assert.throws(() => run('call.arguments.toString()'), /cannot call \.toString\(\) on object/);
    assert.throws(() => run('(turn)()'), /only these functions can be called/);
  });

  it('names unknown fields when the expression is compiled, listing what exists', () => {
    assert.throws(
      () => compileExpression('rewad < 0', Object.keys(context)),
      /unknown name "rewad"; the turn context has: turn, role, reward/,
    );
    assert.throws(() => compileExpression('process.mainModule', ['turn']), /unknown name "process"/);
    // Field names after a dot are not context names.
    assert.doesNotThrow(() => compileExpression('call.whatever', ['call']));
  });

  it('reports syntax errors with their position', () => {
    assert.throws(() => compileExpression('turn >'), /unexpected end of expression at position 7/);
    assert.throws(() => compileExpression('turn = 3'), /unexpected character "=" at position 6/);
    assert.throws(() => compileExpression('(turn > 3'), /expected "\)" but found end of expression at position 10/);
    assert.throws(() => compileExpression('"open'), /unterminated string starting at position 1/);
    assert.throws(() => compileExpression('`${turn}`'), /template substitutions are not supported/);
    assert.throws(() => compileExpression('turn; reward'), /unexpected character ";"/);
    assert.throws(() => compileExpression(''), /expression is empty/);
    assert.throws(() => compileExpression('1+'.repeat(1001) + '1'), /at most 2000 are allowed/);
  });
});

describe('logpoint templates', () => {
  it('interpolates {expressions} and keeps {{ }} as braces', () => {
    const template = compileTemplate(
      'turn {turn}: {call.name}({json(call.arguments)}) {{literal}}',
      Object.keys(context),
    );
    assert.equal(template.render(context), 'turn 4: search({"query":"Ada Brenner","k":3}) {literal}');
  });

  it('shows an evaluation error in place instead of failing the whole message', () => {
    const template = compileTemplate('value: {text.replace("a")}', Object.keys(context));
    assert.match(template.render(context), /^value: <cannot call \.replace\(\) on a string/);
  });

  it('rejects an unclosed brace and unknown names when compiled', () => {
    assert.throws(() => compileTemplate('turn {turn', ['turn']), /"\{" at position 6 is not closed/);
    assert.throws(() => compileTemplate('{rewad}', ['reward']), /log message, in \{rewad\}: unknown name "rewad"/);
    assert.equal(compileTemplate('{"}" + turn}', ['turn']).render({ turn: 2 }), '}2');
  });
});
