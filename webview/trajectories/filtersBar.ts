import { TrajectoryRecord, type TrajectoryFilters } from '../../trainer/contract/protocol';
import { button, dropdown, textField, type Dropdown, type ValueElement } from '../components/toolkit';
import { h } from '../dom';
import { NO_FILTERS, parseBound } from './rows';

export interface FiltersBar {
  element: HTMLElement;
  /** Offer these tool names in the tool filter (those seen in the step so far). */
  setTools(tools: readonly string[]): void;
  setCount(shown: number, total: number): void;
}

const FINISH_REASONS = TrajectoryRecord.shape.finishReason.options;

type UpdateFilters = (patch: Partial<TrajectoryFilters>) => void;

/** A reward bound's field: a number updates the filters, anything else is marked (with why) and ignored. */
function rewardBound(
  id: string,
  label: string,
  value: number | null,
  key: 'rewardMin' | 'rewardMax',
  update: UpdateFilters,
): ValueElement {
  const field = textField({
    id,
    label,
    placeholder: key === 'rewardMin' ? 'min' : 'max',
    size: 6,
    value: value === null ? '' : String(value),
    onInput: (text) => {
      const parsed = parseBound(text);
      field.classList.toggle('invalid', 'error' in parsed);
      field.title = 'error' in parsed ? parsed.error : '';
      if ('value' in parsed) update({ [key]: parsed.value });
    },
  });
  return field;
}

function toolOptions(tools: readonly string[]) {
  return [{ value: '', label: 'Tool: any' }, ...tools.map((t) => ({ value: t, label: `Tool: ${t}` }))];
}

function errorsFilter(selected: TrajectoryFilters['errors'], update: UpdateFilters): Dropdown {
  return dropdown({
    id: 'errors-filter',
    label: 'Tool errors',
    options: [
      { value: 'any', label: 'Errors: any' },
      { value: 'with', label: 'With tool errors' },
      { value: 'without', label: 'Without tool errors' },
    ],
    value: selected,
    onChange: (value) => update({ errors: value as TrajectoryFilters['errors'] }),
  });
}

function finishFilter(selected: TrajectoryFilters['finishReason'], update: UpdateFilters): Dropdown {
  return dropdown({
    id: 'finish-filter',
    label: 'Finish reason',
    options: [{ value: '', label: 'Finish: any' }, ...FINISH_REASONS.map((f) => ({ value: f, label: `Finish: ${f}` }))],
    value: selected,
    onChange: (value) => update({ finishReason: value }),
  });
}

/**
 * Search and filter controls of the trajectory table. Every change calls `onChange` with the
 * complete new filters; a reward bound that is not a number is marked and ignored.
 */
export function filtersBar(initial: TrajectoryFilters, onChange: (filters: TrajectoryFilters) => void): FiltersBar {
  let filters = { ...initial };
  const update = (patch: Partial<TrajectoryFilters>) => {
    filters = { ...filters, ...patch };
    onChange(filters);
  };
  const search = textField({
    id: 'search',
    label: 'Search prompts and answers',
    placeholder: 'Search prompt, answer, row id',
    value: filters.text,
    onInput: (text) => update({ text }),
  });
  const min = rewardBound('reward-min', 'Smallest total reward', filters.rewardMin, 'rewardMin', update);
  const max = rewardBound('reward-max', 'Largest total reward', filters.rewardMax, 'rewardMax', update);
  const errors = errorsFilter(filters.errors, update);
  const tool: Dropdown = dropdown({
    id: 'tool-filter',
    label: 'Tool called',
    options: toolOptions(filters.tool ? [filters.tool] : []),
    value: filters.tool,
    onChange: (value) => update({ tool: value }),
  });
  const finish = finishFilter(filters.finishReason, update);
  const count = h('span', { class: 'row-count', id: 'row-count' });
  const clear = button(
    'Clear Filters',
    () => {
      search.value = '';
      min.value = '';
      max.value = '';
      min.classList.remove('invalid');
      max.classList.remove('invalid');
      errors.set('any');
      tool.set('');
      finish.set('');
      filters = { ...NO_FILTERS };
      onChange(filters);
    },
    'secondary',
  );
  const element = h(
    'div',
    { class: 'toolbar filters' },
    search,
    h('span', { class: 'field-label' }, 'Reward'),
    min,
    h('span', {}, '–'),
    max,
    errors.element,
    tool.element,
    finish.element,
    clear,
    count,
  );
  return {
    element,
    setTools: (tools) =>
      tool.setOptions(
        toolOptions(filters.tool && !tools.includes(filters.tool) ? [...tools, filters.tool] : tools),
        filters.tool,
      ),
    setCount: (shown, total) =>
      (count.textContent = shown === total ? `${total} trajectories` : `${shown} of ${total} trajectories`),
  };
}
