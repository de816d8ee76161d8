import { panelApp } from '../panelApp';
import {
  EnvironmentPanelToWebview,
  type EnvironmentReport,
  type EnvironmentWebviewToPanel,
  type ProviderCheck,
} from '../../trainer/contract/protocol';
import { button, divider, progressRing, tag } from '../components/toolkit';
import { h } from '../dom';
import './environment.css';

const app = panelApp<never, EnvironmentWebviewToPanel>();
const root = document.getElementById('app')!;

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

function toolbar(): HTMLElement {
  return h(
    'div',
    { class: 'toolbar' },
    button('Check Again', () => app.post({ type: 'recheck' })),
    button('Copy as JSON', () => app.post({ type: 'copyJson' }), 'secondary'),
  );
}

function providerCard(check: ProviderCheck): HTMLElement {
  const state = check.available ? 'available' : 'unavailable';
  const details: HTMLElement[] = [];
  if (check.adapter) {
    const a = check.adapter;
    details.push(
      h(
        'dl',
        { class: 'adapter' },
        h('dt', {}, 'Adapter'),
        h('dd', { class: 'adapter-device' }, [a.vendor, a.architecture, a.device].filter(Boolean).join(' · ')),
        h('dt', {}, 'Description'),
        h('dd', {}, a.description || '—'),
      ),
    );
  }
  if (check.available && check.maxAbsError !== undefined) {
    details.push(
      h(
        'p',
        { class: 'accuracy' },
        `Check graph matches the float64 reference to ${check.maxAbsError.toExponential(1)}.`,
      ),
    );
  }
  if (check.nvidiaDriver) details.push(h('p', {}, `NVIDIA driver ${check.nvidiaDriver}`));
  if (check.providerLibrary) {
    const library = check.providerLibrary;
    details.push(
      h(
        'p',
        { class: 'library' },
        library.installed
          ? 'Provider library installed: '
          : `Provider library not installed (missing ${(library.missing ?? []).join(', ') || 'it'}): `,
        h('code', {}, library.path),
      ),
    );
  }
  if (!check.available && check.reason) details.push(h('p', { class: 'reason' }, check.reason));
  if (check.error) details.push(h('pre', { class: 'error' }, check.error));
  const timing =
    check.available && check.elapsedMs !== undefined ? `checked in ${Math.round(check.elapsedMs)} ms` : undefined;
  return h(
    'section',
    { class: `provider ${state}`, 'data-provider': check.name },
    h(
      'header',
      {},
      h('h2', {}, check.name.toUpperCase()),
      h('span', { class: 'state' }, state),
      timing && h('span', { class: 'timing' }, timing),
    ),
    ...details,
  );
}

function renderReport(report: EnvironmentReport): void {
  const r = report.runtime;
  const runtimeRows: Array<[string, string]> = [
    ['Runtime', `Node ${r.node}${r.electron ? ` (Electron ${r.electron})` : ''} on ${r.platform}-${r.arch}`],
    ['CPU', `${r.cpuModel}, ${r.cpuCount} cores`],
    ['Memory', `${gib(r.totalMemoryBytes)} total, ${gib(r.freeMemoryBytes)} free`],
    ...(r.allocator ? [['Allocator', r.allocator] as [string, string]] : []),
    [
      'onnxruntime',
      report.onnxruntime.version
        ? `onnxruntime-node ${report.onnxruntime.version}`
        : `not loaded: ${report.onnxruntime.loadError}`,
    ],
    ...(report.onnxruntime.telemetry
      ? [["onnxruntime's telemetry", report.onnxruntime.telemetry] as [string, string]]
      : []),
  ];
  const available = [report.providers.cpu, report.providers.webgpu, report.providers.cuda]
    .filter((p) => p.available)
    .map((p) => p.name);
  root.replaceChildren(
    h('h1', {}, 'Rollout Studio environment'),
    h(
      'p',
      { id: 'status', class: 'summary' },
      `Training can run on: ${available.length ? available.join(', ') : 'nothing — see below'}`,
      ' ',
      ...available.map((name) => tag(name)),
    ),
    toolbar(),
    divider(),
    h('table', { class: 'runtime' }, ...runtimeRows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v)))),
    h(
      'div',
      { class: 'providers' },
      providerCard(report.providers.cpu),
      providerCard(report.providers.webgpu),
      providerCard(report.providers.cuda),
    ),
    h('p', { class: 'generated' }, `Checked ${new Date(report.generatedAt).toLocaleString()}`),
  );
}

function render(message: EnvironmentPanelToWebview): void {
  switch (message.type) {
    case 'checking':
      root.replaceChildren(
        h('h1', {}, 'Rollout Studio environment'),
        h(
          'p',
          { id: 'status', class: 'checking' },
          progressRing(),
          'Checking the runtime and each execution provider…',
        ),
      );
      break;
    case 'report':
      renderReport(message.report);
      break;
    case 'failed':
      root.replaceChildren(
        h('h1', {}, 'Rollout Studio environment'),
        h('p', { id: 'status', class: 'failed' }, message.title),
        h('pre', { class: 'error' }, message.detail),
        toolbar(),
      );
      break;
  }
}

app.listen(EnvironmentPanelToWebview, render, (error) =>
  root.replaceChildren(h('p', { id: 'status', class: 'failed' }, String(error))),
);
