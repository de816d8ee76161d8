import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type * as vscode from 'vscode';
import { loadWebview } from '../../../extension/panels/loadWebview';

/** The parts of a WebviewPanel loadWebview touches; the test says when the page speaks. */
function fakePanel() {
  const messageListeners = new Set<() => void>();
  const disposeListeners = new Set<() => void>();
  const viewStateListeners = new Set<(e: { webviewPanel: { visible: boolean } }) => void>();
  const loads: string[] = [];
  const panel = {
    title: 'Metrics · run',
    visible: true,
    webview: {
      set html(value: string) {
        loads.push(value);
      },
      onDidReceiveMessage: (listener: () => void) => (
        messageListeners.add(listener),
        { dispose: () => messageListeners.delete(listener) }
      ),
    },
    onDidDispose: (listener: () => void) => (
      disposeListeners.add(listener),
      { dispose: () => disposeListeners.delete(listener) }
    ),
    onDidChangeViewState: (listener: (e: { webviewPanel: { visible: boolean } }) => void) => (
      viewStateListeners.add(listener),
      { dispose: () => viewStateListeners.delete(listener) }
    ),
  };
  return {
    panel: panel as unknown as vscode.WebviewPanel,
    state: panel,
    loads,
    speak: () => [...messageListeners].forEach((l) => l()),
    dispose: () => [...disposeListeners].forEach((l) => l()),
    listening: () => messageListeners.size + viewStateListeners.size,
    show: () => {
      panel.visible = true;
      [...viewStateListeners].forEach((l) => l({ webviewPanel: panel }));
    },
  };
}

describe('loadWebview', () => {
  it('loads once and never again when the page says ready in time', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakePanel();
    loadWebview(
      fake.panel,
      () => 'page',
      () => {},
    );
    t.mock.timers.tick(2000);
    fake.speak();
    t.mock.timers.tick(60_000);
    assert.equal(fake.loads.length, 1);
    assert.equal(fake.listening(), 0, 'stops listening once heard');
  });

  it('reloads a silent page with doubling patience, then at the capped pace for as long as it stays silent', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakePanel();
    const log: string[] = [];
    loadWebview(
      fake.panel,
      () => `page ${fake.loads.length}`,
      (line) => log.push(line),
      { firstWaitMs: 1000, maxWaitMs: 4000 },
    );
    const loadsAt = (ms: number) => (t.mock.timers.tick(ms), fake.loads.length);
    assert.equal(fake.loads.length, 1);
    assert.equal(loadsAt(999), 1);
    assert.equal(loadsAt(1), 2); // after 1 s
    assert.equal(loadsAt(1999), 2);
    assert.equal(loadsAt(1), 3); // 2 s later
    assert.equal(loadsAt(4000), 4); // 4 s later: the cap
    assert.equal(loadsAt(4000), 5); // and at the cap from then on
    for (let k = 0; k < 10; k++) loadsAt(4000);
    assert.equal(fake.loads.length, 15);
    assert.match(log[0], /Metrics · run: the page did not start within 1000 ms/);
    assert.match(log[2], /within 4000 ms/);
    fake.speak();
    for (let k = 0; k < 10; k++) loadsAt(4000);
    assert.equal(fake.loads.length, 15, 'a page that speaks is left alone');
  });

  it('does not reload while the panel is hidden, checks soon after it is shown, and stops when it is closed', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakePanel();
    fake.state.visible = false;
    loadWebview(
      fake.panel,
      () => 'page',
      () => {},
      { firstWaitMs: 1000, maxWaitMs: 4000 },
    );
    t.mock.timers.tick(10_000);
    assert.equal(fake.loads.length, 1, 'a hidden webview loads when shown; no reload meanwhile');
    fake.show();
    t.mock.timers.tick(999);
    assert.equal(fake.loads.length, 1, 'shown: the page gets the first patience again');
    t.mock.timers.tick(1);
    assert.equal(fake.loads.length, 2);
    fake.dispose();
    t.mock.timers.tick(100_000);
    assert.equal(fake.loads.length, 2);
    assert.equal(fake.listening(), 0);
  });

  it('recreates the panel (a new frame) when reloads did not help, and then leaves it to the new panel', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const fake = fakePanel();
    const log: string[] = [];
    let recreated = 0;
    loadWebview(
      fake.panel,
      () => 'page',
      (line) => log.push(line),
      { firstWaitMs: 1000, maxWaitMs: 4000, reloadsBeforeRecreate: 2, recreate: () => recreated++ },
    );
    t.mock.timers.tick(1000);
    t.mock.timers.tick(2000); // two reloads
    assert.deepEqual([fake.loads.length, recreated], [3, 0]);
    t.mock.timers.tick(3999);
    assert.equal(recreated, 0);
    t.mock.timers.tick(1);
    assert.deepEqual([fake.loads.length, recreated], [3, 1], 'the third check recreates instead of reloading');
    assert.match(
      log.at(-1)!,
      /Metrics · run: the page did not start after 2 reloads; opening the panel again in a new frame/,
    );
    assert.equal(fake.listening(), 0, 'the old panel is left alone');
    t.mock.timers.tick(100_000);
    assert.deepEqual([fake.loads.length, recreated], [3, 1]);
  });

  it('says when the page has started, and settles too when the panel is closed first', async () => {
    const speaking = fakePanel();
    let started = false;
    void loadWebview(
      speaking.panel,
      () => 'page',
      () => {},
    ).then(() => (started = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(started, false, 'not before the page speaks');
    speaking.speak();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(started, true);

    const closed = fakePanel();
    const settled = loadWebview(
      closed.panel,
      () => 'page',
      () => {},
    );
    closed.dispose();
    await settled; // would hang (and time the test out) if a closed panel never settled
  });
});
