/** `rollout.stop` in a config: what reaches the agent loop, and what is refused. */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { exactMatch } from '#trainer/pipeline/rewards';
import { agentLoopOptions } from '#trainer/pipeline/training/config/configOptions';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';
import type { ChatTemplate } from '#trainer/foundations/models';
import type { Policy } from '#trainer/foundations/models/generation/policy';
import { ToolSet } from '#trainer/foundations/tools';

const parse = (rollout: Record<string, unknown>) =>
  parseConfig(
    {
      model: { path: 'model', lora: false },
      data: { train: 'train.jsonl' },
      rewards: { outcome: [exactMatch()] },
      steps: 10,
      algorithm: { name: 'grpo' },
      rollout,
    },
    'a.config.ts',
  );
const parts = { policy: {} as Policy, template: {} as ChatTemplate, tools: new ToolSet([]) };

describe('rollout.stop', () => {
  it('passes the stop strings to the agent loop, and none by default', () => {
    assert.deepEqual(agentLoopOptions(parse({ stop: ['</answer>'] }), parts).stop, ['</answer>']);
    assert.equal(agentLoopOptions(parse({}), parts).stop, undefined);
  });

  it('refuses an empty stop string, naming the field', () => {
    assert.throws(() => parse({ stop: [''] }), /rollout\.stop\.0.*empty/s);
  });
});
