/**
 * Which run a panel shows: NewestRun (the run that panels following "the newest run" show) and
 * RunFollowing (a panel that follows it, or one pinned to its own run that says so), and the
 * controllers' side of moving a panel to another run.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MetricsController } from '../../../extension/panels/metricsController';
import { NewestRun, type ListedRun } from '../../../extension/panels/newestRun';
import { RunFollowing } from '../../../extension/panels/runFollowing';
import { RunSources } from '../../../extension/panels/source/registry';
import { RunDirectorySource } from '../../../extension/panels/source/runDirectorySource';
import { runSummaryOf } from '../../../extension/panels/source/summarize';
import { TrajectoriesController } from '../../../extension/panels/trajectoriesController';
import {
  MetricsToWebview,
  TrajectoriesToWebview,
  type RunFollowingState,
  type RunRef,
} from '#trainer/contract/protocol';
import { listRuns } from '#trainer/contract/runstore';
import { writeRecordedRun } from '../../fixtures/recordedRun';

/** Run directories on disk (NewestRun checks that its run still exists). */
function runsFolder(): { root: string; run(name: string, createdAt: string, status?: string): ListedRun } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'newest-run-'));
  return {
    root,
    run(name, createdAt, status = 'finished') {
      const dir = path.join(root, name);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'run.json'), '{}');
      return { dir, id: name, name: `run ${name}`, createdAt, status };
    },
  };
}

describe('NewestRun', () => {
  it('starts at the folder’s newest run without telling anyone; a training started here is the newest, whatever its age', () => {
    const folder = runsFolder();
    const old = folder.run('old', '2026-01-01T00:00:00Z');
    const resumed = folder.run('resumed', '2025-06-01T00:00:00Z');
    const newest = new NewestRun([old, resumed]);
    const told: string[] = [];
    newest.onChange((run) => told.push(run.id));
    assert.equal(newest.run?.dir, old.dir);
    newest.started(resumed);
    assert.deepEqual(told, ['resumed'], 'a resumed run keeps its creation time and still becomes the newest');
    newest.started(resumed);
    assert.deepEqual(told, ['resumed'], 'the same run again tells no one');
    assert.equal(newest.run?.dir, resumed.dir);
  });

  it('a running run listed with a later creation time (a terminal’s training) becomes the newest; older or finished ones do not', () => {
    const folder = runsFolder();
    const first = folder.run('first', '2026-01-01T00:00:00Z');
    const newest = new NewestRun([first]);
    const told: string[] = [];
    newest.onChange((run) => told.push(run.id));
    newest.listed([folder.run('done', '2026-02-01T00:00:00Z', 'finished'), first]);
    newest.listed([first, folder.run('stale', '2025-01-01T00:00:00Z', 'running')]);
    assert.deepEqual(told, [], 'a finished run, or a "running" run older than the newest, is not a run that started');
    const terminal = folder.run('terminal', '2026-03-01T00:00:00Z', 'running');
    newest.listed([terminal, first]);
    newest.listed([terminal, first]);
    assert.deepEqual(told, ['terminal']);
  });

  it('gives way quietly when its run is deleted', () => {
    const folder = runsFolder();
    const gone = folder.run('gone', '2026-05-01T00:00:00Z');
    const other = folder.run('other', '2026-01-01T00:00:00Z');
    const newest = new NewestRun([gone, other]);
    const told: string[] = [];
    newest.onChange((run) => told.push(run.id));
    fs.rmSync(gone.dir, { recursive: true });
    newest.listed([other]);
    assert.equal(newest.run?.dir, other.dir);
    assert.deepEqual(told, []);
  });
});

/** A panel's side of RunFollowing: the run it shows, what it told its webview. */
function panel(dir: string, follows: boolean, newest: () => RunRef | undefined, refuse = new Set<string>()) {
  const shown = { dir };
  const posted: RunFollowingState[] = [];
  const following = new RunFollowing(follows, {
    dir: () => shown.dir,
    showRun: (next) => {
      if (refuse.has(next)) return false;
      shown.dir = next;
      return true;
    },
    newest,
    post: (state) => posted.push(state),
  });
  return { shown, posted, following };
}

