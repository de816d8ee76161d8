import uPlot from 'uplot';
import { h } from '../dom';
import type { ChartData, SeriesData } from './chartData';
import type { ChartGroup } from './groups';
import { type ChartTheme, withAlpha } from './theme';

const HEIGHT = 200;
/** Dash patterns that tell metrics apart when colour tells runs apart. */
const DASHES: number[][] = [[], [6, 3], [2, 2], [8, 3, 2, 3]];

/**
 * One chart of the Metrics panel, drawn by uPlot. Data updates reuse the plot (setData); a new
 * set of series or a new theme builds it again. Skipped updates are marked by a dashed vertical
 * line at their step; on the health charts, steps whose health checks warned by a triangle on
 * top in the theme's warning or error colour. A chart out of view keeps its newest data and draws it when it scrolls
 * into view: drawing 10,000 points is the expensive part of an update, and most charts are
 * off screen. The element carries what it shows as data attributes (series labels, points,
 * skipped steps, colours) for tests and accessibility tools.
 */
export class MetricsChart {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private plot: uPlot | undefined;
  private signature = '';
  private theme: ChartTheme | undefined;
  private readonly resize = new ResizeObserver(() => this.fit());
  private readonly visibility: IntersectionObserver;
  private visible = false;
  private pending: { data: ChartData; theme: ChartTheme } | undefined;
  private marks: Pick<ChartData, 'skipped' | 'warned'> = { skipped: [], warned: [] };

  constructor(readonly group: ChartGroup) {
    this.body = h('div', { class: 'chart-body' });
    this.element = h('section', { class: 'chart', 'data-group': group.id }, h('h3', {}, group.title), this.body);
    this.resize.observe(this.body);
    this.visibility = new IntersectionObserver(
      (entries) => {
        this.visible = entries[entries.length - 1].isIntersecting;
        if (this.visible && this.pending) this.draw(this.pending.data, this.pending.theme);
      },
      { rootMargin: '300px 0px' },
    );
    this.visibility.observe(this.element);
  }

  update(data: ChartData, theme: ChartTheme): void {
    const lines = data.series.filter((s) => s.role === 'line');
    this.element.dataset.series = lines.map((s) => s.label).join('|');
    this.element.dataset.points = String(data.x.length);
    this.element.dataset.lastStep = data.x.length ? String(data.x[data.x.length - 1]) : '';
    this.element.dataset.skipped = String(data.skipped.length);
    this.element.dataset.warned = data.warned.map((w) => `${w.step}:${w.severity}`).join(' ');
    this.element.dataset.bands = String(data.bands.length);
    // The colour each line is drawn in, from the theme (tests check that a theme change recolours).
    this.element.dataset.colours = lines.map((s) => this.colourOf(data, theme, s)).join('|');
    if (this.visible || !this.plot) this.draw(data, theme);
    else this.pending = { data, theme };
  }

  private draw(data: ChartData, theme: ChartTheme): void {
    this.pending = undefined;
    const signature = JSON.stringify([data.series.map((s) => [s.label, s.role]), data.bands]);
    // The draw hooks read the newest markers from here, so new ones need no new plot.
    this.marks = { skipped: data.skipped, warned: data.warned };
    const aligned = [data.x, ...data.series.map((s) => s.values)] as uPlot.AlignedData;
    if (!this.plot || signature !== this.signature || theme !== this.theme) {
      this.plot?.destroy();
      this.signature = signature;
      this.theme = theme;
      this.plot = new uPlot(this.options(data, theme), aligned, this.body);
      this.hideBandEdgesInLegend(data.series);
    } else {
      this.plot.setData(aligned);
    }
  }

  destroy(): void {
    this.resize.disconnect();
    this.visibility.disconnect();
    this.plot?.destroy();
    this.plot = undefined;
  }

