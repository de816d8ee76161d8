/**
 * The machine's fp32 FMA peak (test/bench/fma_peak.c), built at bench time with the system C
 * compiler for this CPU (-march=native) and run with one thread per core.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PeerProcess } from './peerProcess';

const SOURCE = path.join(__dirname, '..', 'fma_peak.c');

export interface FmaPeak {
  isa: string;
  threads: number;
  gflops: number;
}

export class FmaPeakProgram {
  private constructor(readonly binary: string) {}

  static build(): FmaPeakProgram {
    const source = fs.readFileSync(SOURCE);
    const cc = process.env.CC ?? 'gcc';
    const binary = path.join(
      os.tmpdir(),
      `rollout-bench-fma-${createHash('sha256').update(source).update(cc).digest('hex').slice(0, 12)}`,
    );
    if (!fs.existsSync(binary)) {
      try {
        execFileSync(cc, ['-O3', '-march=native', '-pthread', SOURCE, '-o', binary], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
      } catch (error) {
        const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? (error as Error).message;
        throw new Error(
          `building the FMA peak program failed (${cc} -O3 -march=native -pthread ${SOURCE}); install gcc or set CC:\n${stderr}`,
          { cause: error },
        );
      }
    }
    return new FmaPeakProgram(binary);
  }

  /**
   * The program kept running, measuring once per request (`threads`, about `seconds` a run, best
   * of `reps`). Starting a process forks the benchmark, and its next run pays a page fault for
   * every page it writes (fma_peak.c's header): measuring between repetitions with `measure`
   * would charge that to whichever side runs next.
   */
  serve(threads: number, seconds: number, reps: number): { measure(): Promise<FmaPeak>; close(): Promise<void> } {
    const peer = PeerProcess.start('FMA peak program', this.binary, [
      'serve',
      String(threads),
      String(seconds),
      String(reps),
    ]);
    return {
      measure: () => peer.request<FmaPeak & Record<string, unknown>>({ op: 'measure' }),
      close: () => peer.close(),
    };
  }

  /** The best GFLOP/s of `reps` runs of about `seconds` each (a process started for it). */
  measure(threads: number, seconds = 0.25, reps = 2): FmaPeak {
    const out = execFileSync(this.binary, [String(threads), String(seconds), String(reps)], { encoding: 'utf8' });
    return JSON.parse(out.trim()) as FmaPeak;
  }
}
