import type { RunSummary } from '../../trainer/contract/protocol';
import { button } from '../components/toolkit';
import { h } from '../dom';
import { formatMetricValue } from '../numberFormat';
import type { RunMetrics } from './store';
import { entrySteps, warningEntries, type WarningEntry } from './warningEntries';

/** Lines shown before "Show N more": the newest findings matter, a long run's history can wait. */
const SHOWN_AT_FIRST = 5;

export interface HealthStrip {
  element: HTMLElement;
  /** Show the panel's own run (its summary for `best`, its rows for the warnings). */
  update(run: RunMetrics | undefined): void;
}

/** "Best evaluation: step 24, exact_match 0.610 — checkpoints/best". */
export function bestText(best: NonNullable<RunSummary['best']>): string {
  return `Best evaluation: step ${best.step}, ${best.metric} ${formatMetricValue(best.value)}${best.checkpoint ? ` — ${best.checkpoint}` : ''}`;
}

/**
 * "Is it learning?" above the health charts: the best held-out evaluation and the checkpoint
 * that keeps it, and what the trainer's health checks found, newest first, each in plain words
 * with the step, what to try and what the trainer did, coloured by severity.
 */
export function healthStrip(): HealthStrip {
  const best = h('p', { class: 'best-eval', id: 'best-eval', hidden: '' });
  const heading = h('p', { class: 'warnings-heading', id: 'warnings-heading' });
  const list = h('ul', { class: 'warnings', id: 'warnings', 'aria-label': 'Health warnings, newest first' });
  let expanded = false;
  let last: RunMetrics | undefined;
  const more = button(
    '',
    () => {
      expanded = !expanded;
      render(last);
    },
    'secondary',
  );
  more.id = 'warnings-more';
  const element = h(
    'div',
    { class: 'health-strip', id: 'health-strip', role: 'status', 'aria-live': 'polite' },
    best,
    heading,
    list,
    more,
  );

  function render(run: RunMetrics | undefined): void {
    last = run;
    const summary = run?.run.best;
    best.hidden = !summary;
    best.textContent = summary ? bestText(summary) : '';
    const entries = run ? warningEntries(run) : [];
    const checked = run !== undefined && [...run.values.keys()].some((name) => name.startsWith('health/'));
    heading.textContent = entries.length ? headingText(entries) : checked ? 'No health warnings so far.' : '';
    heading.hidden = heading.textContent === '';
    const shown = expanded ? entries : entries.slice(0, SHOWN_AT_FIRST);
    list.replaceChildren(...shown.map(warningItem));
    list.hidden = entries.length === 0;
    more.hidden = entries.length <= SHOWN_AT_FIRST;
    more.textContent = expanded ? 'Show fewer' : `Show ${entries.length - SHOWN_AT_FIRST} older`;
  }

  return { element, update: render };
}

function headingText(entries: readonly WarningEntry[]): string {
  const critical = entries.filter((e) => e.severity === 'critical').length;
  return `Health warnings, newest first${critical ? ` · ${critical} critical` : ''}`;
}

function warningItem(entry: WarningEntry): HTMLElement {
  const { warning } = entry;
  return h(
    'li',
    {
      class: `warning ${entry.severity}`,
      'data-code': entry.code,
      'data-severity': entry.severity,
      'data-step': String(entry.lastStep),
    },
    h(
      'div',
      { class: 'warning-title' },
      h('span', { class: 'severity' }, entry.severity === 'critical' ? 'critical' : 'warning'),
      h('span', { class: 'warning-step' }, entrySteps(entry)),
      h('span', { class: 'warning-message' }, warning.message),
    ),
    h('div', { class: 'warning-advice' }, h('span', { class: 'label' }, 'Try: '), warning.advice),
    warning.action
      ? h('div', { class: 'warning-action' }, h('span', { class: 'label' }, 'Done: '), warning.action)
      : undefined,
  );
}
