import uPlot from 'uplot';
import { h } from '../dom';
import { formatValue } from './chart';
import { scoreVsToolCalls, type RunScoreVsCalls } from './scoreVsToolsData';
import type { RunMetrics } from './store';
import type { ChartTheme } from './theme';

const HEIGHT = 200;
/**
 * Held-out score against tool calls per trajectory over a run's evaluations (issue 32: does the
 * policy score better because it calls tools, or despite calling fewer?). A scatter (uPlot's
 * faceted mode), each run's points joined in step order and labelled with their step, so the
 * path the run took is readable. Shown when some run has two evaluations to place.
 */
export class ScoreVsToolsChart {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private plot: uPlot | undefined;
  private readonly resize = new ResizeObserver(() => this.fit());

  constructor() {
    this.body = h('div', { class: 'chart-body' });
    this.element = h(
      'section',
      { class: 'chart', 'data-group': 'score-vs-tools' },
      h('h3', { id: 'score-vs-tools-title' }, 'Held-out score against tool calls per trajectory'),
      this.body,
    );
    this.resize.observe(this.body);
  }

  /** Whether there is anything to draw: some run with at least one evaluation carrying both. */
  static wanted(runs: readonly RunMetrics[]): boolean {
    return scoreVsToolCalls(runs).some((r) => r.points.length > 0);
  }

  update(runs: readonly RunMetrics[], theme: ChartTheme): void {
    const series = scoreVsToolCalls(runs).filter((r) => r.points.length > 0);
    const metrics = [...new Set(series.map((s) => s.metric))];
    this.element.querySelector('h3')!.textContent = `Held-out ${metrics.join(', ')} against tool calls per trajectory`;
    this.element.dataset.points = series
      .map((s) => s.points.map((p) => `${p.step}:${p.calls}:${p.score}`).join(' '))
      .join('|');
    this.element.dataset.series = series
      .map((s) => (runs.length > 1 ? `${s.run.run.id} · ` : '') + `score/${s.metric} (eval)`)
      .join('|');
    this.plot?.destroy();
    const data = [
      null,
      ...series.map((s) => [s.points.map((p) => p.calls), s.points.map((p) => p.score)]),
    ] as unknown as uPlot.AlignedData;
    this.plot = new uPlot(this.options(series, theme, runs.length), data, this.body);
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = undefined;
  }

  private fit(): void {
    const width = Math.floor(this.body.clientWidth);
    if (this.plot && width > 0 && width !== this.plot.width) this.plot.setSize({ width, height: HEIGHT });
  }

  private options(series: RunScoreVsCalls[], theme: ChartTheme, shownRuns: number): uPlot.Options {
    const axis: uPlot.Axis = {
      stroke: theme.foreground,
      grid: { stroke: theme.grid, width: 1 },
      ticks: { stroke: theme.grid, width: 1 },
      font: `11px ${theme.font}`,
    };
    const colour = (i: number) => theme.palette[i % theme.palette.length];
    // A lone point (or points in a line) would give a range of zero width.
    const padded = (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => {
      const pad = max > min ? (max - min) * 0.08 : Math.max(0.05, Math.abs(max) * 0.1);
      return [min - pad, max + pad];
    };
    return {
      mode: 2,
      width: Math.max(200, Math.floor(this.body.clientWidth) || 480),
      height: HEIGHT,
      scales: { x: { time: false, range: padded }, y: { range: padded } },
      axes: [
        {
          ...axis,
          label: 'tool calls per trajectory',
          labelSize: 18,
          labelFont: `11px ${theme.font}`,
          values: (_u, splits) => splits.map(formatValue),
        },
        { ...axis, size: 56, values: (_u, splits) => splits.map(formatValue) },
      ],
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      series: [
        {},
        ...(series.map((s, i) => ({
          label: (shownRuns > 1 ? `${s.run.run.id} · ` : '') + `score/${s.metric} (eval)`,
          stroke: colour(i),
          fill: colour(i),
          // Drawn by drawPaths: uPlot's own points do not show in faceted mode without a paths builder.
          paths: () => null,
          points: { show: false },
          facets: [
            { scale: 'x', auto: true },
            { scale: 'y', auto: true },
          ],
        })) as uPlot.Series[]),
      ],
      hooks: { draw: [(u) => this.drawPaths(u, series, colour, theme)] },
    };
  }

  /** Each run's evaluations as points joined in step order, each labelled with its step. */
  private drawPaths(u: uPlot, series: RunScoreVsCalls[], colour: (i: number) => string, theme: ChartTheme): void {
    const ctx = u.ctx;
    ctx.save();
    ctx.font = `${Math.round(10 * devicePixelRatio)}px ${theme.font}`;
    series.forEach((s, i) => {
      const at = s.points.map((p) => [u.valToPos(p.calls, 'x', true), u.valToPos(p.score, 'y', true)] as const);
      ctx.strokeStyle = colour(i);
      ctx.globalAlpha = 0.55;
      ctx.lineWidth = devicePixelRatio;
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      ctx.beginPath();
      at.forEach(([x, y], k) => (k === 0 ? ctx.moveTo(x, y) : ctx.lineTo(x, y)));
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
      ctx.fillStyle = colour(i);
      for (const [x, y] of at) {
        ctx.beginPath();
        ctx.arc(x, y, 3.5 * devicePixelRatio, 0, 2 * Math.PI);
        ctx.fill();
      }
      ctx.fillStyle = theme.foreground;
      at.forEach(([x, y], k) =>
        ctx.fillText(`${s.points[k].step}`, x + 5 * devicePixelRatio, y - 5 * devicePixelRatio),
      );
    });
    ctx.restore();
  }
}
