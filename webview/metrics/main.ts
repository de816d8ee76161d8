import { panelApp } from '../panelApp';
import {
  MetricsPanelState,
  MetricsToWebview,
  type BandMode,
  type MetricsToHost,
  type RunSummary,
} from '../../trainer/contract/protocol';
import { button, dropdown } from '../components/toolkit';
import { h } from '../dom';
import { noticeArea } from '../notices';
import { runFollowBar } from '../runFollowBar';
import { MetricsChart } from './chart';
import { chartData } from './chartData';
import { metricsCsv } from './csv';
import { groupMetrics, type ChartSection } from './groups';
import { healthStrip } from './healthStrip';
import { runPicker } from './runPicker';
import { ScoreVsToolsChart } from './scoreVsTools';
import { RunMetrics } from './store';
import { onThemeChange, readTheme, type ChartTheme } from './theme';
import 'uplot/dist/uPlot.min.css';
import './metrics.css';

const app = panelApp<MetricsPanelState, MetricsToHost>(MetricsPanelState);
const { post, restored } = app;

const model = {
  runDirs: restored ? restored.runDirs : ([] as string[]),
  followsNewest: restored ? restored.followsNewest : false,
  smoothing: restored ? restored.smoothing : 0,
  band: (restored ? restored.band : 'minmax') as BandMode,
  available: [] as RunSummary[],
  runs: new Map<string, RunMetrics>(),
};
let theme: ChartTheme = readTheme();
const charts = new Map<string, MetricsChart>();
let scoreVsTools: ScoreVsToolsChart | undefined;

function saveState(): void {
  if (model.runDirs.length)
    app.save({
      runDirs: model.runDirs,
      followsNewest: model.followsNewest,
      smoothing: model.smoothing,
      band: model.band,
    });
}

const root = document.getElementById('app')!;
root.classList.add('metrics');
const title = h('h1', { id: 'run-title' }, 'Metrics');
const status = h('span', { class: 'run-status', id: 'run-status' });
const notices = noticeArea();
const following = runFollowBar((follow) => post({ type: 'followNewestRun', follow }));
const picker = runPicker((runDirs) => {
  model.runDirs = runDirs;
  post({ type: 'showRuns', runDirs });
  saveState();
});
const smoothingValue = h('span', { class: 'smoothing-value', id: 'smoothing-value' });
const smoothing = h('input', {
  type: 'range',
  id: 'smoothing',
  min: '0',
  max: '0.99',
  step: '0.01',
  'aria-label': 'Smoothing (EMA weight)',
});
smoothing.value = String(model.smoothing);
smoothing.addEventListener('input', () => {
  model.smoothing = Number(smoothing.value);
  showSmoothing();
  schedule();
  saveState();
});
const showSmoothing = () => (smoothingValue.textContent = model.smoothing > 0 ? model.smoothing.toFixed(2) : 'off');
showSmoothing();
const band = dropdown({
  id: 'band',
  label: 'Reward spread',
  options: [
    { value: 'minmax', label: 'Reward band: min–max' },
    { value: 'std', label: 'Reward band: mean ± std' },
  ],
  value: model.band,
  onChange: (value) => {
    model.band = value as BandMode;
    schedule();
    saveState();
  },
});
const exportButton = button(
  'Export CSV',
  () => {
    const shown = shownRuns();
    if (!shown.length) return;
    const name = `${shown.map((r) => r.run.id).join('+')}-metrics.csv`;
    post({ type: 'exportCsv', fileName: name, csv: metricsCsv(shown, model.smoothing) });
  },
  'secondary',
);
exportButton.id = 'export-csv';
const summary = h('p', { class: 'summary muted', id: 'summary' });
const grid = h('div', { class: 'charts', id: 'charts' });
const healthGrid = h('div', { class: 'charts', id: 'health-charts' });
const health = healthStrip();
// "Is it learning?" first: the warnings, the best evaluation and the health charts; then the rest.
const healthSection = h(
  'section',
  { class: 'chart-section', id: 'health-section', 'aria-labelledby': 'health-heading' },
  h('h2', { id: 'health-heading' }, 'Is it learning?'),
  health.element,
  healthGrid,
);
const trainingSection = h(
  'section',
  { class: 'chart-section', id: 'training-section', 'aria-labelledby': 'training-heading' },
  h('h2', { id: 'training-heading' }, 'Reward, score and the rest'),
  grid,
);
const empty = h('p', { class: 'empty', id: 'empty' }, 'Waiting for metrics…');
root.append(
  h('header', { class: 'run-header' }, title, status, following.element),
  notices.element,
  h(
    'div',
    { class: 'toolbar' },
    picker.element,
    h('label', { class: 'smoothing' }, 'Smoothing ', smoothing, smoothingValue),
    band.element,
    exportButton,
  ),
  summary,
  empty,
  healthSection,
  trainingSection,
);

function shownRuns(): RunMetrics[] {
  return model.runDirs.map((dir) => model.runs.get(dir)).filter((r): r is RunMetrics => r !== undefined);
}

let frame = 0;
/** Many messages in a burst (a live run, a chunked reset) draw once, in the next frame. */
function schedule(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    renderCharts();
  });
}

