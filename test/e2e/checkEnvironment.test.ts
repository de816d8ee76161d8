import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { openWorkbench, runCommand, screenshot, webviewFrame, type Workbench } from '../harness/workbench';

describe('Rollout Studio: Check Environment, from the command palette of a real VS Code', () => {
  let workbench: Workbench;
  before(async () => {
    workbench = await openWorkbench('e2e-check-environment');
  });
  after(() => workbench?.close());

  it('shows the report the trainer process sent, with CPU and WebGPU available', async () => {
    const { page } = workbench;
    await runCommand(page, 'Rollout Studio: Check Environment');
    const view = webviewFrame(page);
    const status = view.locator('#status');
    await status.filter({ hasText: 'Training can run on' }).waitFor({ timeout: 120_000 });
    assert.match((await status.textContent()) ?? '', /Training can run on: cpu, webgpu/);

    const cpu = view.locator('.provider[data-provider="cpu"]');
    assert.equal(await cpu.locator('.state').textContent(), 'available');
    const webgpu = view.locator('.provider[data-provider="webgpu"]');
    assert.equal(await webgpu.locator('.state').textContent(), 'available');
    assert.ok(
      ((await webgpu.locator('.adapter-device').textContent()) ?? '').length > 3,
      'the WebGPU adapter is named',
    );

    // CUDA is not installed by default: the user sees why and what to run.
    const cuda = view.locator('.provider[data-provider="cuda"]');
    assert.equal(await cuda.locator('.state').textContent(), 'unavailable');
    assert.match(
      (await cuda.locator('.reason').textContent()) ?? '',
      /libonnxruntime_providers_cuda\.so .* are not in .*ONNXRUNTIME_NODE_INSTALL=cuda12 node \S+\/onnxruntime-node\/script\/install\.js/,
    );

    await page.waitForTimeout(500);
    const file = await screenshot(page, 'check-environment.png');
    console.log(`screenshot: ${file}`);
  });
});
