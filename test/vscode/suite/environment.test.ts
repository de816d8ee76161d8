import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EnvironmentCheckOutcome } from '../../../extension/environmentPanel';

const fixtures = path.resolve(__dirname, '../../../../test/fixtures/trainers');
const EXTENSION_ID = 'rollout-studio.rollout-studio';

async function checkEnvironment(): Promise<EnvironmentCheckOutcome> {
  return (await vscode.commands.executeCommand('rolloutStudio.checkEnvironment')) as EnvironmentCheckOutcome;
}

async function setNodePath(value: string | undefined): Promise<void> {
  await vscode.workspace
    .getConfiguration('rolloutStudio')
    .update('trainer.nodePath', value, vscode.ConfigurationTarget.Global);
}

describe('Check Environment', () => {
  afterEach(() => setNodePath(undefined));

  it('is contributed by the extension and registered on activation', async () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(extension, `${EXTENSION_ID} is not installed in this VS Code`);
    await extension.activate();
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('rolloutStudio.checkEnvironment'));
  });

  it('starts the trainer process and returns its validated report', async () => {
    const outcome = await checkEnvironment();
    assert.equal(outcome.ok, true, outcome.ok ? '' : `${outcome.title} ${outcome.detail}`);
    if (!outcome.ok) return;
    const { report } = outcome;
    // The trainer ran in a separate process on the extension host's runtime.
    assert.equal(report.runtime.node, process.versions.node);
    assert.equal(report.providers.cpu.available, true, report.providers.cpu.reason);
    assert.ok(report.providers.cpu.maxAbsError! < 1e-4);
    assert.match(report.onnxruntime.version ?? '', /^\d+\.\d+\.\d+$/);
    // CUDA is not installed by default: the report must say why, in actionable words.
    if (!report.providers.cuda.available) assert.match(report.providers.cuda.reason ?? '', /cuda12|NVIDIA|CUDA/);
  });

  it('says which executable failed when the trainer cannot start, and recovers', async () => {
    await setNodePath('/nonexistent/bin/node');
    const failed = await checkEnvironment();
    assert.equal(failed.ok, false);
    if (failed.ok) return;
    assert.match(failed.title, /Could not start the trainer/);
    assert.match(failed.title, /\/nonexistent\/bin\/node/);
    assert.match(failed.detail, /rolloutStudio\.trainer\.nodePath/);
    await setNodePath(undefined);
    const recovered = await checkEnvironment();
    assert.equal(recovered.ok, true);
  });

  it('rejects a trainer message that does not match the protocol, naming the field', async () => {
    await setNodePath(path.join(fixtures, 'invalid-message-node.sh'));
    const outcome = await checkEnvironment();
    assert.equal(outcome.ok, false);
    if (outcome.ok) return;
    assert.match(outcome.title, /does not understand/);
    assert.match(outcome.detail, /report\.runtime/);
  });

  it('reports a trainer that dies before answering, with its last output', async () => {
    await setNodePath(path.join(fixtures, 'crashing-node.sh'));
    const outcome = await checkEnvironment();
    assert.equal(outcome.ok, false);
    if (outcome.ok) return;
    assert.match(outcome.title, /exited with code 3/);
    assert.match(outcome.detail, /simulated crash/);
  });
});
