import { h } from './dom';

const MAX_NOTICES = 5;

/** Messages for the user above a panel's content (errors reading the run, saved files), dismissible. */
export function noticeArea(): { element: HTMLElement; show(level: 'info' | 'error', message: string): void } {
  const element = h('div', { class: 'notices', id: 'notices', role: 'status', 'aria-live': 'polite' });
  return {
    element,
    show(level, message) {
      const close = h('a', { href: '#', class: 'notice-close', 'aria-label': 'Dismiss' }, '×');
      const notice = h('div', { class: `notice ${level}` }, h('span', { class: 'notice-text' }, message), close);
      close.addEventListener('click', (event) => {
        event.preventDefault();
        notice.remove();
      });
      element.append(notice);
      while (element.children.length > MAX_NOTICES) element.firstElementChild!.remove();
    },
  };
}
