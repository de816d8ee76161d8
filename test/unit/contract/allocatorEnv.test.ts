import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  ALLOCATOR_ENV,
  describeAllocatorEnv,
  wantsAllocatorEnv,
  withAllocatorEnv,
  withoutAllocatorEnv,
} from '#trainer/contract/allocatorEnv';

describe('the allocator settings of a trainer process', () => {
  it('adds the glibc settings on Linux and keeps every other variable', () => {
    const env = withAllocatorEnv({ PATH: '/bin', HOME: '/root' }, 'linux');
    assert.deepEqual(env, {
      PATH: '/bin',
      HOME: '/root',
      MALLOC_ARENA_MAX: '1',
      MALLOC_MMAP_MAX_: '0',
      MALLOC_TRIM_THRESHOLD_: '4294967296',
    });
  });

  it('changes nothing when the user set any one of them', () => {
    for (const name of Object.keys(ALLOCATOR_ENV)) {
      const mine = { PATH: '/bin', [name]: '7' };
      assert.equal(wantsAllocatorEnv(mine, 'linux'), false, name);
      assert.deepEqual(withAllocatorEnv(mine, 'linux'), mine, name);
    }
  });

  it('changes nothing off Linux, where the C library does not read them', () => {
    for (const platform of ['darwin', 'win32'] as const) {
      assert.equal(wantsAllocatorEnv({}, platform), false);
      assert.deepEqual(withAllocatorEnv({ PATH: 'x' }, platform), { PATH: 'x' });
    }
  });

  it('takes ours back out for a process that should get its own, and leaves a different value', () => {
    const ours = withAllocatorEnv({ PATH: '/bin' }, 'linux');
    assert.deepEqual(withoutAllocatorEnv(ours), { PATH: '/bin' });
    assert.deepEqual(withoutAllocatorEnv({ MALLOC_ARENA_MAX: '4' }), { MALLOC_ARENA_MAX: '4' });
  });

  it('says whose settings a process runs with', () => {
    assert.match(
      describeAllocatorEnv(withAllocatorEnv({}, 'linux'), 'linux'),
      /^the trainer's settings: MALLOC_ARENA_MAX=1 /,
    );
    assert.match(describeAllocatorEnv({ MALLOC_ARENA_MAX: '8' }, 'linux'), /^your settings: MALLOC_ARENA_MAX=8$/);
    assert.match(describeAllocatorEnv({}, 'linux'), /^glibc defaults/);
    assert.match(describeAllocatorEnv({}, 'darwin'), /Linux only/);
  });
});
