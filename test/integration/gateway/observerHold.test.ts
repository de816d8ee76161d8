/**
 * The editor's view of an agent's rollout (rollout/gateway): the observer hooks the panels and the
 * debugger use see the same events as in the built-in loop — the batch at the start, each turn,
 * each call before the agent runs it and after its result came back, each end — and a hook that
 * holds (the debugger stopped before a tool call) holds the answer carrying the call: the agent
 * gets it only once the hook returns.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { functionAgent } from '#trainer/pipeline/rollout/gateway/agentRunner';
import { GatewayRollout } from '#trainer/pipeline/rollout/gateway/gatewayRollout';
import type { RolloutObserver } from '#trainer/pipeline/rollout/observer';
import type { DatasetRow } from '#trainer/foundations/data/row';

let device: Device;
let model: ModelRuntime;
before(async () => {
  device = createDevice('cpu', { worker: false });
  model = await ModelRuntime.load(device, builtInModelDir('base'), {});
});
after(async () => {
  model?.close();
  await device?.close();
});

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'lookup',
      parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    },
  },
];

describe('an agent rollout as the editor sees it', () => {
  it('announces turns and calls, and holds an answer while a hook holds', async () => {
    const events: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const observer: RolloutObserver = {
      rolloutStarted: (ts) => void events.push(`started ${ts.length}`),
      turnGenerated: (t, turn) => void events.push(`turn ${t.index}:${turn.assistantTurn}`),
      beforeToolCall: async (t, call) => {
        events.push(`before ${t.index}:${call.name}`);
        await held;
      },
      toolCallFinished: (t, call) => void events.push(`finished ${t.index}:${call.name}=${call.observation}`),
      trajectoryFinished: (t) => void events.push(`ended ${t.index}`),
    };
    const rollout = new GatewayRollout({
      policy: new ModelPolicy(model),
      template: model.folder.chatTemplate!,
      budget: { maxTurns: 2, maxNewTokensPerTurn: 40, maxTotalTokens: 768, maxToolResultTokens: 32 },
      sampling: { temperature: 1, topP: 1, topK: 0 },
      templateKwargs: { enable_thinking: false },
      observer,
      agent: functionAgent(async (_row, { baseURL, apiKey, model: id }) => {
        const client = new OpenAI({ baseURL, apiKey });
        const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
          { role: 'user', content: 'Look up "cat".' },
        ];
        const first = await client.chat.completions.create({ model: id, messages, tools, tool_choice: 'required' });
        events.push('agent got the call');
        const call = first.choices[0].message.tool_calls![0];
        messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'a small animal' });
        const second = await client.chat.completions.create({ model: id, messages, tools, tool_choice: 'none' });
        return second.choices[0].message.content ?? '';
      }),
    });
    const row: DatasetRow = {
      id: 'r',
      messages: [{ role: 'user', content: 'x' }],
      toolArgs: {},
      source: { file: 'mem', line: 1 },
    };
    const done = rollout.run([{ row, group: 0, sample: 0 }], { seed: 1 });
    while (!events.some((e) => e.startsWith('before'))) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!events.includes('agent got the call'), 'the answer carrying the call is held');
    release();
    const [trajectory] = await done;
    await rollout.close();
    assert.deepEqual(events, [
      'started 1',
      'turn 0:0',
      'before 0:lookup',
      'agent got the call',
      'finished 0:lookup=a small animal',
      'turn 0:1',
      'ended 0',
    ]);
    assert.equal(trajectory.calls[0].observation, 'a small animal');
  });
});
