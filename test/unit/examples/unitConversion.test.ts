import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { contentText } from '#trainer/contract/protocol/chatMessages';
import { convert } from '../../bench/unit-conversion/units';
import { generateDemonstrations, generateQuestions } from '../../bench/unit-conversion/data';
import { convertUnits } from '../../bench/unit-conversion/tools';

// The new-task benchmark's data (test/bench/unit-conversion): what each kind of demonstration
// does is what bench:new-task's numbers rest on.
describe('bench:new-task data (unit conversion)', () => {
  const questions = generateQuestions({ seed: 7, count: 400, prefix: 'q' });

  it('asks about units of one dimension, with the answer the tool gives', () => {
    for (const q of questions) {
      assert.match(q.prompt, new RegExp(`\\b${q.value}\\b`));
      assert.ok(q.prompt.includes(q.from) && q.prompt.includes(q.to) && q.from !== q.to, q.prompt);
      assert.equal(q.answer, String(convert(q.value, q.from, q.to)));
    }
    assert.equal(new Set(questions.map((q) => q.prompt)).size, questions.length);
  });

  it('writes each kind of demonstration as described, in the asked proportions', () => {
    const demos = generateDemonstrations(questions, { seed: 3, skip: 0.1, botch: 0.1, round: 0.6 });
    const counts: Record<string, number> = { skip: 0, botch: 0, round: 0, correct: 0 };
    demos.forEach((demo, i) => {
      const q = questions[i];
      counts[demo.kind]++;
      const answer = contentText(demo.messages.at(-1)!.content).match(/^<answer>(.*)<\/answer>$/)![1];
      const calling = demo.messages.find((m) => m.role === 'assistant' && 'tool_calls' in m) as
        { tool_calls: { function: { arguments: unknown } }[] } | undefined;
      const call = calling?.tool_calls[0].function.arguments as
        { value: number; from_unit: string; to_unit: string } | undefined;
      const result = demo.messages.find((m) => m.role === 'tool');
      if (demo.kind === 'skip') {
        assert.equal(call, undefined);
        assert.notEqual(Number(answer), Number(q.answer));
        return;
      }
      assert.deepEqual([call!.from_unit, call!.to_unit], [q.from, q.to]);
      assert.equal(
        contentText(result!.content),
        String(convert(call!.value, q.from, q.to)),
        'the tool message is what the tool returns',
      );
      if (demo.kind === 'botch') assert.ok(call!.value > q.value && call!.value <= q.value + 9);
      else assert.equal(call!.value, q.value);
      if (demo.kind === 'round') assert.equal(answer, String(Math.round(Number(q.answer))));
      else assert.equal(answer, contentText(result!.content), `${demo.kind}: the answer copies the result`);
    });
    for (const [kind, share] of Object.entries({ skip: 0.1, botch: 0.1, round: 0.6, correct: 0.2 })) {
      assert.ok(Math.abs(counts[kind] / demos.length - share) < 0.06, `${kind}: ${JSON.stringify(counts)}`);
    }
  });

  it('the tool converts, and refuses a unit it does not know or a change of dimension', () => {
    assert.equal(
      convertUnits.parameters.safeParse({ value: 3, from_unit: 'miles', to_unit: 'parsecs' }).success,
      false,
    );
    assert.equal(convert(100, 'celsius', 'fahrenheit'), 212);
    assert.equal(convert(1, 'miles', 'meters'), 1609.34);
    assert.throws(() => convert(1, 'miles', 'grams'), /cannot convert length \(miles\) to mass \(grams\)/);
  });
});
