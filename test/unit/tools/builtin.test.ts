import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { observationText } from '#trainer/foundations/tools/result';
import { ArithmeticError, evaluateArithmetic, formatNumber } from '#trainer/foundations/tools/builtin/arithmetic';
import { CalculatorTool } from '#trainer/foundations/tools/builtin/calculator';
import { JavaScriptTool, runJavaScript, SandboxError } from '#trainer/foundations/tools/builtin/javascript';
import { SearchTool } from '#trainer/foundations/tools/builtin/search';
import { ToolDefinitionError, ToolSet } from '#trainer/foundations/tools';

describe('arithmetic (the calculator grammar)', () => {
  it('evaluates with the usual precedence and associativity', () => {
    const cases: [string, number][] = [
      ['1 + 2 * 3', 7],
      ['(1 + 2) * 3', 9],
      ['48213 * 9371', 451_804_023],
      ['10 - 4 - 3', 3],
      ['100 / 10 / 5', 2],
      ['2 ^ 3 ^ 2', 512],
      ['2 ** 10', 1024],
      ['-2 ^ 2', -4],
      ['(-2) ^ 2', 4],
      ['17 % 5', 2],
      ['--3', 3],
      ['.5 + 1e3', 1000.5],
      ['sqrt(144) + abs(-3) + max(1, 9, 4) + min(2, 8)', 26],
      ['round(2.5) + floor(2.7) + ceil(2.1) + pow(2, 5)', 40],
      ['pi', Math.PI],
      ['12 × 3 − 6 ÷ 2', 33],
    ];
    for (const [expression, value] of cases) assert.equal(evaluateArithmetic(expression), value, expression);
  });

  it('refuses anything else with the position, never evaluating code', () => {
    const cases: [string, RegExp][] = [
      ['1 +', /unexpected the end of the expression at position 4/],
      ['2 * (3 + 4', /expected "\)" at position 11, found the end of the expression/],
      ['7 / (3 - 3)', /division by zero at position 3/],
      ['process.exit(1)', /unexpected character "\." at position 8/],
      ['process', /unknown name "process" at position 1/],
      ['constructor', /unknown name "constructor"/],
      ['toString(1)', /unknown name "tostring"/],
      ['__proto__', /unknown name "__proto__"/],
      ['1; 2', /unexpected character ";" at position 2/],
      ['sqrt(1, 2)', /sqrt takes 1 argument\(s\), got 2/],
      ['10 ^ 400', /the result is not a finite number \(Infinity\)/],
      ['sqrt(-1)', /not a finite number \(NaN\)/],
    ];
    for (const [expression, message] of cases) {
      assert.throws(
        () => evaluateArithmetic(expression),
        (error: unknown) => error instanceof ArithmeticError && message.test(error.message),
        expression,
      );
    }
  });

  it('formats integers exactly and other numbers without float noise', () => {
    assert.equal(formatNumber(451804023), '451804023');
    assert.equal(formatNumber(0.1 + 0.2), '0.3');
    assert.equal(formatNumber(2 / 3), '0.666666666667');
    assert.equal(formatNumber(-1e21), '-1e+21');
  });

  it('is a tool whose errors come back as thrown errors', () => {
    const calculator = new CalculatorTool();
    assert.deepEqual(calculator.execute({ expression: '6 * 7' }), {
      content: [{ type: 'text', text: '42' }],
      data: { value: 42 },
    });
    assert.throws(() => calculator.execute({ expression: '6 *' }), ArithmeticError);
    assert.doesNotThrow(() => new ToolSet([calculator]));
  });
});

