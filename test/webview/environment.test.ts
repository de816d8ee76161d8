/**
 * The Check Environment webview under the panels' Content-Security-Policy: every state it can
 * show renders without a CSP violation. (It used to log "Applying inline style violates …
 * style-src": FAST Foundation's :focus-visible probe and the toolkit's badge/tag template.)
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import type { EnvironmentReport } from '#trainer/contract/protocol';
import { launchBrowser } from '../harness/browser';
import { openWebviewApp } from '../harness/webviewApp';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(() => browser?.close());

const report: EnvironmentReport = {
  generatedAt: '2026-12-01T10:00:00Z',
  runtime: {
    node: '20.20.2',
    platform: 'linux',
    arch: 'x64',
    cpuModel: 'test CPU',
    cpuCount: 2,
    totalMemoryBytes: 2 ** 34,
    freeMemoryBytes: 2 ** 33,
    allocator: "the trainer's settings: MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967296",
  },
  onnxruntime: {
    version: '1.30.0',
    telemetry: 'off (ORT_DISABLE_TELEMETRY=1)',
    backends: [{ name: 'cpu', bundled: true }],
  },
  providers: {
    cpu: { name: 'cpu', available: true, maxAbsError: 1e-7, elapsedMs: 12 },
    webgpu: {
      name: 'webgpu',
      available: true,
      adapter: { vendor: 'mesa', architecture: 'llvmpipe', device: 'lavapipe', description: 'software' },
    },
    cuda: {
      name: 'cuda',
      available: false,
      reason:
        'Download the CUDA provider: ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js',
    },
  },
};

describe('Check Environment webview', () => {
  it('shows checking, a report and a failure with no CSP violation', async () => {
    const app = await openWebviewApp(browser, 'environment');
    await app.send({ type: 'checking' });
    await app.page.locator('#status.checking').waitFor();
    await app.send({ type: 'report', report });
    await app.page.locator('#status', { hasText: 'Training can run on: cpu, webgpu' }).waitFor();
    assert.equal(await app.page.locator('.summary .rs-tag').count(), 2);
    assert.equal(
      await app.page.locator('table.runtime tr', { hasText: 'Allocator' }).locator('td').textContent(),
      report.runtime.allocator,
    );
    assert.equal(
      await app.page.locator('table.runtime tr', { hasText: "onnxruntime's telemetry" }).locator('td').textContent(),
      report.onnxruntime.telemetry,
    );
    await app.send({ type: 'failed', title: 'The trainer exited with code 3.', detail: 'simulated crash' });
    await app.page.locator('#status.failed').waitFor();
    assert.deepEqual(app.fromWebview[0], { type: 'ready' });
    assert.deepEqual(app.violations, []);
    assert.deepEqual(app.consoleErrors, []);
  });
});
