import type { StepSelection } from '../../trainer/shared/protocol';
import { button, checkbox, textField } from '../components/toolkit';
import { h } from '../dom';
import { adjacentStep, nearestStep } from './rows';

export interface StepBar {
  element: HTMLElement;
  /** Show the steps that exist, what is selected and which step is on screen. */
  update(steps: readonly number[], selection: StepSelection, shown: number | undefined): void;
}

/**
 * Which step the table shows: follow the newest step as the run grows, or pin one (typing a
 * step, or the previous/next buttons, pins; ticking Follow newest follows again).
 */
export function stepBar(onSelect: (selection: StepSelection) => void): StepBar {
  let steps: readonly number[] = [];
  let shown: number | undefined;
  const pin = (step: number | undefined) => {
    if (step !== undefined) onSelect(step);
  };
  const field = textField({
    id: 'step',
    label: 'Step',
    size: 6,
    onChange: (text) => {
      const wanted = Number(text.trim());
      const step = Number.isFinite(wanted) ? nearestStep(steps, wanted) : undefined;
      if (step === undefined) field.value = shown === undefined ? '' : String(shown);
      else pin(step);
    },
  });
  const previous = button('◀', () => shown !== undefined && pin(adjacentStep(steps, shown, -1)), 'icon');
  previous.setAttribute('aria-label', 'Previous step');
  previous.id = 'step-previous';
  const next = button('▶', () => shown !== undefined && pin(adjacentStep(steps, shown, 1)), 'icon');
  next.setAttribute('aria-label', 'Next step');
  next.id = 'step-next';
  const follow = checkbox({ id: 'follow', label: 'Follow newest step', checked: true, onChange: (checked) => (checked ? onSelect('follow') : pin(shown)) });
  const range = h('span', { class: 'muted', id: 'step-range' });
  return {
    element: h('div', { class: 'toolbar steps' }, h('span', { class: 'field-label' }, 'Step'), previous, field, next, range, follow.element),
    update(nextSteps, selection, nextShown) {
      steps = nextSteps;
      shown = nextShown;
      field.value = shown === undefined ? '' : String(shown);
      follow.set(selection === 'follow');
      range.textContent = steps.length ? `of ${steps[0]}–${steps[steps.length - 1]} (${steps.length} steps)` : 'no steps yet';
    },
  };
}