describe('SearchTool (MiniSearch, BM25+)', () => {
  const docs = [
    { id: 'p1', title: 'Ada Brenner', text: 'Ada Brenner is a chemist. She works at Northwind Labs.' },
    { id: 'o1', title: 'Northwind Labs', text: 'Northwind Labs is headquartered in Veldmark.' },
    { id: 'c1', title: 'Veldmark', text: 'Veldmark is a harbour city in Ostria.' },
    { id: 'p2', title: 'Tomas Quill', text: 'Tomas Quill is a painter born in Veldmark.' },
  ];

  it('ranks the document about the query first and reports the ids in data', () => {
    const search = new SearchTool(docs, { topK: 2 });
    const result = search.execute({ query: 'Northwind Labs headquarters' });
    assert.deepEqual(result.data?.documentIds[0], 'o1');
    assert.equal(result.data?.documentIds.length, 2);
    assert.match(
      observationText(result),
      /^\[1\] Northwind Labs: Northwind Labs is headquartered in Veldmark\.\n\[2\] /,
    );
    assert.equal(search.search('Ada Brener')[0].id, 'p1', 'a small misspelling still finds the person');
  });

  it('says so when nothing matches, and is reproducible', () => {
    const search = new SearchTool(docs);
    assert.deepEqual(search.execute({ query: 'zzzz qqqq' }), {
      content: [{ type: 'text', text: 'No documents match the query.' }],
      data: { documentIds: [] },
    });
    assert.deepEqual(search.search('Veldmark'), new SearchTool([...docs].reverse()).search('Veldmark'));
  });

  it('checks its corpus', () => {
    assert.throws(
      () => new SearchTool([docs[0], { ...docs[1], id: 'p1' }]),
      (e: unknown) => e instanceof ToolDefinitionError && /documents\[1\] repeats the id "p1"/.test(e.message),
    );
    assert.throws(
      () => new SearchTool([{ id: 'x', title: 'y' } as never]),
      /documents\[0\] must be \{ id: string, title: string, text: string \}/,
    );
    assert.throws(() => new SearchTool(docs, { topK: 0 }), /topK must be a positive integer/);
  });
});

describe('JavaScript sandbox (the code tool)', () => {
  const run = async (code: string) => (await runJavaScript(code, { timeoutMs: 200 })).output;

  it('shows printed lines (promise jobs included) and the last value', async () => {
    assert.equal(await run('1 + 2'), '3');
    assert.equal(
      await run('print("a", { x: 1 }, [2]); console.log(2n ** 70n); undefined'),
      'a {"x":1} [2]\n1180591620717411303424n',
    );
    assert.equal(await run('function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2); } f(20)'), '6765');
    assert.equal(await run('Promise.resolve(6).then((x) => print(x * 7)); "first"'), '42\nfirst');
    assert.equal(await new JavaScriptTool().execute({ code: 'let x = 1' }), '(no output)');
  });

  it('has no require, process, timers or code generation from strings', async () => {
    assert.equal(
      await run('[typeof require, typeof process, typeof setTimeout, typeof fetch, typeof module].join()'),
      'undefined,undefined,undefined,undefined,undefined',
    );
    for (const escape of [
      'this.constructor.constructor("return process")()',
      'print.constructor("return 1")()',
      'eval("1")',
      'new Function("return 1")',
    ]) {
      await assert.rejects(run(escape), /EvalError: Code generation from strings disallowed for this context/, escape);
    }
  });

  it('stops endless code, promise jobs included, and reports errors with their line', async () => {
    await assert.rejects(
      run('while (true) {}'),
      (e: unknown) => e instanceof SandboxError && e.message === 'the code ran longer than 200 ms and was stopped',
    );
    await assert.rejects(run('Promise.resolve().then(() => { for (;;) {} })'), /ran longer than 200 ms/);
    await assert.rejects(
      run('({ toJSON() { for (;;) {} } })'),
      /ran longer than 200 ms/,
      'rendering the value is timed too',
    );
    await assert.rejects(
      run('const a = 1;\nnull.x'),
      /^SandboxError: TypeError: Cannot read properties of null \(reading 'x'\) \(line 2\)$/,
    );
    await assert.rejects(run('let = ;'), /^SandboxError: SyntaxError: /);
  });

  it('contains what would take down the trainer: unhandled rejections, exhausted memory', async () => {
    await assert.rejects(
      run('Promise.reject(new RangeError("nobody catches me"))'),
      /^SandboxError: RangeError: nobody catches me/,
    );
    await assert.rejects(
      runJavaScript('const xs = []; for (;;) xs.push(new Array(1e6).fill(1))', { timeoutMs: 5000, maxHeapMb: 32 }),
      /the code ran out of memory \(limit 32 MB\)/,
    );
    assert.equal(await run('"still here"'), 'still here');
  });

  it('caps the output', async () => {
    const out = (
      await runJavaScript('for (let i = 0; i < 10000; i++) print("0123456789")', {
        timeoutMs: 500,
        maxOutputChars: 100,
      })
    ).output;
    assert.ok(out.length < 160);
    assert.match(out, /\[output cut at 100 characters\]$/);
  });
});
