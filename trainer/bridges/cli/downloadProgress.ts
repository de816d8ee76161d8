import type { PullProgress } from '../../foundations/models/hub';
import { formatBytes } from '../../contract/formatBytes';

/**
 * A download's progress on stderr: on a terminal one bar redrawn in place (at most ten times a
 * second), elsewhere (a log file, CI) one plain line per file, so a log shows what was fetched
 * without a flood of carriage returns.
 */
export class DownloadProgressBar {
  private shown = false;
  private lastDraw = 0;
  private lastFile: string | undefined;
  private readonly started = Date.now();

  constructor(
    private readonly stream: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean },
    private readonly width = 24,
  ) {}

  update(p: PullProgress): void {
    if (!this.stream.isTTY) {
      if (p.file && p.file !== this.lastFile)
        this.stream.write(
          `${p.repo}: downloading ${p.file} (file ${p.fileIndex} of ${p.fileCount}, ${formatBytes(p.done)} of ${formatBytes(p.total)} so far)\n`,
        );
      if (p.finished)
        this.stream.write(`${p.repo}: downloaded ${formatBytes(p.total)} in ${this.seconds().toFixed(1)} s\n`);
      this.lastFile = p.file;
      return;
    }
    const now = Date.now();
    if (!p.finished && p.file === this.lastFile && now - this.lastDraw < 100) return;
    this.lastDraw = now;
    this.lastFile = p.file;
    const fraction = p.total > 0 ? Math.min(1, p.done / p.total) : 1;
    const filled = Math.round(fraction * this.width);
    const rate = p.done / Math.max(0.001, this.seconds());
    const file = p.file ? ` · ${p.file}` : '';
    this.stream.write(
      `\r\x1b[2K${p.repo} ${'█'.repeat(filled)}${'░'.repeat(this.width - filled)} ${Math.floor(fraction * 100)}% ${formatBytes(p.done)}/${formatBytes(p.total)} · ${formatBytes(rate)}/s${file}`,
    );
    this.shown = true;
    if (p.finished) this.clear();
  }

  /** Remove the bar (before other output, and at the end). */
  clear(): void {
    if (this.shown) this.stream.write('\r\x1b[2K');
    this.shown = false;
  }

  private seconds(): number {
    return (Date.now() - this.started) / 1000;
  }
}
