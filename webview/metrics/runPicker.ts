import type { RunSummary } from '../../trainer/contract/protocol';
import { checkbox } from '../components/toolkit';
import { h } from '../dom';

export interface RunPicker {
  element: HTMLElement;
  update(available: readonly RunSummary[], shown: readonly string[]): void;
}

/**
 * Choose runs to overlay on the panel's own run. The panel's run (the first shown) is always
 * on; ticking another run adds it after the ones already shown.
 */
export function runPicker(onChange: (runDirs: string[]) => void): RunPicker {
  const summary = h('summary', { id: 'runs-summary' }, 'Compare runs');
  const list = h('div', { class: 'run-list', id: 'run-list' });
  const element = h('details', { class: 'run-picker', id: 'run-picker' }, summary, list);
  let shown: readonly string[] = [];
  return {
    element,
    update(available, nextShown) {
      shown = nextShown;
      summary.textContent = shown.length > 1 ? `Comparing ${shown.length} runs` : 'Compare with other runs';
      list.replaceChildren(
        ...available.map((run) => {
          const own = run.dir === shown[0];
          const box = checkbox({
            label: `${run.name} — ${run.id} (${run.status}${run.lastStep !== undefined ? `, step ${run.lastStep}` : ''})`,
            checked: shown.includes(run.dir),
            onChange: (checked) => onChange(checked ? [...shown, run.dir] : shown.filter((d) => d !== run.dir)),
          });
          box.element.dataset.runDir = run.dir;
          if (own) box.element.setAttribute('disabled', '');
          return box.element;
        }),
      );
      if (available.length <= 1)
        list.append(h('p', { class: 'muted' }, 'No other runs in this workspace to compare with.'));
    },
  };
}
