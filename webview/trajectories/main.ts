import { panelApp } from '../panelApp';
import {
  TrajectoriesPanelState,
  TrajectoriesToWebview,
  type BranchSummary,
  type RunSummary,
  type ShownSet,
  type SortOrder,
  type StepSelection,
  type TokenColouring,
  type TrajectoriesToHost,
  type TrajectoryColumn,
  type TrajectoryFilters,
  type TrajectoryRecord,
  type TrajectoryRow,
} from '../../trainer/contract/protocol';
import { h } from '../dom';
import { noticeArea } from '../notices';
import { runFollowBar } from '../runFollowBar';
import { COLUMNS } from './columns';
import { trajectoryDetail } from './detail';
import { filtersBar } from './filtersBar';
import { DEFAULT_SORT, NO_FILTERS, toggleSort, toolNames, visibleRows } from './rows';
import { evaluationLabel, stepBar } from './stepBar';
import { VirtualTable } from './virtualTable';
import './trajectories.css';

const app = panelApp<TrajectoriesPanelState, TrajectoriesToHost>(TrajectoriesPanelState);
const { post, restored } = app;

/** Everything the panel shows; the host owns the run, this owns how it is looked at. */
const model = {
  run: undefined as RunSummary | undefined,
  /** The host says whether the panel follows the newest run; kept for a reload. */
  followsNewest: restored ? restored.followsNewest : false,
  steps: [] as number[],
  evaluations: [] as number[],
  selection: (restored ? restored.step : 'follow') as StepSelection,
  /** The training step or evaluation whose rows the table holds. */
  shown: undefined as ShownSet | undefined,
  rows: [] as TrajectoryRow[],
  filters: (restored ? restored.filters : NO_FILTERS) as TrajectoryFilters,
  sort: (restored ? restored.sort : DEFAULT_SORT) as SortOrder,
  selected: (restored ? restored.selected : null) as number | null,
  colourBy: (restored ? restored.colourBy : 'advantage') as TokenColouring,
  detail: undefined as TrajectoryRecord | undefined,
  /** URIs of the detail's images by sha256 (from the host). */
  imageUris: {} as Record<string, string>,
  branches: [] as BranchSummary[],
  /** Whether the workspace's code may run; Re-roll… is offered only then. False until the host says (fail closed). */
  trusted: false,
  /** Until the first rows arrive, a restored selection is kept for the restored step. */
  restoring: restored !== undefined,
};

function saveState(): void {
  if (!model.run) return;
  app.save({
    runDir: model.run.dir,
    followsNewest: model.followsNewest,
    step: model.selection,
    filters: model.filters,
    sort: model.sort,
    selected: model.selected,
    colourBy: model.colourBy,
  });
}

const root = document.getElementById('app')!;
const title = h('h1', { id: 'run-title' }, 'Trajectories');
const status = h('span', { class: 'run-status', id: 'run-status' });
const notices = noticeArea();
const following = runFollowBar((follow) => post({ type: 'followNewestRun', follow }));
const steps = stepBar((selection) => {
  model.selection = selection;
  post({ type: 'showStep', step: selection });
  steps.update(model.steps, model.evaluations, model.selection, model.shown);
  saveState();
});
const filters = filtersBar(model.filters, (next) => {
  model.filters = next;
  refreshTable();
  saveState();
});
const table = new VirtualTable<TrajectoryRow, TrajectoryColumn>({
  columns: COLUMNS,
  rowHeight: 24,
  keyOf: (row) => row.index,
  onSelect: (row) => select(row.index),
  onSort: (column) => {
    model.sort = toggleSort(model.sort, column);
    table.setHeader(model.sort.column, model.sort.direction);
    refreshTable();
    saveState();
  },
});
const empty = h('p', { class: 'empty', id: 'empty' });
const detail = h('aside', { class: 'detail-pane', id: 'detail', 'aria-label': 'Trajectory detail' });
root.classList.add('trajectories');
root.append(
  h('header', { class: 'run-header' }, title, status, following.element),
  notices.element,
  steps.element,
  filters.element,
  h('div', { class: 'split' }, h('div', { class: 'table-pane' }, table.element, empty), detail),
);
table.setHeader(model.sort.column, model.sort.direction);

function refreshTable(): void {
  const shown = visibleRows(model.rows, model.filters, model.sort);
  table.setRows(shown);
  filters.setCount(shown.length, model.rows.length);
  filters.setTools(toolNames(model.rows));
  const what = model.shown?.set === 'eval' ? evaluationLabel(model.shown.step) : `Step ${model.shown?.step}`;
  empty.textContent =
    model.shown === undefined
      ? typeof model.selection === 'object'
        ? `${evaluationLabel(model.selection.evaluation)}: not recorded (yet).`
        : 'No trajectories yet: this run has not finished a rollout.'
      : model.rows.length === 0
        ? `${what} has no trajectories yet.`
        : shown.length === 0
          ? 'No trajectory matches the filters.'
          : '';
  empty.hidden = empty.textContent === '';
}

