import type { HeldoutMetrics, TrainMetrics } from './pretrainMetrics';

/**
 * The pretraining curve as an SVG drawn from a run's own metrics.jsonl: on the left the training
 * loss (weighted, sampled; a moving average) and the held-out losses, on the right held-out exact
 * match per skill. Plain SVG text, so the model card shows it without any tool.
 */

const WIDTH = 1140;
const HEIGHT = 380;
const PANEL = { top: 40, bottom: 50, left: 60, width: 370, gap: 200 };
const COLORS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

interface Series {
  name: string;
  points: Array<[number, number]>;
  dashed?: boolean;
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

function panel(
  x0: number,
  title: string,
  series: Series[],
  xMax: number,
  yMax: number,
  yLabel: (v: number) => string,
): string {
  const h = HEIGHT - PANEL.top - PANEL.bottom;
  const w = PANEL.width;
  const sx = (x: number) => x0 + (x / xMax) * w;
  const sy = (y: number) => PANEL.top + h - (Math.min(y, yMax) / yMax) * h;
  const parts: string[] = [];
  parts.push(
    `<text x="${x0 + w / 2}" y="${PANEL.top - 16}" text-anchor="middle" font-size="14" font-weight="bold">${escape(title)}</text>`,
  );
  parts.push(`<rect x="${x0}" y="${PANEL.top}" width="${w}" height="${h}" fill="none" stroke="#999"/>`);
  for (let i = 0; i <= 4; i++) {
    const y = (yMax * i) / 4;
    parts.push(
      `<line x1="${x0}" x2="${x0 + w}" y1="${sy(y)}" y2="${sy(y)}" stroke="#eee"/><text x="${x0 - 6}" y="${sy(y) + 4}" text-anchor="end" font-size="11">${yLabel(y)}</text>`,
    );
    const x = (xMax * i) / 4;
    parts.push(
      `<text x="${sx(x)}" y="${PANEL.top + h + 16}" text-anchor="middle" font-size="11">${Math.round(x)}</text>`,
    );
  }
  parts.push(`<text x="${x0 + w / 2}" y="${PANEL.top + h + 34}" text-anchor="middle" font-size="12">step</text>`);
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map(([x, y], k) => `${k ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join('');
    parts.push(
      `<path d="${d}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/>`,
    );
    const ly = PANEL.top + 14 + i * 15;
    parts.push(
      `<line x1="${x0 + w + 8}" x2="${x0 + w + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${COLORS[i % COLORS.length]}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/><text x="${x0 + w + 28}" y="${ly}" font-size="11">${escape(s.name)}</text>`,
    );
  });
  return parts.join('\n');
}

/** A centred moving average over `window` points (the sampled training loss is noisy). */
function smooth(points: Array<[number, number]>, window: number): Array<[number, number]> {
  return points.map(([x], i) => {
    const from = Math.max(0, i - Math.floor(window / 2));
    const slice = points.slice(from, Math.min(points.length, from + window));
    return [x, slice.reduce((a, [, y]) => a + y, 0) / slice.length];
  });
}

export function pretrainChart(records: ReadonlyArray<TrainMetrics | HeldoutMetrics>, title: string): string {
  const train = records.filter((r): r is TrainMetrics => r.kind === 'train');
  const heldout = records.filter((r): r is HeldoutMetrics => r.kind === 'heldout');
  const xMax = Math.max(1, ...records.map((r) => r.step));
  const losses: Series[] = [
    {
      name: 'train (weighted)',
      points: smooth(
        train.map((r) => [r.step, r.loss]),
        25,
      ),
    },
    { name: 'held-out target', points: heldout.map((r) => [r.step, r.target_loss]) },
    { name: 'held-out text', points: heldout.map((r) => [r.step, r.text_loss]), dashed: true },
  ];
  const yMax = Math.ceil(
    Math.max(1, ...losses.flatMap((s) => s.points.filter(([x]) => x >= xMax * 0.02).map(([, y]) => y))),
  );
  const skills = [...new Set(heldout.flatMap((r) => Object.keys(r.exact_match)))];
  const em: Series[] = skills.map((skill) => ({
    name: skill,
    points: heldout.map((r) => [r.step, 100 * (r.exact_match[skill] ?? 0)]),
  }));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="16" text-anchor="middle" font-size="13">${escape(title)}</text>`,
    panel(PANEL.left, 'loss (nats per token)', losses, xMax, yMax, (v) => v.toFixed(1)),
    panel(PANEL.left + PANEL.width + PANEL.gap, 'held-out exact match (%)', em, xMax, 100, (v) => v.toFixed(0)),
    '</svg>',
  ].join('\n');
}
