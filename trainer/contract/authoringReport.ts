import type { RewardEvaluation, RewardSample, ToolRunReport } from './protocol/authoring';

/**
 * Tool-run reports and reward evaluations as plain text: what `rollout-studio run-tool` and
 * `eval-reward` print, and what the editor shows in its read-only result documents. Pure (it
 * needs nothing but the protocol types), so the extension uses it too.
 */

function heading(title: string): string {
  return `${title}\n${'─'.repeat(Math.max(3, title.length))}`;
}

function json(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent) ?? String(value);
}

function milliseconds(ms: number): string {
  return ms < 10 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function formatToolRun(report: ToolRunReport, file: string): string {
  const { tool } = report;
  const lines = [
    `${tool.name} (${tool.className}) from ${file}`,
    `arguments  ${JSON.stringify(report.arguments)}`,
    `latency    ${report.error?.kind === 'invalid_arguments' ? 'not run' : milliseconds(report.latencyMs)}`,
    '',
  ];
  if (report.error && report.issues?.length) {
    lines.push(heading(`Error: ${report.error.kind}`), `The arguments do not match the schema of ${tool.name}:`);
    for (const issue of report.issues)
      lines.push(`  ${issue.path.length ? issue.path.join('.') : '(the arguments)'}: ${issue.message}`);
    lines.push('');
  } else if (report.error) {
    lines.push(heading(`Error: ${report.error.kind}`), report.error.message, '');
  } else {
    lines.push(heading('Observation (what the policy sees)'), report.observation ?? '', '');
    if (report.data !== undefined)
      lines.push(heading('Data (for rewards, not shown to the policy)'), json(report.data), '');
  }
  if (report.logs.length) lines.push(heading('Logs'), ...report.logs, '');
  return lines.join('\n');
}

function number(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(3);
}

/** Columns padded to their widest cell. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd(),
  );
}

function clip(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}

const SOURCE_LABEL: Record<RewardSample['source'], string> = {
  gold: 'gold answer',
  unanswered: 'no answer',
  recorded: 'recorded',
};

export function formatRewardEvaluation(evaluation: RewardEvaluation): string {
  const lines = [`${evaluation.export} (${evaluation.kind}: ${evaluation.rewards.join(', ')}) from ${evaluation.file}`];
  if (evaluation.data) lines.push(`dataset  ${evaluation.data.file} (${evaluation.data.rows} rows)`);
  if (evaluation.run)
    lines.push(
      `run      ${evaluation.run.dir} (step${evaluation.run.steps.length === 1 ? '' : 's'} ${evaluation.run.steps.join(', ') || 'none'})`,
    );
  lines.push('');

  if (evaluation.summary.length) {
    lines.push(heading('Summary'));
    lines.push(
      ...table([
        ['trajectories', 'score', 'n', 'mean', 'min', 'max'],
        ...evaluation.summary.map((s) => [
          SOURCE_LABEL[s.source],
          s.score,
          String(s.count),
          number(s.mean),
          number(s.min),
          number(s.max),
        ]),
      ]),
      '',
    );
  }

  const scoreNames = [...new Set(evaluation.samples.flatMap((s) => Object.keys(s.scores)))];
  if (evaluation.samples.length) {
    lines.push(heading('Samples'));
    const header = ['trajectory', 'row', 'answer', ...scoreNames, 'recorded in the run'];
    const rows = evaluation.samples.map((s) => [
      SOURCE_LABEL[s.source],
      clip(s.label, 48),
      clip(s.answer ?? '—', 24),
      ...scoreNames.map((n) => (s.error ? 'error' : s.scores[n] === undefined ? '' : number(s.scores[n]))),
      s.recorded
        ? Object.entries(s.recorded)
            .map(([k, v]) => `${k}=${number(v)}`)
            .join(' ')
        : '',
    ]);
    lines.push(...table([header, ...rows]), '');
    const withCalls = evaluation.samples.filter((s) => s.calls?.length);
    if (withCalls.length) {
      lines.push(heading('Calls'));
      for (const s of withCalls) {
        lines.push(
          `${s.label}: ${s.calls!.map((c) => `turn ${c.turn} ${c.name ?? '(unparsed)'} → ${c.score === null ? 'no opinion' : number(c.score)}`).join('; ')}`,
        );
      }
      lines.push('');
    }
    const failed = evaluation.samples.filter((s) => s.error);
    if (failed.length) {
      lines.push(heading('Errors'));
      for (const s of failed) lines.push(`${SOURCE_LABEL[s.source]} ${s.label}: ${s.error}`);
      lines.push('');
    }
  } else {
    lines.push('No samples were scored.', '');
  }
  if (evaluation.notes.length) lines.push(heading('Notes'), ...evaluation.notes.map((n) => `- ${n}`), '');
  return lines.join('\n');
}
