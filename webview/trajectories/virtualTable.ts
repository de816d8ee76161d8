import { h } from '../dom';

export interface Column<Row, Key extends string> {
  key: Key;
  title: string;
  /** Tooltip of the header. */
  description: string;
  numeric?: boolean;
  cell(row: Row): string | Node;
  /** Tooltip of a cell, when the cell cannot show everything. */
  tooltip?(row: Row): string | undefined;
  /** Extra class of a cell (e.g. `bad` for a row with errors). */
  cellClass?(row: Row): string | undefined;
}

export interface VirtualTableOptions<Row, Key extends string> {
  columns: readonly Column<Row, Key>[];
  /** Must match the row height in the stylesheet. */
  rowHeight: number;
  keyOf(row: Row): number;
  onSelect(row: Row): void;
  onSort(column: Key): void;
}

const OVERSCAN = 4;

/**
 * A table that renders only the rows in view (plus a few either side), so 5,000 rows cost what
 * 50 do. Rows are a fixed height; a spacer gives the scroll range; scrolling re-renders in the
 * next animation frame. The columns' widths live in the stylesheet (grid-template-columns on
 * `.vt-row`), so nothing sets inline styles but the window's offset. Laying out a row's text is
 * the expensive part, so the table never rebuilds rows in view that did not change (an append
 * beyond the end of the view costs nothing), and it reads the viewport's size and scroll
 * position from events instead of asking the layout (which would force one).
 */
export class VirtualTable<Row, Key extends string> {
  readonly element: HTMLElement;
  private readonly header: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly window: HTMLElement;
  private rows: readonly Row[] = [];
  private selectedKey: number | undefined;
  private frame = 0;
  /** What is on screen: the row objects in view and the selection they were drawn with. */
  private rendered: { rows: readonly Row[]; first: number; selected: number | undefined } = {
    rows: [],
    first: -1,
    selected: undefined,
  };
  private viewportHeight = 0;
  private scrollTop = 0;

  constructor(private readonly options: VirtualTableOptions<Row, Key>) {
    this.header = h('div', { class: 'vt-row vt-header', role: 'row' });
    this.window = h('div', { class: 'vt-window', role: 'rowgroup' });
    this.spacer = h('div', { class: 'vt-spacer' }, this.window);
    this.viewport = h('div', { class: 'vt-viewport', tabindex: '0' }, this.spacer);
    this.element = h('div', { class: 'vt', role: 'grid', 'aria-rowcount': '0' }, this.header, this.viewport);
    this.viewport.addEventListener('scroll', () => {
      this.scrollTop = this.viewport.scrollTop;
      this.schedule();
    });
    this.viewport.addEventListener('keydown', (event) => this.onKey(event));
    this.window.addEventListener('click', (event) => {
      const rowElement = (event.target as Element).closest<HTMLElement>('.vt-row');
      const position = rowElement ? Number(rowElement.dataset.position) : NaN;
      if (Number.isInteger(position) && this.rows[position]) this.options.onSelect(this.rows[position]);
    });
    new ResizeObserver((entries) => {
      this.viewportHeight = entries[entries.length - 1].contentRect.height;
      this.schedule();
    }).observe(this.viewport);
  }

  setHeader(sortColumn: Key, direction: 'asc' | 'desc'): void {
    this.header.replaceChildren(
      ...this.options.columns.map((column) => {
        const sorted = column.key === sortColumn;
        const cell = h(
          'div',
          {
            class: `vt-cell vt-head${column.numeric ? ' num' : ''}${sorted ? ' sorted' : ''}`,
            role: 'columnheader',
            title: column.description,
            'data-column': column.key,
            'aria-sort': sorted ? (direction === 'asc' ? 'ascending' : 'descending') : 'none',
            tabindex: '0',
          },
          column.title,
          sorted ? h('span', { class: 'sort-arrow' }, direction === 'asc' ? ' ▲' : ' ▼') : undefined,
        );
        cell.addEventListener('click', () => this.options.onSort(column.key));
        cell.addEventListener('keydown', (event) => {
          if (event.key === 'Enter' || event.key === ' ') this.options.onSort(column.key);
        });
        return cell;
      }),
    );
  }

  setRows(rows: readonly Row[]): void {
    this.rows = rows;
    this.element.setAttribute('aria-rowcount', String(rows.length));
    this.spacer.style.height = `${rows.length * this.options.rowHeight}px`;
    this.render();
  }

  select(key: number | undefined, reveal = false): void {
    this.selectedKey = key;
    if (reveal && key !== undefined) {
      const position = this.rows.findIndex((r) => this.options.keyOf(r) === key);
      if (position >= 0) this.scrollIntoView(position);
    }
    this.render();
  }

  private scrollIntoView(position: number): void {
    const top = position * this.options.rowHeight;
    const bottom = top + this.options.rowHeight;
    const height = this.viewportHeight || this.viewport.clientHeight;
    if (top < this.scrollTop) this.scrollTop = top;
    else if (bottom > this.scrollTop + height) this.scrollTop = bottom - height;
    else return;
    this.viewport.scrollTop = this.scrollTop;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private render(): void {
    const { rowHeight } = this.options;
    // Before the first resize observation the height is unknown: render a screenful anyway.
    const height = this.viewportHeight || 1000;
    const first = Math.max(0, Math.floor(this.scrollTop / rowHeight) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((this.scrollTop + height) / rowHeight) + OVERSCAN);
    const inView = this.rows.slice(first, last);
    const previous = this.rendered;
    if (
      first === previous.first &&
      this.selectedKey === previous.selected &&
      inView.length === previous.rows.length &&
      inView.every((row, i) => row === previous.rows[i])
    )
      return;
    this.rendered = { rows: inView, first, selected: this.selectedKey };
    this.window.style.transform = `translateY(${first * rowHeight}px)`;
    this.window.replaceChildren(...inView.map((row, i) => this.renderRow(row, first + i)));
  }

  private renderRow(row: Row, position: number): HTMLElement {
    const key = this.options.keyOf(row);
    const selected = key === this.selectedKey;
    const element = h('div', {
      class: `vt-row${selected ? ' selected' : ''}`,
      role: 'row',
      'aria-rowindex': String(position + 2),
      'aria-selected': String(selected),
      'data-position': String(position),
      'data-key': String(key),
    });
    for (const column of this.options.columns) {
      const extra = column.cellClass?.(row);
      element.append(
        h(
          'div',
          {
            class: `vt-cell${column.numeric ? ' num' : ''}${extra ? ` ${extra}` : ''}`,
            role: 'gridcell',
            'data-column': column.key,
            title: column.tooltip?.(row),
          },
          column.cell(row),
        ),
      );
    }
    return element;
  }

  private onKey(event: KeyboardEvent): void {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    event.preventDefault();
    const current = this.rows.findIndex((r) => this.options.keyOf(r) === this.selectedKey);
    const next = Math.max(0, Math.min(this.rows.length - 1, current + (event.key === 'ArrowDown' ? 1 : -1)));
    if (this.rows[next]) {
      this.scrollIntoView(next);
      this.options.onSelect(this.rows[next]);
    }
  }
}
