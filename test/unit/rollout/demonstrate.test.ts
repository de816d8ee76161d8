/**
 * demonstrate(): a scripted solver's calls run through the real tools (the rollout's runner) and
 * are shown as a rollout shows them, so demonstrations hold exactly what the tools return.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { Demonstration } from '#trainer/contract/protocol';
import { defaultErrorObservation, demonstrate, DemonstrationScriptError } from '#trainer/pipeline/rollout';
import { CalculatorTool } from '#trainer/foundations/tools/builtin/calculator';
import { defineTool, observationText, ToolRunner, ToolSet } from '#trainer/foundations/tools';
import { datasetFromRows } from '#trainer/foundations/data';

const calculator = new CalculatorTool();
const rows = [
  { id: 'q-1', system: 'Use the calculator.', prompt: 'What is 909 * 893 - 18753?', expression: '909 * 893 - 18753' },
  { id: 'q-2', prompt: 'What is 1 / 3?', expression: '1 / 3' },
];

describe('demonstrate', () => {
  it("records what the tool returns through the rollout's runner, and the solver's answer", async () => {
    const demos = await demonstrate(
      rows,
      { tools: [calculator], systemPrompt: 'Default system prompt.' },
      async (row, script) => {
        // The tool itself (not its name): the arguments are type-checked against its schema.
        const { observation, result } = await script.call(
          calculator,
          { expression: row.expression },
          { content: '<think>Compute it.</think>' },
        );
        assert.equal(
          typeof (result?.data as { value?: unknown }).value,
          'number',
          "the solver sees the result's data too",
        );
        return `<answer>${observation}</answer>`;
      },
    );
    // What the agent loop's runner returns for the same call, rendered as the loop renders it.
    const expected = async (expression: string) => {
      const row = datasetFromRows('x', [{ prompt: 'x' }]).rows[0];
      const [outcome] = await new ToolRunner(new ToolSet([calculator])).run([
        {
          name: 'calculator',
          arguments: { expression },
          trajectory: { index: 0, rowId: 'x', group: 0, sample: 0, messages: [], calls: [] },
          turn: 0,
          callIndex: 0,
          row,
        },
      ]);
      return observationText(outcome.result!);
    };
    assert.deepEqual(demos[0], {
      id: 'q-1',
      messages: [
        { role: 'system', content: 'Use the calculator.' },
        { role: 'user', content: 'What is 909 * 893 - 18753?' },
        {
          role: 'assistant',
          content: '<think>Compute it.</think>',
          tool_calls: [
            { type: 'function', function: { name: 'calculator', arguments: { expression: '909 * 893 - 18753' } } },
          ],
        },
        { role: 'tool', name: 'calculator', content: await expected('909 * 893 - 18753') },
        { role: 'assistant', content: `<answer>${await expected('909 * 893 - 18753')}</answer>` },
      ],
    });
    assert.equal(demos[0].messages[3].content, String(909 * 893 - 18753), 'the real result');
    assert.deepEqual(
      demos[1].messages[0],
      { role: 'system', content: 'Default system prompt.' },
      'the system prompt for rows without one',
    );
    assert.equal(demos[1].messages[3].content, await expected('1 / 3'));
    for (const demo of demos) assert.ok(Demonstration.safeParse(demo).success);
  });

  it('runs a turn of several calls together, passes the row and its toolArgs, and shows a failed call as a rollout does', async () => {
    const seen: unknown[] = [];
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up.',
      parameters: z.object({ key: z.string() }),
      execute: ({ key }, ctx) => {
        seen.push([key, ctx.rowArgs?.['prefix'], ctx.turn, ctx.callIndex, ctx.trajectory.calls.length]);
        if (key === 'missing') throw new Error(`no entry for ${key}`);
        return `${String(ctx.rowArgs?.['prefix'] ?? '')}${key}`;
      },
    });
    const [demo] = await demonstrate(
      [{ id: 'r', prompt: 'Look up a and b.', toolArgs: { lookup: { prefix: '#' } } }],
      { tools: [lookup] },
      async (_row, script) => {
        const [a, b] = await script.callAll([
          { name: 'lookup', arguments: { key: 'a' } },
          { name: 'lookup', arguments: { key: 'b' } },
        ]);
        const missing = await script.call('lookup', { key: 'missing' });
        assert.equal(missing.error?.kind, 'threw');
        return `${a.observation} ${b.observation}`;
      },
    );
    assert.deepEqual(seen, [
      ['a', '#', 0, 0, 0],
      ['b', '#', 0, 1, 0],
      ['missing', '#', 1, 0, 2],
    ]);
    assert.deepEqual(
      demo.messages.map((m) => [m.role, m.content]),
      [
        ['user', 'Look up a and b.'],
        ['assistant', ''],
        ['tool', '#a'],
        ['tool', '#b'],
        ['assistant', ''],
        ['tool', defaultErrorObservation({ kind: 'threw', message: 'Error: no entry for missing', tool: 'lookup' })],
        ['assistant', '#a #b'],
      ],
    );
  });

  it('refuses a call to a tool that does not exist, or with arguments its schema rejects, naming the row', async () => {
    await assert.rejects(
      demonstrate(
        rows,
        { tools: [calculator] },
        async (_row, script) => (await script.call('calc', { expression: '1' })).observation,
      ),
      (error: Error) => {
        assert.ok(error instanceof DemonstrationScriptError);
        assert.equal(
          error.message,
          'demonstrate():1 (row q-1): the solver called "calc", which is not one of the tools (calculator)',
        );
        return true;
      },
    );
    await assert.rejects(
      demonstrate(
        rows,
        { tools: [calculator] },
        async (_row, script) => (await script.call('calculator', { expr: '1' })).observation,
      ),
      {
        message:
          /^demonstrate\(\):1 \(row q-1\): the solver's call 0 of turn 0: arguments of calculator do not match its schema: expression: /,
      },
    );
    await assert.rejects(
      demonstrate(
        rows,
        { tools: [calculator] },
        // @ts-expect-error -- given the tool, a call's arguments are type-checked (a number is not an expression)
        async (_row, script) => (await script.call(calculator, { expression: 5 })).observation,
      ),
      /arguments of calculator do not match its schema: expression: Invalid input: expected string, received number/,
    );
    await assert.rejects(demonstrate(rows, { tools: [calculator] }, (() => undefined) as never), {
      message: "demonstrate():1 (row q-1): the solver returned nothing; return the final answer's text",
    });
  });
});
