/**
 * When the extension starts, and what waits: it activates in TypeScript files (the code lenses
 * over tools, rewards and configs need it; snippets are declarative and need nothing), on its
 * debug type, its panels and a `.rollout/` folder; the runs part (runs listed and watched, the
 * live-run status bar) waits for a Rollout Studio workspace (extension/rolloutWorkspace.ts).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { importsRolloutStudio, isRolloutWorkspace, StartOnce } from '../../../extension/rolloutWorkspace';
import { NewestRun } from '../../../extension/panels/newestRun';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: { snippets: { language: string }[] };
};

describe('activation', () => {
  it('activates on its debug type, its panels, a .rollout/ folder and TypeScript files, and nothing else', () => {
    assert.deepEqual([...manifest.activationEvents].sort(), [
      'onDebugDynamicConfigurations:rollout',
      'onDebugInitialConfigurations',
      'onDebugResolve:rollout',
      'onLanguage:typescript',
      'onLanguage:typescriptreact',
      'onWebviewPanel:rolloutStudio.metrics',
      'onWebviewPanel:rolloutStudio.trajectories',
      'workspaceContains:.rollout/**',
    ]);
    // Snippets need no activation: they are contributed for the same languages.
    assert.deepEqual(manifest.contributes.snippets.map((s) => s.language).sort(), ['typescript', 'typescriptreact']);
  });

  it('tells a source that imports rollout-studio from one that does not', () => {
    for (const text of [
      "import { defineConfig } from 'rollout-studio';",
      'import { Tool } from "rollout-studio/tools";',
      "export * from 'rollout-studio';",
      "const rs = require('rollout-studio');",
      "const rs = await import('rollout-studio');",
      "import 'rollout-studio';",
    ])
      assert.equal(importsRolloutStudio(text), true, text);
    for (const text of [
      "import { defineConfig } from 'vite';",
      "import { x } from 'rollout-studio-extras';",
      '// rollout-studio is not imported here',
      "const name = 'rollout-studio';",
    ])
      assert.equal(importsRolloutStudio(text), false, text);
  });

  it('a workspace is a Rollout Studio workspace by its runs folder, its .rollout/ folder or an open source', () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-workspace-'));
    const runsRoot = path.join(folder, 'runs-elsewhere');
    const view = { runsRoots: [runsRoot], folders: [folder], openSources: ["import { z } from 'zod';"] };
    assert.equal(isRolloutWorkspace(view), false, 'a plain TypeScript workspace');
    assert.equal(isRolloutWorkspace({ ...view, openSources: ["import { Tool } from 'rollout-studio';"] }), true);
    fs.mkdirSync(runsRoot);
    assert.equal(isRolloutWorkspace(view), true, 'a runs folder (setting rolloutStudio.runs.directory)');
    fs.rmdirSync(runsRoot);
    fs.mkdirSync(path.join(folder, '.rollout'));
    assert.equal(isRolloutWorkspace(view), true, 'a .rollout/ folder');
    fs.rmSync(folder, { recursive: true });
  });

  it('the runs part starts once, whoever opens it first', () => {
    let starts = 0;
    const part = new StartOnce(() => starts++);
    assert.equal(part.started, false);
    part.open();
    part.open();
    assert.equal(starts, 1);
    assert.equal(part.started, true);
  });

  it('the first listing of the runs names the newest run quietly, and keeps a run a training started', () => {
    const run = (id: string, createdAt: string) => ({
      dir: `/runs/${id}`,
      id,
      name: id,
      createdAt,
      status: 'finished',
    });
    const newest = new NewestRun();
    const told: string[] = [];
    newest.onChange((r) => told.push(r.id));
    newest.seed([run('b', '2026-01-02'), run('a', '2026-01-01')]);
    assert.equal(newest.run?.id, 'b');
    assert.deepEqual(told, [], 'nobody is told: restored panels keep what they show');

    const training = new NewestRun();
    training.started({ dir: '/runs/live', id: 'live', name: 'live', createdAt: '2025-12-31' });
    training.seed([run('b', '2026-01-02')]);
    assert.equal(training.run?.id, 'live');
  });
});
