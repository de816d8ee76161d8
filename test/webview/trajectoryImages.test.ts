/**
 * The built Trajectories webview in Chromium showing the images a trajectory saw: the host
 * maps each record's image file to a URI of the run directory (asWebviewUri in VS Code), the
 * page's strict Content-Security-Policy (`img-src ${cspSource}`) lets exactly those load, and
 * the detail shows the prompt's image at the top and a tool's image under the call that
 * returned it.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { RunDirectorySource } from '../../extension/panels/source/runDirectorySource';
import { TrajectoriesController } from '../../extension/panels/trajectoriesController';
import { writeRecordedRun, writeStepWithImages } from '../fixtures/recordedRun';
import { launchBrowser } from '../harness/browser';
import { connect, openWebviewApp, runResourceUri } from '../harness/webviewApp';

let browser: Browser;
let source: RunDirectorySource | undefined;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  source?.dispose();
  await browser?.close();
});

describe('Trajectories webview with images', () => {
  it('shows the prompt image and the tool’s image, loaded from the run directory under the CSP', async () => {
    const dir = writeRecordedRun(
      path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'trajectories-images-')), 'run-images'),
      { steps: 1, batch: 4, groupSize: 4, seed: 7, status: 'running' },
    );
    const png = (colour: string) =>
      sharp({ create: { width: 32, height: 24, channels: 3, background: colour } })
        .png()
        .toBuffer();
    const records = writeStepWithImages(dir, 2, 8, {
      prompt: new Uint8Array(await png('#2060c0')),
      tool: new Uint8Array(await png('#e04020')),
    });
    const record = records.find((r) => r.images!.length === 2)!;
    source = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
    const app = await openWebviewApp(browser, 'trajectories', { runDir: dir });
    connect(
      app,
      (post) =>
        new TrajectoriesController(
          source!,
          post,
          { openInDebugger: async () => undefined, resourceUri: (_run, file) => runResourceUri(file) },
          'follow',
        ),
    );
    const page = app.page;
    await page.locator(`.vt-window .vt-row[data-key="${record.index}"]`).click();
    const detail = page.locator(`#detail .detail-body[data-index="${record.index}"]`);
    await detail.waitFor();
    const figures = detail.locator('figure.trajectory-image');
    assert.equal(await figures.count(), 3, 'both images in the strip, and the tool image again under its call');
    assert.equal(await detail.locator('#images figure').count(), 2);
    const underCall = detail.locator('.tool-call figure.trajectory-image');
    assert.equal(await underCall.count(), 1);
    assert.equal(await underCall.getAttribute('data-sha256'), record.images![1].sha256);
    assert.match(
      (await detail.locator('#images figure[data-from="prompt"] figcaption').textContent())!,
      /prompt · 32×24 png · 12 tokens at 2/,
    );
    // Every image really loaded (decoded by the browser), and nothing was blocked.
    await page.waitForFunction(() =>
      [...document.querySelectorAll('figure.trajectory-image img')].every(
        (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0,
      ),
    );
    const widths = await page.$$eval('figure.trajectory-image img', (imgs) =>
      imgs.map((img) => (img as HTMLImageElement).naturalWidth),
    );
    assert.deepEqual(widths, [32, 32, 32]);
    assert.deepEqual(app.violations, [], 'no CSP violations and no network');
    assert.deepEqual(app.consoleErrors, []);
    fs.mkdirSync(path.resolve(__dirname, '../../test-output/screenshots'), { recursive: true });
    await detail.screenshot({ path: path.resolve(__dirname, '../../test-output/screenshots/trajectory-images.png') });
    await app.close();
  });
});