describe('RunFollowing', () => {
  const a: RunRef = { dir: path.resolve('/runs/a'), id: 'a', name: 'first' };
  const b: RunRef = { dir: path.resolve('/runs/b'), id: 'b', name: 'second' };

  it('a panel that follows the newest run moves to a run that starts', () => {
    const p = panel(a.dir, true, () => b);
    p.following.announce();
    p.following.newestChanged(b);
    assert.equal(p.shown.dir, b.dir);
    assert.deepEqual(p.posted, [{ followsNewest: true }, { followsNewest: true }]);
  });

  it('a pinned panel stays on its run and names the run that started since', () => {
    const p = panel(a.dir, false, () => b);
    p.following.newestChanged(b);
    assert.equal(p.shown.dir, a.dir);
    assert.deepEqual(p.posted.at(-1), { followsNewest: false, newer: b });
    // Ticking "Follow newest run" shows the newest run at once; unticking stays there, pinned.
    p.following.setFollowsNewest(true);
    assert.equal(p.shown.dir, b.dir);
    assert.deepEqual(p.posted.at(-1), { followsNewest: true });
    p.following.setFollowsNewest(false);
    assert.equal(p.shown.dir, b.dir);
    assert.deepEqual(p.posted.at(-1), { followsNewest: false });
  });

  it('a run that cannot be shown leaves the panel where it is, saying which run it does not show', () => {
    const p = panel(a.dir, true, () => b, new Set([b.dir]));
    p.following.newestChanged(b);
    assert.equal(p.shown.dir, a.dir);
    assert.deepEqual(p.posted.at(-1), { followsNewest: true, newer: b });
    const pinned = panel(a.dir, false, () => b, new Set([b.dir]));
    pinned.following.setFollowsNewest(true);
    assert.deepEqual(pinned.posted.at(-1), { followsNewest: false }, 'following a run that cannot be shown is refused');
  });
});

describe('moving a panel’s controller to another run', () => {
  function twoRuns() {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'follow-ctl-'));
    const a = writeRecordedRun(path.join(root, 'run-a'), { steps: 2, batch: 4, groupSize: 2, seed: 1 });
    const b = writeRecordedRun(path.join(root, 'run-b'), {
      steps: 3,
      batch: 4,
      groupSize: 2,
      seed: 2,
      status: 'running',
    });
    const sources = new RunSources((dir) => new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false }));
    return { root, a, b, sources };
  }

  it('Trajectories: the webview’s "Follow newest run" reaches the panel, and a new controller started on a running page sends the new run and its newest step', () => {
    const { a, b, sources } = twoRuns();
    const posted: TrajectoriesToWebview[] = [];
    const follows: boolean[] = [];
    const actions = { openInDebugger: async () => {}, followNewestRun: (follow: boolean) => follows.push(follow) };
    const first = new TrajectoriesController(
      sources.acquire(a).source,
      (m) => posted.push(TrajectoriesToWebview.parse(m)),
      actions,
    );
    assert.equal(first.isReady, false);
    first.receive({ type: 'ready' });
    first.receive({ type: 'followNewestRun', follow: true });
    assert.deepEqual(follows, [true]);
    assert.equal(first.isReady, true);
    first.dispose();
    posted.length = 0;
    const second = new TrajectoriesController(
      sources.acquire(b).source,
      (m) => posted.push(TrajectoriesToWebview.parse(m)),
      actions,
    );
    second.start();
    assert.equal(posted[0].type === 'run' && posted[0].run.dir, b);
    const rows = posted.find((m) => m.type === 'rows');
    assert.equal(rows?.type === 'rows' && rows.step, 3, 'the new run’s newest step');
    assert.equal(rows?.type === 'rows' && rows.reset, true);
    second.dispose();
  });

  it('Metrics: the panel’s own run is replaced, the runs overlaid stay, and the new run’s metrics are sent', () => {
    const { root, a, b, sources } = twoRuns();
    const c = writeRecordedRun(path.join(root, 'run-c'), { steps: 1, batch: 4, groupSize: 2, seed: 3 });
    const posted: MetricsToWebview[] = [];
    const follows: boolean[] = [];
    const controller = new MetricsController(
      {
        acquire: (dir) => sources.acquire(dir),
        availableRuns: () => listRuns(root).map((r) => runSummaryOf(r.dir, r.run!)),
        saveCsv: async () => undefined,
        followNewestRun: (follow) => follows.push(follow),
      },
      (m) => posted.push(MetricsToWebview.parse(m)),
      [a, c],
    );
    controller.replaceOwnRun(b);
    assert.deepEqual(controller.runDirs, [b, c], 'before the page runs, only the runs to show change');
    assert.equal(posted.length, 0);
    controller.receive({ type: 'ready' });
    controller.replaceOwnRun(a);
    assert.deepEqual(controller.runDirs, [a, c]);
    const runs = posted.filter((m) => m.type === 'runs').at(-1);
    assert.deepEqual(runs?.type === 'runs' && runs.shown, [a, c]);
    const lastMetrics = posted.filter((m) => m.type === 'metrics').at(-1);
    assert.equal(lastMetrics?.type === 'metrics' && lastMetrics.runDir, a);
    assert.equal(lastMetrics?.type === 'metrics' && lastMetrics.reset, true);
    assert.throws(() => controller.replaceOwnRun(path.join(root, 'missing')), /run\.json/);
    assert.deepEqual(controller.runDirs, [a, c], 'a run that cannot be read changes nothing');
    controller.receive({ type: 'followNewestRun', follow: false });
    assert.deepEqual(follows, [false]);
    controller.dispose();
    assert.equal(sources.size, 0, 'every run source was let go');
  });
});
