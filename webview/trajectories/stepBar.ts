import type { ShownSet, StepSelection } from '../../trainer/contract/protocol';
import { button, checkbox, dropdown, textField } from '../components/toolkit';
import { h } from '../dom';
import { adjacentStep, nearestStep } from './rows';

export interface StepBar {
  element: HTMLElement;
  /** Show the steps and evaluations that exist, what is selected and what is on screen. */
  update(
    steps: readonly number[],
    evaluations: readonly number[],
    selection: StepSelection,
    shown: ShownSet | undefined,
  ): void;
}

/** "before RL" for the evaluation at step 0, "after step N" for the others. */
export function evaluationLabel(step: number): string {
  return step === 0 ? 'Evaluation before RL' : `Evaluation after step ${step}`;
}

/**
 * Which trajectories the table shows: follow the newest training step as the run grows, or pin
 * one (typing a step, or the previous/next buttons, pins; ticking Follow newest follows again);
 * or, beside them, a held-out evaluation the run recorded (before RL, after step N).
 */
export function stepBar(onSelect: (selection: StepSelection) => void): StepBar {
  let steps: readonly number[] = [];
  let shown: ShownSet | undefined;
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
      if (step === undefined) field.value = shown === undefined ? '' : String(shown.step);
      else pin(step);
    },
  });
  const previous = button('◀', () => shown !== undefined && pin(adjacentStep(steps, shown.step, -1)), 'icon');
  previous.setAttribute('aria-label', 'Previous step');
  previous.id = 'step-previous';
  const next = button('▶', () => shown !== undefined && pin(adjacentStep(steps, shown.step, 1)), 'icon');
  next.setAttribute('aria-label', 'Next step');
  next.id = 'step-next';
  const follow = checkbox({
    id: 'follow',
    label: 'Follow newest step',
    checked: true,
    onChange: (checked) => (checked ? onSelect('follow') : pin(shown?.step)),
  });
  const range = h('span', { class: 'muted', id: 'step-range' });
  const TRAINING = 'training';
  const evaluation = dropdown({
    id: 'evaluation',
    label: 'Training steps or an evaluation',
    options: [{ value: TRAINING, label: 'Training steps' }],
    value: TRAINING,
    onChange: (value) => onSelect(value === TRAINING ? 'follow' : { evaluation: Number(value) }),
  });
  return {
    element: h(
      'div',
      { class: 'toolbar steps' },
      h('span', { class: 'field-label' }, 'Step'),
      previous,
      field,
      next,
      range,
      follow.element,
      evaluation.element,
    ),
    update(nextSteps, evaluations, selection, nextShown) {
      steps = nextSteps;
      shown = nextShown;
      field.value = shown === undefined ? '' : String(shown.step);
      follow.set(selection === 'follow');
      range.textContent = steps.length
        ? `of ${steps[0]}–${steps[steps.length - 1]} (${steps.length} steps)`
        : 'no steps yet';
      const chosen = typeof selection === 'object' ? String(selection.evaluation) : TRAINING;
      evaluation.setOptions(
        [
          { value: TRAINING, label: 'Training steps' },
          ...evaluations.map((s) => ({ value: String(s), label: evaluationLabel(s) })),
        ],
        chosen,
      );
      evaluation.element.hidden = evaluations.length === 0;
    },
  };
}
