/**
 * The benchmark's chart as an SVG file, drawn from the runs' own metrics (no plotting library, no
 * network): left, held-out accuracy at each evaluation (mean over seeds, a bar for ± one standard
 * deviation); right, the accuracy of each training batch by RL step (mean over seeds). Baselines
 * (warm start, SFT-only, majority answer) are horizontal lines on the left panel.
 */

export interface ChartSeries {
  name: string;
  /** Held-out accuracy by evaluation step: mean and std over seeds. */
  heldout: { step: number; mean: number; std: number }[];
  /** Training-batch accuracy by RL step, mean over seeds. */
  training: { step: number; mean: number }[];
}

export interface ChartBaseline {
  name: string;
  value: number;
  std?: number;
}

const COLOURS = [
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
const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface Panel {
  x: number;
  y: number;
  width: number;
  height: number;
  steps: number;
  title: string;
}

function axes(p: Panel): string[] {
  const out = [
    `<text x="${p.x + p.width / 2}" y="${p.y - 10}" text-anchor="middle" font-size="13" font-weight="bold">${escape(p.title)}</text>`,
  ];
  out.push(`<rect x="${p.x}" y="${p.y}" width="${p.width}" height="${p.height}" fill="none" stroke="#999"/>`);
  for (let v = 0; v <= 100; v += 20) {
    const y = p.y + p.height - (v / 100) * p.height;
    out.push(
      `<line x1="${p.x}" x2="${p.x + p.width}" y1="${y}" y2="${y}" stroke="#eee"/>`,
      `<text x="${p.x - 6}" y="${y + 4}" text-anchor="end" font-size="10">${v}%</text>`,
    );
  }
  for (let s = 0; s <= p.steps; s += Math.max(1, Math.round(p.steps / 6))) {
    const x = p.x + (s / p.steps) * p.width;
    out.push(`<text x="${x}" y="${p.y + p.height + 14}" text-anchor="middle" font-size="10">${s}</text>`);
  }
  out.push(
    `<text x="${p.x + p.width / 2}" y="${p.y + p.height + 30}" text-anchor="middle" font-size="11">RL step</text>`,
  );
  return out;
}

const px = (p: Panel, step: number) => p.x + (step / p.steps) * p.width;
const py = (p: Panel, value: number) => p.y + p.height - Math.max(0, Math.min(1, value)) * p.height;

export function rlChartSvg(
  series: readonly ChartSeries[],
  baselines: readonly ChartBaseline[],
  options: { steps: number; title: string; note: string; panelTitles?: readonly [string, string] },
): string {
  const width = 980;
  const height = 470;
  const [leftTitle, rightTitle] = options.panelTitles ?? [
    'Held-out accuracy (greedy), mean ± std over seeds',
    'Training-batch accuracy (sampled), mean over seeds',
  ];
  const left: Panel = { x: 60, y: 50, width: 380, height: 300, steps: options.steps, title: leftTitle };
  const right: Panel = { x: 520, y: 50, width: 380, height: 300, steps: options.steps, title: rightTitle };
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  parts.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escape(options.title)}</text>`);
  parts.push(...axes(left), ...axes(right));
  baselines.forEach((b, i) => {
    const y = py(left, b.value);
    parts.push(
      `<line x1="${left.x}" x2="${left.x + left.width}" y1="${y}" y2="${y}" stroke="#444" stroke-dasharray="${['6 3', '2 3', '9 3 2 3'][i % 3]}"/>`,
    );
    parts.push(
      `<text x="${left.x + left.width - 4}" y="${y - 3}" text-anchor="end" font-size="9" fill="#444">${escape(b.name)} ${(100 * b.value).toFixed(1)}%</text>`,
    );
  });
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const offset = (i - (series.length - 1) / 2) * 2.5; // keep error bars of one step apart
    const held = s.heldout.map((h) => `${px(left, h.step) + offset},${py(left, h.mean)}`).join(' ');
    parts.push(`<polyline points="${held}" fill="none" stroke="${colour}" stroke-width="1.8"/>`);
    for (const h of s.heldout) {
      const x = px(left, h.step) + offset;
      parts.push(
        `<line x1="${x}" x2="${x}" y1="${py(left, h.mean - h.std)}" y2="${py(left, h.mean + h.std)}" stroke="${colour}"/>`,
        `<circle cx="${x}" cy="${py(left, h.mean)}" r="2.5" fill="${colour}"/>`,
      );
    }
    parts.push(
      `<polyline points="${s.training.map((t) => `${px(right, t.step)},${py(right, t.mean)}`).join(' ')}" fill="none" stroke="${colour}" stroke-width="1.5"/>`,
    );
    const ly = 392 + Math.floor(i / 4) * 16;
    const lx = 60 + (i % 4) * 230;
    parts.push(
      `<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${lx + 24}" y="${ly}" font-size="11">${escape(s.name)}</text>`,
    );
  });
  parts.push(`<text x="60" y="${height - 8}" font-size="10" fill="#555">${escape(options.note)}</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
