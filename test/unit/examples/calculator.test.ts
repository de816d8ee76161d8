import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { contentText } from '#trainer/contract/protocol/chatMessages';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadJsonlDataset } from '#trainer/foundations/data';
import type { Trajectory } from '#trainer/pipeline/rollout';
import { Tool } from '#trainer/foundations/tools';
import { evaluateArithmetic, formatNumber } from '#trainer/foundations/tools/builtin/arithmetic';
import { generateDataset, generateDemonstrations, generateProblems } from '../../../examples/calculator/data';
import { CalculatorFields, type CalculatorRow } from '../../../examples/calculator/rows';
import { numericMatch, parseNumber } from '../../../examples/calculator/rewards';
import { loadTools } from '#trainer/bridges/usercode/loadTools';

describe('examples/calculator', () => {
  it('generates problems with exact answers, held-out ones distinct from training ones', () => {
    const train = generateProblems({ seed: 1, count: 200, prefix: 'train' });
    const heldout = generateProblems({
      seed: 2,
      count: 50,
      prefix: 'heldout',
      exclude: new Set(train.map((p) => p.prompt)),
    });
    for (const p of [...train, ...heldout]) {
      assert.equal(p.answer, formatNumber(evaluateArithmetic(p.expression)));
      assert.match(p.answer, /^-?\d+$/, `${p.prompt} has an integer answer`);
      for (const operand of p.expression.match(/\d+/g)!) assert.ok(p.prompt.includes(operand));
    }
    assert.ok(
      train.some((p) => Number(p.answer) > 100_000),
      'numbers a small model cannot multiply in its head',
    );
    const prompts = new Set(train.map((p) => p.prompt));
    assert.equal(prompts.size, train.length);
    assert.ok(heldout.every((p) => !prompts.has(p.prompt)));
  });

  it('demonstrates calculator use, with some demonstrations skipping it or mistyping', () => {
    const problems = generateProblems({ seed: 1, count: 200, prefix: 'train' });
    const demos = generateDemonstrations(problems, { seed: 5, skip: 0.25, botch: 0.15 });
    const counts = { correct: 0, skip: 0, botch: 0 };
    demos.forEach((demo, i) => {
      counts[demo.kind]++;
      const answer = /<answer>(.*)<\/answer>/.exec(contentText(demo.messages.at(-1)!.content))![1];
      const call = demo.messages.find((m) => m.role === 'assistant' && m.tool_calls);
      if (demo.kind === 'skip') assert.equal(call, undefined);
      else {
        const expression = (call as unknown as { tool_calls: { function: { arguments: { expression: string } } }[] })
          .tool_calls[0].function.arguments.expression;
        const result = demo.messages[demo.messages.indexOf(call!) + 1];
        assert.deepEqual(result, {
          role: 'tool',
          name: 'calculator',
          content: formatNumber(evaluateArithmetic(expression)),
        });
        assert.equal(answer, result.content, 'the answer repeats what the calculator said');
      }
      if (demo.kind === 'correct') assert.equal(answer, problems[i].answer);
      else assert.notEqual(answer, problems[i].answer);
    });
    assert.ok(counts.skip > 30 && counts.botch > 15 && counts.correct > 100, JSON.stringify(counts));
  });

  it('matches numbers, not strings', async () => {
    assert.equal(parseNumber('1,234,567'), 1234567);
    assert.equal(parseNumber(' -42 '), -42);
    assert.equal(parseNumber('1 234'), 1234);
    assert.equal(parseNumber('12.50'), 12.5);
    assert.equal(parseNumber('about 12'), undefined);
    assert.equal(parseNumber('1,23'), undefined);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calc-'));
    try {
      const files = generateDataset({ out: dir, seed: 3, train: 20, heldout: 5, sft: 10, skip: 0.2, botch: 0.2 });
      const [row] = loadJsonlDataset(files.train.file, { fields: CalculatorFields }).rows;
      const answered = (content: string) =>
        ({
          turns: [{ index: 0, role: 'assistant', tokenStart: 0, tokenEnd: 1, content }],
          row,
        }) as unknown as Trajectory<CalculatorRow>;
      const negative = { ...row, answer: '-1234' };
      assert.equal(
        await numericMatch.score(answered(`<answer>${Number(row.answer).toLocaleString('en-US')}</answer>`), row),
        1,
      );
      assert.equal(await numericMatch.score(answered(`<answer>${row.answer}1</answer>`), row), 0);
      assert.equal(await numericMatch.score(answered('<answer>-1,234</answer>'), negative), 1);
      assert.equal(
        await numericMatch.score(answered('<answer>1234</answer>'), negative),
        0,
        'the sign matters (SQuAD normalisation would drop it)',
      );
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it("loads its tools through the trainer's loader", async () => {
    const [calculator] = await loadTools(path.resolve(__dirname, '../../../examples/calculator/tools.ts'));
    assert.ok(calculator instanceof Tool);
    assert.equal(calculator.name, 'calculator');
  });
});
