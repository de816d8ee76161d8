/**
 * The cost of running a config's tools in the tool worker (trainer/bridges/usercode/toolHost.ts) rather
 * than on the trainer's thread: per call, for a tool that does almost nothing (the round trip
 * itself) and for the multihop example's `search` (a real tool); and once, the worker's start
 * (evaluating the config module again). Both ways run in this process, one after the other.
 *
 *   npx tsx test/bench/tools.bench.ts
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { datasetFromRows } from '../../trainer/foundations/data';
import { ToolRunner, ToolSet, type Tool, type ToolCallRequest } from '../../trainer/foundations/tools';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';

const ROOT = path.resolve(__dirname, '../..');
const EXAMPLE = path.join(ROOT, 'examples/multihop-search');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tools-bench-'));
const configFile = path.join(dir, 'bench.config.ts');
fs.writeFileSync(
  configFile,
  `import { defineConfig, defineTool, z } from 'rollout-studio';
import { search } from ${JSON.stringify(path.join(EXAMPLE, 'tools'))};
const echo = defineTool({ name: 'echo', description: 'Echoes.', parameters: z.object({ text: z.string() }), execute: ({ text }) => text });
export default defineConfig({ model: { path: 'model' }, data: { train: 'train.jsonl' }, tools: [echo, search], rewards: { outcome: [{ name: 'zero', score: () => 0 }] }, algorithm: { name: 'grpo' }, steps: 1 });
`,
);

const row = datasetFromRows('bench', [{ id: 'r', prompt: 'x' }]).rows[0];
const request = (name: string, args: unknown, index: number): ToolCallRequest => ({
  name,
  arguments: args,
  trajectory: { index, rowId: 'r', group: 0, sample: 0, messages: [], calls: [] },
  turn: 0,
  callIndex: 0,
  row,
});

/** Mean milliseconds per call over `rounds` rounds of `perRound` concurrent calls (after a warm-up round). */
async function perCall(
  tools: readonly Tool[],
  name: string,
  args: unknown,
  rounds: number,
  perRound: number,
): Promise<number> {
  const runner = new ToolRunner(new ToolSet(tools));
  const round = () => runner.run(Array.from({ length: perRound }, (_, i) => request(name, args, i)));
  await round();
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const outcomes = await round();
    if (outcomes.some((o) => o.error)) throw new Error(outcomes.find((o) => o.error)!.error!.message);
  }
  return (performance.now() - started) / (rounds * perRound);
}

async function main(): Promise<void> {
  const loaded = await loadConfig(configFile);
  const inline = loaded.config.tools;
  const startedAt = performance.now();
  const placed = await loaded.placeTools!(inline);
  const startMs = performance.now() - startedAt;
  try {
    for (const [name, args, perRound] of [
      ['echo', { text: 'hello' }, 1],
      ['echo', { text: 'hello' }, 16],
      ['search', { query: 'William' }, 16],
    ] as const) {
      // Alternating, best of three each: the machine is shared, and the first rounds warm the JIT up.
      let trainer = Infinity;
      let worker = Infinity;
      for (let rep = 0; rep < 3; rep++) {
        trainer = Math.min(trainer, await perCall(inline, name, args, 100, perRound));
        worker = Math.min(worker, await perCall(placed.tools, name, args, 100, perRound));
      }
      console.log(
        `RESULT tool=${name} concurrent=${perRound} trainer_ms_per_call=${trainer.toFixed(4)} worker_ms_per_call=${worker.toFixed(4)} added_ms_per_call=${(worker - trainer).toFixed(4)} ratio=${(worker / trainer).toFixed(2)}`,
      );
    }
    console.log(`RESULT tool_worker_start_ms=${startMs.toFixed(0)}`);
  } finally {
    await placed.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
