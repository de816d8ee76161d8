import type { TrainingEvent } from '../../contract/protocol';
import { formatBytes } from '../../contract/formatBytes';

/** One line at the bottom of a terminal showing the phase in progress (redrawn in place on a TTY). */
export class ProgressLine {
  private shown = false;

  constructor(private readonly stream: NodeJS.WriteStream) {}

  update(event: Extract<TrainingEvent, { type: 'progress' }>): void {
    const pct = event.total > 0 ? Math.round((100 * event.done) / event.total) : 0;
    const rate = event.tokensPerSecond !== undefined ? ` · ${Math.round(event.tokensPerSecond)} tok/s` : '';
    const text =
      event.phase === 'download'
        ? `downloading ${event.detail ?? 'the model'} ${formatBytes(event.done)}/${formatBytes(event.total)} (${pct}%)`
        : `step ${event.step} ${event.phase.padEnd(10)} ${event.done}/${event.total} (${pct}%)${rate}`;
    // Off a terminal the log lines tell the story; a progress line would only add noise.
    if (!this.stream.isTTY) return;
    this.stream.write(`\r\x1b[2K${text}`);
    this.shown = true;
  }

  clear(): void {
    if (this.shown && this.stream.isTTY) this.stream.write('\r\x1b[2K');
    this.shown = false;
  }
}
