/**
 * The C allocator settings a trainer process starts with on Linux.
 *
 * An RL step allocates and frees buffers of tens to hundreds of MiB many times over (each
 * session run's outputs, the KV caches, the gradients). glibc's malloc serves every block above
 * its mmap threshold (at most 32 MiB) with a fresh `mmap` and gives it back with `munmap`, so the
 * kernel zero-fills every page of it again on first touch. With one arena, no mmap and no
 * trimming, freed memory stays in the process and is reused: far fewer page faults, a faster
 * step, the same peak memory (`npm run bench:step`; the numbers in test/bench/README.md).
 * PyTorch users get the same advice for the same reason (a caching allocator, or
 * jemalloc/tcmalloc preloaded).
 *
 * The settings are environment variables that glibc reads once, when the process starts, so the
 * extension sets them on the trainer it spawns and the CLI starts itself again with them
 * (trainer/bridges/cli/relaunch.ts). Other C libraries (musl, macOS, Windows) ignore them. A
 * user who set any of them keeps their own: nothing is changed then.
 */

/** What the trainer process gets, in glibc's names (see mallopt(3)). */
export const ALLOCATOR_ENV: Readonly<Record<string, string>> = {
  // One heap for all threads: a block freed by any of onnxruntime's threads serves the next
  // allocation of any other (with an arena per thread it goes back to its own thread's arena).
  MALLOC_ARENA_MAX: '1',
  // Large blocks from the heap, not from a fresh mmap each time.
  MALLOC_MMAP_MAX_: '0',
  // Keep up to 4 GiB of free heap top instead of returning it to the kernel after each step.
  MALLOC_TRIM_THRESHOLD_: String(4 * 1024 ** 3),
};

/** True when `env` should get ALLOCATOR_ENV: on Linux, when the user set none of its variables. */
export function wantsAllocatorEnv(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'linux' && Object.keys(ALLOCATOR_ENV).every((name) => env[name] === undefined);
}

/** `env` with ALLOCATOR_ENV added when it wants it (see `wantsAllocatorEnv`); else `env` as it is. */
export function withAllocatorEnv(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv {
  return wantsAllocatorEnv(env, platform) ? { ...env, ...ALLOCATOR_ENV } : env;
}

/** `env` without the settings `withAllocatorEnv` adds: for a process that should get its own (a benchmark's peer). */
export function withoutAllocatorEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name, value]) => ALLOCATOR_ENV[name] !== value));
}

/** In words, for `rollout-studio env`: which settings this process runs with. */
export function describeAllocatorEnv(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string {
  if (platform !== 'linux') return 'the system allocator (the malloc settings apply to Linux only)';
  const set = Object.keys(ALLOCATOR_ENV)
    .filter((name) => env[name] !== undefined)
    .map((name) => `${name}=${env[name]}`);
  if (set.length === 0)
    return 'glibc defaults (no MALLOC_* setting: this process was not started by the CLI or the extension)';
  const ours = Object.entries(ALLOCATOR_ENV).every(([name, value]) => env[name] === value);
  return `${ours ? "the trainer's settings" : 'your settings'}: ${set.join(' ')}`;
}