  /** One colour per metric when one run is shown; one per run when runs are compared (metrics then differ by dash). */
  private colourOf(data: ChartData, theme: ChartTheme, series: SeriesData): string {
    const runs = new Set(data.series.map((s) => s.run)).size;
    const index = runs > 1 ? series.run : [...new Set(data.series.map((s) => s.metric))].indexOf(series.metric);
    return theme.palette[index % theme.palette.length];
  }

  private fit(): void {
    const width = Math.floor(this.body.clientWidth);
    if (this.plot && width > 0 && width !== this.plot.width) this.plot.setSize({ width, height: HEIGHT });
  }

  private options(data: ChartData, theme: ChartTheme): uPlot.Options {
    const runs = new Set(data.series.map((s) => s.run)).size;
    const metricOrder = [...new Set(data.series.map((s) => s.metric))];
    const colourOf = (s: SeriesData) => this.colourOf(data, theme, s);
    const axis: uPlot.Axis = {
      stroke: theme.foreground,
      grid: { stroke: theme.grid, width: 1 },
      ticks: { stroke: theme.grid, width: 1 },
      font: `11px ${theme.font}`,
    };
    const series: uPlot.Series[] = data.series.map((s) => {
      const colour = colourOf(s);
      if (s.role !== 'line') return { label: s.label, stroke: 'transparent', width: 0, points: { show: false } };
      const dash =
        s.kind === 'eval'
          ? [5, 4]
          : s.kind === 'sft'
            ? [1, 3]
            : runs > 1
              ? DASHES[metricOrder.indexOf(s.metric) % DASHES.length]
              : [];
      return {
        label: s.label,
        stroke: colour,
        width: s.kind === 'train' ? 1.5 : 1.25,
        dash,
        points: { show: s.kind === 'eval', size: 5, stroke: colour, fill: colour },
        value: (_: uPlot, v: number | null) => (v === null || v === undefined ? '—' : formatValue(v)),
      };
    });
    return {
      width: Math.max(200, Math.floor(this.body.clientWidth) || 480),
      height: HEIGHT,
      scales: { x: { time: false } },
      axes: [{ ...axis }, { ...axis, size: 56, values: (_u, splits) => splits.map(formatValue) }],
      series: [{ label: 'step', value: (_u, v) => (v === null ? '—' : String(v)) }, ...series],
      bands: data.bands.map((b) => ({
        series: [b.upper + 1, b.lower + 1] as [number, number],
        fill: withAlpha(colourOf(data.series[b.upper]), 0.18),
      })),
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: {
        draw: [
          (u) => {
            const { skipped } = this.marks;
            if (!skipped.length) return;
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = theme.skipped;
            ctx.lineWidth = 1;
            ctx.setLineDash([3, 3]);
            for (const { step } of skipped) {
              const x = Math.round(u.valToPos(step, 'x', true));
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
          (u) => drawWarnedSteps(u, this.marks.warned, theme),
        ],
      },
    };
  }

  /** Band edges are series so uPlot can fill between them; their legend rows would only confuse. */
  private hideBandEdgesInLegend(series: SeriesData[]): void {
    const rows = this.plot?.root.querySelectorAll('.u-legend .u-series');
    series.forEach((s, i) => {
      if (s.role !== 'line') rows?.[i + 1]?.classList.add('band-edge');
    });
  }
}

/** A small triangle above the plot at each step with health warnings, in the theme's warning or error colour. */
function drawWarnedSteps(u: uPlot, warned: ChartData['warned'], theme: ChartTheme): void {
  if (!warned.length) return;
  const ctx = u.ctx;
  const size = 4 * devicePixelRatio;
  ctx.save();
  for (const { step, severity } of warned) {
    const x = Math.round(u.valToPos(step, 'x', true));
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
    ctx.fillStyle = severity === 'critical' ? theme.critical : theme.warn;
    ctx.beginPath();
    ctx.moveTo(x - size, u.bbox.top);
    ctx.lineTo(x + size, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + 1.6 * size);
    ctx.closePath();
    ctx.fill();
  }
  ctx.restore();
}

export function formatValue(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1);
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}
