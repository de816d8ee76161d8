import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { shouldRelaunch, type RelaunchContext } from '#trainer/bridges/cli/relaunch';

const terminal: RelaunchContext = { command: 'train', env: {}, platform: 'linux', hasIpc: false, inspecting: false };

describe('when the CLI starts the trainer again with the allocator settings', () => {
  it('does for the commands that load a model, from a terminal on Linux', () => {
    for (const command of ['train', 'eval', 'pretrain', 'reroll', 'chat', 'env'])
      assert.equal(shouldRelaunch({ ...terminal, command }), true, command);
  });

  it('does not for commands that hold no model, or none', () => {
    for (const command of [
      'pull',
      'serve-tools',
      'run-tool',
      'eval-reward',
      'export',
      'import',
      'create-model',
      undefined,
    ])
      assert.equal(shouldRelaunch({ ...terminal, command }), false, String(command));
  });

  it('does not when the settings are there or the user set their own, off Linux, under the extension or the inspector', () => {
    assert.equal(shouldRelaunch({ ...terminal, env: { MALLOC_ARENA_MAX: '1', MALLOC_MMAP_MAX_: '0' } }), false);
    assert.equal(shouldRelaunch({ ...terminal, env: { MALLOC_TRIM_THRESHOLD_: '0' } }), false);
    assert.equal(shouldRelaunch({ ...terminal, platform: 'darwin' }), false);
    assert.equal(shouldRelaunch({ ...terminal, hasIpc: true }), false);
    assert.equal(shouldRelaunch({ ...terminal, inspecting: true }), false);
  });
});
