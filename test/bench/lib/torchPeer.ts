/**
 * A PyTorch peer at its best setting. Two thread pools decide PyTorch's CPU speed — torch's
 * intra-op threads (torch.set_num_threads) and OpenBLAS's own (OPENBLAS_NUM_THREADS, fixed at
 * process start) — and the wrong pair oversubscribes the cores (DESIGN.md: the reference train
 * step takes 1.05 s with 2 × 2 threads and 0.566 s with 1 × 2 on two cores). So does the
 * allocator where page faults are dear (`keepFreedMemory`). Every setting a competent user would
 * try runs the benchmark's own probe; the fastest is kept, and the table of all of them printed.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { median } from './pairs';
import { PeerProcess, PYTHON } from './peerProcess';

/**
 * Fails at once, with what to install, when the Python the PyTorch peers run on cannot import
 * torch: a benchmark calls it before its first measurement, not after minutes of ours.
 */
export function requirePyTorch(): void {
  const probe = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status === 0) return;
  const why = probe.error ? probe.error.message : (probe.stderr.trim().split('\n').at(-1) ?? `exit ${probe.status}`);
  throw new Error(
    `the PyTorch peer cannot start: ${PYTHON} -c "import torch" failed (${why}). Install Debian's python3-torch and libopenblas0-pthread (apt-get install python3-torch libopenblas0-pthread), or set BENCH_PYTHON to a Python that has torch`,
  );
}

export interface TorchSetting {
  torchThreads: number;
  blasThreads: number;
  /**
   * glibc's malloc keeps freed memory instead of handing it back to the kernel (no mmap'd blocks,
   * no trimming). Eager PyTorch frees and reallocates its activations every step, and where a
   * page fault is dear (12–15 µs on these VMs, against well under 1 µs on a bare machine) the
   * default allocator's returns cost it more than its arithmetic: its reference train step takes
   * 1.4–1.9 s by default and 0.60 s keeping freed memory (measured, 2026-12-04).
   */
  keepFreedMemory: boolean;
}

/** glibc malloc tunables that keep freed memory in the process (documented in mallopt(3)). */
const KEEP_FREED_MEMORY = { MALLOC_MMAP_MAX_: '0', MALLOC_TRIM_THRESHOLD_: String(2 ** 36) };

export interface TorchPeerInfo {
  torch: string;
  torch_threads: number;
  openblas_threads: string;
  blas: string;
  blas_loaded: string[];
}

export interface BestTorchPeer {
  peer: PeerProcess;
  setting: TorchSetting;
  info: TorchPeerInfo;
  /** Probe seconds (median) of every setting tried. */
  tried: Array<{ setting: TorchSetting; seconds: number }>;
}

/** Every thread pair (1 or every core, for each pool), with glibc's default allocator and keeping freed memory. */
export function peerSettings(cores: number): TorchSetting[] {
  const counts = [...new Set([1, cores])];
  return [false, true].flatMap((keepFreedMemory) =>
    counts.flatMap((torchThreads) => counts.map((blasThreads) => ({ torchThreads, blasThreads, keepFreedMemory }))),
  );
}

export function describeSetting(s: TorchSetting): string {
  return `torch.set_num_threads(${s.torchThreads}), OPENBLAS_NUM_THREADS=${s.blasThreads}${
    s.keepFreedMemory
      ? `, ${Object.entries(KEEP_FREED_MEMORY)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  }`;
}

/** The setting as a RESULT line's value. */
export function settingResult(peer: BestTorchPeer): string {
  const s = peer.setting;
  return `torch_threads:${s.torchThreads},openblas_threads:${s.blasThreads},malloc:${s.keepFreedMemory ? 'keep_freed' : 'default'} blas=${peer.info.blas.split(' ')[0]}`;
}

/**
 * Start `script` once per setting (thread counts × allocator), send each `setup` (plus `threads`),
 * time `probe` (the reply's `seconds`) `probeReps` times after one warm-up, and keep the fastest
 * peer running. The two pools interact with the allocator (measured: keeping freed memory, one
 * torch thread over two OpenBLAS threads beat two over one), so every combination is tried.
 */
export async function startBestTorchPeer(
  script: string,
  cores: number,
  setup: Record<string, unknown>,
  probe: Record<string, unknown>,
  probeReps = 3,
): Promise<BestTorchPeer> {
  let best: Omit<BestTorchPeer, 'tried'> | undefined;
  let bestSeconds = Infinity;
  const tried: BestTorchPeer['tried'] = [];
  for (const setting of peerSettings(cores)) {
    const env = {
      OPENBLAS_NUM_THREADS: String(setting.blasThreads),
      ...(setting.keepFreedMemory ? KEEP_FREED_MEMORY : {}),
    };
    const peer = PeerProcess.start(
      `PyTorch peer (${describeSetting(setting)})`,
      PYTHON,
      [path.join(__dirname, '..', script)],
      env,
    );
    const info = await peer.request<TorchPeerInfo>({ ...setup, op: 'setup', threads: setting.torchThreads });
    const warmup = (await peer.request<{ seconds: number }>(probe)).seconds;
    if (warmup > 4 * bestSeconds) {
      // An oversubscribed setting on a loaded machine: measuring it further would take minutes.
      console.log(
        `  PyTorch setting ${describeSetting(setting)}: skipped (warm-up ${warmup.toFixed(3)} s, over 4× the best)`,
      );
      tried.push({ setting, seconds: warmup });
      await peer.close();
      continue;
    }
    const times: number[] = [];
    for (let i = 0; i < probeReps; i++) times.push((await peer.request<{ seconds: number }>(probe)).seconds);
    const seconds = median(times);
    tried.push({ setting, seconds });
    console.log(`  PyTorch setting ${describeSetting(setting)}: probe ${seconds.toFixed(3)} s`);
    if (seconds < bestSeconds) {
      await best?.peer.close();
      best = { peer, setting, info };
      bestSeconds = seconds;
    } else await peer.close();
  }
  const chosen = { ...best!, tried };
  console.log(
    `PyTorch ${chosen.info.torch} at its best setting: ${describeSetting(chosen.setting)}; BLAS: ${chosen.info.blas} (${chosen.info.blas_loaded.join(', ') || 'none found'})`,
  );
  return chosen;
}
