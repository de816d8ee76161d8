/**
 * Chart colours from VS Code's theme variables (the `charts-*` colours exist for exactly this),
 * read when a chart is drawn and again whenever VS Code switches theme.
 */
export interface ChartTheme {
  palette: string[];
  foreground: string;
  grid: string;
  /** Marker of skipped updates. */
  skipped: string;
  /** Markers of steps with health warnings, by severity. */
  warn: string;
  critical: string;
  font: string;
}

const PALETTE_VARIABLES = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-yellow',
  '--vscode-charts-red',
];
const FALLBACK_PALETTE = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#cca700', '#f14c4c'];

export function readTheme(): ChartTheme {
  const style = getComputedStyle(document.documentElement);
  const variable = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  const foreground = variable('--vscode-charts-foreground', variable('--vscode-foreground', '#888888'));
  return {
    palette: PALETTE_VARIABLES.map((name, i) => variable(name, FALLBACK_PALETTE[i])),
    foreground,
    grid: variable('--vscode-charts-lines', withAlpha(foreground, 0.25)),
    skipped: variable('--vscode-charts-red', variable('--vscode-errorForeground', '#f14c4c')),
    warn: variable('--vscode-editorWarning-foreground', '#cca700'),
    critical: variable('--vscode-editorError-foreground', variable('--vscode-errorForeground', '#f14c4c')),
    font: variable('--vscode-font-family', 'sans-serif'),
  };
}

let probe: CanvasRenderingContext2D | null | undefined;

/** `colour` (any CSS colour the canvas understands) with its alpha set to `alpha`. */
export function withAlpha(colour: string, alpha: number): string {
  probe ??= document.createElement('canvas').getContext('2d');
  if (!probe) return colour;
  probe.fillStyle = '#000000';
  probe.fillStyle = colour;
  const normalised = String(probe.fillStyle);
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(normalised);
  if (hex) return `rgba(${parseInt(hex[1], 16)}, ${parseInt(hex[2], 16)}, ${parseInt(hex[3], 16)}, ${alpha})`;
  const rgba = /^rgba?\(([^,]+),([^,]+),([^,)]+)/.exec(normalised);
  return rgba ? `rgba(${rgba[1].trim()}, ${rgba[2].trim()}, ${rgba[3].trim()}, ${alpha})` : colour;
}

/** Call `onChange` when VS Code changes theme (it rewrites the variables on <html> and the class of <body>). */
export function onThemeChange(onChange: () => void): void {
  let queued = false;
  const observer = new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      onChange();
    });
  });
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
  observer.observe(document.body, { attributes: true, attributeFilter: ['class'] });
}
