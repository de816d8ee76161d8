import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import sharp from 'sharp';
import { writeRecordedRun, writeStepWithImages } from '../fixtures/recordedRun';
import { openWorkbench, panelFrame, runCommand, screenshot, type Workbench } from '../harness/workbench';

/**
 * A vision-language run's images in a real VS Code (code-server, the packaged extension): the
 * Trajectories panel loads the prompt's and the tool's image from the run directory through
 * asWebviewUri under the panel's CSP, and the replay debugger's VARIABLES list the images the
 * trajectory has seen.
 */
describe('images a trajectory saw, in a real VS Code', () => {
  let workbench: Workbench;
  let index: number;
  before(async () => {
    workbench = await openWorkbench('e2e-images');
    const dir = writeRecordedRun(path.join(workbench.workspace, '.rollout', 'runs', 'run-images'), {
      steps: 1,
      batch: 4,
      groupSize: 4,
      seed: 5,
      status: 'running',
    });
    const png = async (colour: string) =>
      new Uint8Array(
        await sharp({ create: { width: 32, height: 24, channels: 3, background: colour } })
          .png()
          .toBuffer(),
      );
    const records = writeStepWithImages(dir, 2, 8, { prompt: await png('#2060c0'), tool: await png('#e04020') });
    index = records.find((r) => r.images!.length === 2)!.index;
  });
  after(() => workbench?.close());

  it('the Trajectories panel shows the prompt image and the tool’s image; the debugger lists them', async () => {
    const { page } = workbench;
    await runCommand(page, 'Rollout Studio: Open Trajectories');
    const view = await panelFrame(page, 'trajectories');
    await view.locator('#row-count', { hasText: '8 trajectories' }).waitFor({ timeout: 60_000 });
    await view.locator(`.vt-window .vt-row[data-key="${index}"]`).click();
    const detail = view.locator(`#detail .detail-body[data-index="${index}"]`);
    await detail.waitFor({ timeout: 30_000 });
    await view.waitForFunction(
      () => {
        const images = [...document.querySelectorAll('figure.trajectory-image img')] as HTMLImageElement[];
        return images.length === 3 && images.every((img) => img.complete && img.naturalWidth === 32);
      },
      undefined,
      { timeout: 30_000 },
    );
    const sources = await view.$$eval('figure.trajectory-image img', (imgs) =>
      imgs.map((img) => (img as HTMLImageElement).src),
    );
    assert.ok(
      sources.every((src) => /run-images\/images\/[0-9a-f]{64}\.png/.test(decodeURIComponent(src))),
      sources.join(', '),
    );
    await detail.locator('#images').scrollIntoViewIfNeeded();
    console.log(`screenshot: ${await screenshot(page, 'trajectory-images.png')}`);

    // The replay debugger, stopped at this trajectory's first turn: VARIABLES has its images so far.
    await view.locator('vscode-button', { hasText: 'Open in Debugger' }).click();
    await page.locator('.debug-toolbar').waitFor({ timeout: 30_000 });
    const scope = page.locator('.debug-view-content .monaco-list-row', { hasText: /Images \(\d\)/ });
    await scope.first().waitFor({ timeout: 30_000 });
    assert.match((await scope.first().textContent()) ?? '', /Images \(1\)/);
    console.log(`screenshot: ${await screenshot(page, 'debugger-images.png')}`);
    await page.locator('.debug-toolbar .codicon-debug-stop').click();
    await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 30_000 });
  });
});