function renderCharts(): void {
  const runs = shownRuns();
  const names = new Set<string>();
  for (const run of runs) for (const name of run.values.keys()) names.add(name);
  const groups = groupMetrics(names, runs[0]?.run.metric);
  const wanted = new Set(groups.map((g) => g.id));
  for (const [id, chart] of charts) {
    if (!wanted.has(id)) {
      chart.destroy();
      chart.element.remove();
      charts.delete(id);
    }
  }
  const placed: Record<ChartSection, HTMLElement[]> = { health: [], training: [] };
  for (const group of groups) {
    let chart = charts.get(group.id);
    if (!chart || JSON.stringify(chart.group) !== JSON.stringify(group)) {
      chart?.destroy();
      chart?.element.remove();
      chart = new MetricsChart(group);
      charts.set(group.id, chart);
    }
    placed[group.section].push(chart.element);
    chart.update(chartData(group, runs, { smoothing: model.smoothing, band: model.band }), theme);
    // Held-out score against tool use sits beside the score it explains.
    if (group.id === 'score') placeScoreVsTools(runs, placed.training);
  }
  if (!wanted.has('score')) placeScoreVsTools([], placed.training);
  place(healthGrid, placed.health);
  place(grid, placed.training);
  health.update(runs[0]);
  healthSection.hidden = placed.health.length === 0 && !runs[0]?.warnings.some((w) => w !== null) && !runs[0]?.run.best;
  trainingSection.hidden = placed.training.length === 0;
  renderSummary(runs);
}

function placeScoreVsTools(runs: RunMetrics[], into: HTMLElement[]): void {
  if (!ScoreVsToolsChart.wanted(runs)) {
    scoreVsTools?.destroy();
    scoreVsTools?.element.remove();
    scoreVsTools = undefined;
    return;
  }
  scoreVsTools ??= new ScoreVsToolsChart();
  into.push(scoreVsTools.element);
  scoreVsTools.update(runs, theme);
}

/** Put `elements` into `container` in this order, moving only what is out of place. */
function place(container: HTMLElement, elements: readonly HTMLElement[]): void {
  elements.forEach((element, i) => {
    if (container.children[i] !== element) container.insertBefore(element, container.children[i] ?? null);
  });
}

function renderSummary(runs: RunMetrics[]): void {
  const own = runs[0];
  empty.hidden = runs.some((r) => r.rows > 0);
  if (!own) {
    summary.textContent = '';
    return;
  }
  const train = own.kinds.filter((k) => k === 'train').length;
  const evals = own.kinds.filter((k) => k === 'eval').length;
  const skipped = own.skippedSteps();
  const parts = [
    `${train} training steps`,
    evals ? `${evals} evaluations` : '',
    own.steps.length ? `last step ${own.steps.reduce((a, b) => Math.max(a, b))}` : '',
  ];
  if (skipped.length) {
    const listed = skipped
      .slice(0, 5)
      .map((s) => `${s.step} (${s.reason})`)
      .join(', ');
    parts.push(
      `skipped updates (dashed red lines): ${listed}${skipped.length > 5 ? `, and ${skipped.length - 5} more` : ''}`,
    );
  }
  summary.textContent = parts.filter(Boolean).join(' · ');
}

function showRun(run: RunSummary): void {
  const metrics = model.runs.get(run.dir);
  if (metrics) metrics.run = run;
  if (run.dir === model.runDirs[0]) {
    title.textContent = `Metrics · ${run.name}`;
    title.title = run.dir;
    status.textContent = run.status;
    status.dataset.status = run.status;
  }
}

function render(message: MetricsToWebview): void {
  switch (message.type) {
    case 'runs':
      model.available = message.available;
      model.runDirs = message.shown;
      for (const dir of [...model.runs.keys()]) if (!message.shown.includes(dir)) model.runs.delete(dir);
      picker.update(message.available, message.shown);
      for (const run of message.available) if (message.shown.includes(run.dir)) showRun(run);
      saveState();
      schedule();
      break;
    case 'run':
      showRun(message.run);
      model.available = model.available.map((r) => (r.dir === message.run.dir ? message.run : r));
      picker.update(model.available, model.runDirs);
      schedule(); // its best evaluation may have changed
      break;
    case 'metrics': {
      let run = model.runs.get(message.runDir);
      if (!run || message.reset) {
        const summaryOfRun = model.available.find((r) => r.dir === message.runDir) ?? run?.run;
        if (!summaryOfRun) throw new Error(`metrics for ${message.runDir}, which is not a shown run`);
        run = new RunMetrics(summaryOfRun);
        model.runs.set(message.runDir, run);
      }
      run.append(message.columns);
      schedule();
      break;
    }
    case 'notice':
      notices.show(message.level, message.message);
      break;
    case 'following':
      model.followsNewest = message.following.followsNewest;
      following.update(message.following);
      saveState();
      break;
  }
}

onThemeChange(() => {
  theme = readTheme();
  schedule();
});
app.listen(MetricsToWebview, render, (error) => notices.show('error', String(error)));
