/**
 * The one gate for workspace code (extension/workspaceCode.ts): in Restricted Mode every way the
 * extension starts the trainer — a training's TrainerProcess, runTrainer (Evaluate on Samples,
 * Check Environment), a tool session (Run Tool, Debug Tool), execFile (Re-roll, the MCP tool
 * list) — refuses before a process exists, saying what would have run. The "trainer" here is a
 * script that writes a marker file, so a process that starts anyway is seen.
 */
import { afterEach, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { resolveTrainerRuntime, runTrainer, TrainerProcess } from '../../../extension/trainerProcess';
import { ToolSession } from '../../../extension/authoring/toolSession';
import {
  execFileWorkspaceCode,
  RestrictedModeError,
  setTrustProbeForTests,
  spawnWorkspaceCode,
} from '../../../extension/workspaceCode';

const node = resolveTrainerRuntime(process.execPath);
const use = { action: 'Re-roll', runs: 'the config /repo/evil.ts' };

/** A script that leaves a marker when it runs: the hostile code of these tests. */
function markerScript(): { script: string; marker: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gate-'));
  const marker = path.join(dir, 'ran');
  const script = path.join(dir, 'evil.js');
  fs.writeFileSync(script, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
  return { script, marker };
}

let restore: (() => void) | undefined;
afterEach(() => restore?.());

async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 300));
}

describe('the gate for workspace code, in Restricted Mode', () => {
  it('refuses every way of starting the trainer, saying what would run, and nothing runs', async () => {
    const { script, marker } = markerScript();
    restore = setTrustProbeForTests(() => false);
    const expected =
      /Restricted Mode: Re-roll would run the config \/repo\/evil\.ts from this folder\. Trust the folder/;
    assert.throws(() => TrainerProcess.start({ runtime: node, cliPath: script }, { use, args: [] }), expected);
    await assert.rejects(runTrainer({ use, runtime: node, cliPath: script, args: [] }), RestrictedModeError);
    await assert.rejects(ToolSession.start({ use, runtime: node, cliPath: script, file: script }), expected);
    assert.throws(() => spawnWorkspaceCode(use, node.command, [script], { env: node.env }), expected);
    assert.throws(
      () => execFileWorkspaceCode(use, node.command, [script], { env: node.env }, () => undefined),
      RestrictedModeError,
    );
    await settle();
    assert.equal(fs.existsSync(marker), false, 'the hostile script never ran');
  });

  it('starts the process once the workspace is trusted (the same script, the marker written)', async () => {
    const { script, marker } = markerScript();
    restore = setTrustProbeForTests(() => true);
    await new Promise<void>((resolve, reject) =>
      execFileWorkspaceCode(use, node.command, [script], { env: node.env }, (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    assert.equal(fs.existsSync(marker), true);
  });
});