function select(index: number | null): void {
  model.selected = index;
  model.detail = undefined;
  table.select(index ?? undefined, true);
  renderDetail();
  if (index !== null && model.shown !== undefined)
    post({ type: 'openTrajectory', set: model.shown.set, step: model.shown.step, index });
  saveState();
}

function renderDetail(): void {
  root.classList.toggle('with-detail', model.selected !== null);
  if (model.selected === null) {
    detail.replaceChildren();
    return;
  }
  if (!model.detail) {
    detail.replaceChildren(h('p', { class: 'muted' }, `Loading trajectory ${model.selected}…`));
    return;
  }
  detail.replaceChildren(
    trajectoryDetail(
      model.detail,
      model.colourBy,
      model.imageUris,
      {
        openInDebugger: (step, index) => post({ type: 'openInDebugger', step, index }),
        // Restricted Mode: no Re-roll… (it runs the run's config); the host refuses it too.
        ...(model.trusted ? { reroll: (step: number, index: number) => post({ type: 'reroll', step, index }) } : {}),
        showBranch: (id, branch) => post({ type: 'showBranch', id, branch }),
        replayBranch: (id) => post({ type: 'replayBranch', id }),
        colourBy: (by) => {
          model.colourBy = by;
          renderDetail();
          saveState();
        },
        close: () => select(null),
      },
      model.run?.metric,
      model.shown?.set === 'eval',
      model.branches,
    ),
  );
}

function onRows(shown: ShownSet, rows: readonly TrajectoryRow[], reset: boolean): void {
  const same = model.shown?.set === shown.set && model.shown.step === shown.step;
  if (reset) {
    const stepChanged = !same;
    model.shown = shown;
    model.rows = [...rows];
    if (stepChanged && !model.restoring && model.selected !== null) {
      model.selected = null;
      model.detail = undefined;
      table.select(undefined);
      renderDetail();
    }
    if (model.restoring && model.selected !== null) select(model.selected);
    model.restoring = false;
    steps.update(model.steps, model.evaluations, model.selection, model.shown);
  } else if (same) {
    for (const row of rows) model.rows.push(row);
  }
  refreshTable();
}

function render(message: TrajectoriesToWebview): void {
  switch (message.type) {
    case 'run':
      // Another run in this panel (it follows the newest run): nothing of the last one stays shown.
      if (model.run && model.run.dir !== message.run.dir) forgetRun();
      model.run = message.run;
      model.steps = message.steps;
      model.evaluations = message.evaluations;
      title.textContent = `Trajectories · ${message.run.name}`;
      title.title = message.run.dir;
      status.textContent = message.run.status;
      status.dataset.status = message.run.status;
      steps.update(model.steps, model.evaluations, model.selection, model.shown);
      saveState();
      break;
    case 'rows':
      model.selection = message.selection;
      onRows({ set: message.set, step: message.step }, message.rows, message.reset);
      saveState();
      break;
    case 'noSteps':
      model.selection = message.selection;
      model.shown = undefined;
      model.rows = [];
      model.restoring = false;
      steps.update(model.steps, model.evaluations, model.selection, undefined);
      refreshTable();
      break;
    case 'trajectory':
      if (
        message.set === model.shown?.set &&
        message.record.step === model.shown.step &&
        message.record.index === model.selected
      ) {
        model.detail = message.record;
        model.imageUris = message.imageUris ?? {};
        model.branches = message.branches;
        renderDetail();
      }
      break;
    case 'branchesChanged':
      if (model.shown?.set === 'train' && model.shown.step === message.step && model.selected === message.index)
        post({ type: 'openTrajectory', set: 'train', step: message.step, index: message.index });
      break;
    case 'notice':
      notices.show(message.level, message.message);
      break;
    case 'following':
      model.followsNewest = message.following.followsNewest;
      following.update(message.following);
      saveState();
      break;
    case 'trust':
      model.trusted = message.trusted;
      renderDetail();
      break;
  }
}

function forgetRun(): void {
  model.shown = undefined;
  model.rows = [];
  model.selected = null;
  model.detail = undefined;
  model.restoring = false;
  table.select(undefined);
  renderDetail();
  refreshTable();
}

refreshTable();
app.listen(TrajectoriesToWebview, render, (error) => notices.show('error', String(error)));
