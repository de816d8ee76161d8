import type { RunFollowingState } from '../trainer/contract/protocol';
import { checkbox } from './components/toolkit';
import { h } from './dom';

export interface RunFollowBar {
  element: HTMLElement;
  /** Show what the host says: following the newest run, or pinned (and the newer run not shown). */
  update(following: RunFollowingState): void;
}

/**
 * Beside a panel's run title: "Follow newest run" — ticked, a run that starts later takes this
 * one's place; unticked, the panel is pinned to its run and says so, naming a run that started
 * since. Ticking it shows the newest run at once.
 */
export function runFollowBar(onFollow: (follow: boolean) => void): RunFollowBar {
  const box = checkbox({ id: 'follow-run', label: 'Follow newest run', checked: false, onChange: onFollow });
  const note = h('span', { class: 'muted run-pin', id: 'run-pin' });
  return {
    element: h('span', { class: 'run-follow' }, box.element, note),
    update({ followsNewest, newer }) {
      box.set(followsNewest);
      note.textContent = followsNewest
        ? ''
        : newer
          ? `Pinned to this run; ${newer.name} (${newer.id}) has started since.`
          : 'Pinned to this run.';
      note.hidden = note.textContent === '';
    },
  };
}
