/**
 * `rollout-studio run-tool` runs a tool as a rollout does: in a worker, under its timeout, with
 * the rollout's error kinds (issue 36, item 7). Before, it called the tool on the CLI's own thread:
 * a busy loop hung the command for good, and `process.exit(0)` inside a tool ended it with exit 0
 * and no output, as if the call had succeeded.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../helpers/cliProcess';

const TOOLS = `import { isMainThread } from 'node:worker_threads';
import { defineTool, z } from 'rollout-studio';

export const tools = [
  defineTool({ name: 'spin', description: 'Never yields.', parameters: z.object({}), timeoutMs: 300, execute: () => { for (;;) {} } }),
  defineTool({ name: 'quit', description: 'Ends the process.', parameters: z.object({}), execute: () => process.exit(0) }),
  defineTool({ name: 'where', description: 'Says which thread runs it.', parameters: z.object({ n: z.number() }), execute: ({ n }) => \`\${n} on \${isMainThread ? 'the main thread' : 'a worker'}\` }),
  defineTool({ name: 'here', description: 'Asks to stay on the main thread.', parameters: z.object({}), isolation: 'trainer', execute: () => (isMainThread ? 'main thread' : 'worker') }),
  defineTool({ name: 'leave', description: 'Ends the process from the main thread.', parameters: z.object({}), isolation: 'trainer', execute: () => process.exit(0) }),
];
`;

interface Report {
  tool: { name: string; className: string };
  observation?: string;
  error?: { kind: string; message: string };
}

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-tool-worker-'));
  fs.writeFileSync(path.join(dir, 'tools.ts'), TOOLS);
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function runTool(name: string, args = '{}') {
  const started = performance.now();
  const result = await runCli(['run-tool', 'tools.ts', '--tool', name, '--args', args, '--json'], {
    cwd: dir,
    timeoutMs: 90_000,
  });
  const report = result.stdout.trim() ? (JSON.parse(result.stdout) as Report) : undefined;
  return { ...result, report, ms: performance.now() - started };
}

describe('run-tool runs the tool as a rollout does', { timeout: 300_000 }, () => {
  it("a tool that never yields times out with the rollout's timeout error, and the command ends", async () => {
    const { code, report, stderr, ms } = await runTool('spin');
    assert.equal(code, 1, stderr);
    assert.deepEqual(report?.error, { kind: 'timeout', message: 'spin did not finish within 300 ms' });
    // It ended by itself: a hang is killed at runCli's 90 s (the old code hung for good). The
    // margin is for the CLI's own start on a loaded machine (38 s seen with six jobs on 2 cores).
    assert.ok(ms < 85_000, `ended in ${ms.toFixed(0)} ms`);
  });

  it('a tool that calls process.exit(0) fails the call; the command says so and exits 1', async () => {
    const { code, report, stderr } = await runTool('quit');
    assert.equal(code, 1, `exit ${code}: ${stderr}`);
    assert.equal(report?.error?.kind, 'threw');
    assert.match(
      report!.error!.message,
      /the tool worker of .*tools\.ts exited \(code 0\): process\.exit in a tool or its module ends the worker/,
    );
    assert.doesNotMatch(report!.error!.message, /\n\s+at /, "said in words, without the trainer's stack frames");
    assert.ok(
      !report!.error!.message.includes(dir),
      'the policy reads the file name, not where it lives on this machine',
    );
  });

  it("a tool kept on run-tool's thread (isolation: trainer) that calls process.exit(0) is reported failed, with where it called it, and exits 1", async () => {
    const { code, report, stderr } = await runTool('leave');
    assert.equal(code, 1, `exit ${code}: ${stderr}`);
    assert.equal(report?.error?.kind, 'threw');
    assert.match(
      report!.error!.message,
      /^leave called process\.exit\(0\) at .*tools\.ts:\d+:\d+\)? while its call ran on run-tool's own thread \(isolation: 'trainer'\): the call did not finish/,
    );
    assert.equal(report?.tool.className, 'DefinedTool');
    // The text report too: the same error where the observation would be.
    const text = await runCli(['run-tool', 'tools.ts', '--tool', 'leave'], { cwd: dir, timeoutMs: 60_000 });
    assert.equal(text.code, 1, text.stderr);
    assert.match(text.stdout, /Error: threw\n─+\nleave called process\.exit\(0\)/);
  });

  it('an ordinary call runs in a worker and answers; isolation: trainer keeps a tool on the main thread', async () => {
    const where = await runTool('where', '{"n": 7}');
    assert.equal(where.code, 0, where.stderr);
    assert.equal(where.report?.observation, '7 on a worker');
    const here = await runTool('here');
    assert.equal(here.code, 0, here.stderr);
    assert.equal(here.report?.observation, 'main thread');
  });

  it("run-tool CONFIG --tool NAME finds the tool in the config's tools and names its class, not the worker's stand-in", async () => {
    const config = path.resolve(__dirname, '../../../examples/calculator/config.ts');
    const { code, stdout, stderr } = await runCli(
      ['run-tool', config, '--tool', 'calculator', '--args', '{"expression":"2+3"}', '--json'],
      { cwd: dir, timeoutMs: 60_000 },
    );
    assert.equal(code, 0, stderr);
    const report = JSON.parse(stdout) as Report;
    assert.equal(report.observation, '5');
    assert.equal(report.tool.className, 'CalculatorTool');
  });
});
