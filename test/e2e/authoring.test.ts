import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { repoRoot } from '../harness/paths';
import { openFile, openWorkbench, runCommand, screenshot, type Workbench } from '../harness/workbench';

/** The text of the active editor as Monaco renders it (spaces come as no-break spaces). */
async function editorText(page: Page): Promise<string> {
  const text = await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText();
  return text.replace(/\u00a0/g, ' ');
}

/** Waits until the active editor (or any editor) shows `text`. */
async function shows(page: Page, text: string, where: 'active' | 'any' = 'active', timeout = 30_000): Promise<void> {
  await page.waitForFunction(
    ([wanted, selector]) =>
      [...document.querySelectorAll(selector)].some((v) =>
        (v.textContent ?? '').replace(/\u00a0/g, ' ').includes(wanted),
      ),
    [text, where === 'active' ? '.editor-group-container.active .view-lines' : '.view-lines'] as const,
    { timeout },
  );
}

/**
 * Types a snippet's prefix in the active (empty) editor and accepts the snippet's own suggestion,
 * then waits for `expanded` to appear. The suggest list can open before every provider has
 * answered (TypeScript's server starts slowly on a fresh machine) and other rows also contain
 * the prefix (the DOM global `toolbar`), so the test picks the row with the snippet icon and
 * exactly this label, asks again when it is missing, and starts over if acceptance did not
 * expand it.
 */
async function expandSnippet(page: Page, prefix: string, expanded: string): Promise<void> {
  const textarea = page.locator('.editor-group-container.active .monaco-editor textarea').first();
  const snippetRow = page
    .locator('.suggest-widget .monaco-list-row')
    .filter({ has: page.locator('.codicon-symbol-snippet') })
    .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${prefix}$`) }) })
    .first();
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    await textarea.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.type(prefix);
    try {
      for (let ask = 0; !(await snippetRow.isVisible()); ask++) {
        if (ask === 30) throw new Error(`the "${prefix}" snippet is not among the suggestions`);
        if (ask > 0 && ask % 5 === 0) await page.keyboard.press('Control+Space');
        await page.waitForTimeout(1000);
      }
      // Enter when the snippet is the focused row (it sorts first), as a user would; else a click.
      if (/\bfocused\b/.test((await snippetRow.getAttribute('class')) ?? '')) await page.keyboard.press('Enter');
      else await snippetRow.click();
      await shows(page, expanded, 'active', 10_000);
      return;
    } catch (error) {
      lastError = error;
      console.log(`snippet attempt ${attempt}: ${error instanceof Error ? error.message.split('\n')[0] : error}`);
      await page.keyboard.press('Escape');
    }
  }
  throw lastError;
}

describe('Authoring in a real VS Code: a snippet, and Run Tool… from a code lens', () => {
  let workbench: Workbench;
  before(async () => {
    workbench = await openWorkbench('e2e-authoring');
    const { workspace } = workbench;
    // The example's search tool with what it imports; snippets first in the suggestions.
    fs.mkdirSync(path.join(workspace, 'multihop'), { recursive: true });
    for (const file of ['tools.ts', 'kb.ts', 'rows.ts'])
      fs.copyFileSync(path.join(repoRoot, 'examples/multihop-search', file), path.join(workspace, 'multihop', file));
    fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
    fs.writeFileSync(
      path.join(workspace, '.vscode', 'settings.json'),
      JSON.stringify({ 'editor.snippetSuggestions': 'top' }),
    );
    fs.writeFileSync(path.join(workspace, 'lookup.ts'), '');
    // As if the package were installed: the editor resolves 'rollout-studio' to this repository's trainer.
    fs.writeFileSync(
      path.join(workspace, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          skipLibCheck: true,
          noEmit: true,
          types: [],
          paths: { 'rollout-studio': [path.join(repoRoot, 'trainer/index.ts')] },
        },
      }),
    );
  });
  after(() => workbench?.close());

  it('expands the tool snippet in a new file: type the prefix, accept the suggestion', async () => {
    const { page } = workbench;
    await openFile(page, 'lookup.ts');
    await expandSnippet(page, 'tool', 'LookupTool');
    const text = await editorText(page);
    assert.match(text, /import \{ Tool, z, type ToolContext \} from 'rollout-studio';/);
    assert.match(text, /export class LookupTool extends Tool<typeof LookupArgs> \{/);
    assert.match(text, /export const lookup = new LookupTool\(\);/);
    // The first placeholder is selected for typing: the class name's stem, mirrored everywhere.
    await page.keyboard.type('Glossary');
    await shows(page, 'GlossaryTool extends Tool<typeof GlossaryArgs>');
    await page.keyboard.press('Escape');
  });

  it("Run Tool… from the search tool's code lens: the argument box checks the schema, the result opens beside", async () => {
    const { page } = workbench;
    await openFile(page, 'multihop/tools.ts');
    // The file defines two tools (KnowledgeBaseSearch, then MultiWorldSearch): a pair of lenses each.
    const lenses = page.locator('.codelens-decoration a', { hasText: 'Run Tool…' });
    await lenses.first().waitFor({ timeout: 90_000 });
    assert.equal(await lenses.count(), 2);
    assert.equal(await page.locator('.codelens-decoration a', { hasText: 'Debug Tool' }).count(), 2);
    const lens = page.locator('.codelens-decoration a[title^="Run KnowledgeBaseSearch with"]');
    await lens.click();

    // The box starts from the schema's required fields; an empty query fails the tool's .min(1).
    const input = page.locator('.quick-input-widget input');
    await page
      .locator('.quick-input-widget .quick-input-title', { hasText: 'Run Tool: search' })
      .waitFor({ timeout: 60_000 });
    assert.equal(await input.inputValue(), '{"query":""}');
    const message = page.locator('.quick-input-widget .quick-input-message');
    await message.filter({ hasText: 'query: Too small' }).waitFor({ timeout: 30_000 });
    await input.fill('{"query": 3}');
    await message
      .filter({ hasText: 'query: Invalid input: expected string, received number' })
      .waitFor({ timeout: 30_000 });
    await input.fill('{"query": "who does William Harlow work for"');
    await message.filter({ hasText: 'Not valid JSON' }).waitFor({ timeout: 30_000 });
    await input.fill('{"query": "who does William Harlow work for"}');
    await page.waitForFunction(
      () =>
        !/Does not match|Not valid JSON/.test(
          document.querySelector('.quick-input-widget .quick-input-message')?.textContent ?? '',
        ),
      undefined,
      { timeout: 30_000 },
    );
    await page.keyboard.press('Enter');

    const tab = page.locator('.tab', { hasText: 'search · Run Tool.txt' });
    await tab.waitFor({ timeout: 60_000 });
    await shows(page, 'Observation (what the policy sees)', 'any');
    const result = [...(await page.locator('.view-lines').allInnerTexts())]
      .map((t) => t.replace(/\u00a0/g, ' '))
      .find((t) => t.includes('Observation'))!;
    assert.match(result, /search \(KnowledgeBaseSearch\) from multihop\/tools\.ts/);
    assert.match(result, /William Harlow works for [\w ]+\./);
    assert.match(result, /"documentIds": \[/);
    // Room for the source with its lenses and the result beside it.
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.waitForTimeout(500);
    const file = await screenshot(page, 'authoring.png');
    console.log(`screenshot: ${file}`);
  });
});
