import type {
  BranchSummary,
  TokenColouring,
  ToolCallRecord,
  TrajectoryImageRecord,
  TrajectoryRecord,
  TurnRecord,
} from '../../trainer/contract/protocol';
import { button, tag } from '../components/toolkit';
import { h } from '../dom';
import { formatMetricValue } from '../numberFormat';
import { decodeTokens } from './tokenColours';
import { tokenView } from './tokenView';

export interface DetailActions {
  openInDebugger(step: number, index: number): void;
  /** "Re-roll…": generate the rest again from a point of the trajectory (the editor asks which, and how). */
  reroll?(step: number, index: number): void;
  /** A branch beside the original (a diff of transcripts). */
  showBranch?(id: string, branch: number): void;
  /** A re-roll's branches in the replay debugger. */
  replayBranch?(id: string): void;
  colourBy(by: TokenColouring): void;
  close(): void;
}

/**
 * One trajectory: rewards, the images it saw, each turn with its tool calls (and their images),
 * and its tokens. `metric`: the run's task metric, whose component is labelled as such.
 * `evaluation`: the record is a held-out evaluation's (no advantage, and the replay debugger
 * steps through training steps only).
 */
export function trajectoryDetail(
  record: TrajectoryRecord,
  colourBy: TokenColouring,
  imageUris: Record<string, string>,
  actions: DetailActions,
  metric?: string,
  evaluation = false,
  branches: readonly BranchSummary[] = [],
): HTMLElement {
  const images = record.images ?? [];
  const figure = (image: TrajectoryImageRecord) => imageFigure(image, imageUris[image.sha256]);
  const components = Object.entries(record.rewards.components);
  let tokens: HTMLElement;
  try {
    tokens = tokenView(decodeTokens(record.tokens), colourBy, actions.colourBy);
  } catch (error) {
    tokens = h(
      'p',
      { class: 'notice error' },
      `The token data of this trajectory cannot be shown: ${(error as Error).message}`,
    );
  }
  return h(
    'div',
    { class: 'detail-body', 'data-step': String(record.step), 'data-index': String(record.index) },
    h(
      'header',
      { class: 'detail-header' },
      h('h2', {}, `Trajectory ${record.index}`),
      h(
        'span',
        { class: 'muted' },
        evaluation
          ? `${record.step === 0 ? 'evaluation before RL' : `evaluation after step ${record.step}`} · row ${record.rowId}`
          : `step ${record.step} · group ${record.group}, sample ${record.sample} · row ${record.rowId}`,
      ),
      h('span', { class: 'spacer' }),
      evaluation ? undefined : button('Open in Debugger', () => actions.openInDebugger(record.step, record.index)),
      evaluation || !actions.reroll
        ? undefined
        : button('Re-roll…', () => actions.reroll!(record.step, record.index), 'secondary'),
      button('Close', () => actions.close(), 'secondary'),
    ),
    h('p', { class: 'prompt' }, record.prompt),
    h(
      'dl',
      { class: 'rewards', id: 'rewards' },
      ...pair('Outcome reward', formatMetricValue(record.rewards.outcome), 'outcome'),
      ...pair('Process reward', formatMetricValue(record.rewards.process), 'process'),
      ...pair('Total reward', formatMetricValue(record.rewards.total), 'total'),
      ...pair('Advantage', formatMetricValue(record.advantage), 'advantage'),
      ...components.flatMap(([name, value]) =>
        pair(name === metric ? `${name} (task metric)` : name, formatMetricValue(value), `component-${name}`),
      ),
      ...pair('Finish', record.finishReason, 'finish'),
      ...pair('Answer', record.answer ?? '—', 'answer'),
      ...pair(
        'Tokens',
        `${record.lengths.response} generated of ${record.lengths.total} (prompt ${record.lengths.prompt})`,
        'lengths',
      ),
    ),
    images.length
      ? h(
          'section',
          { class: 'images', id: 'images' },
          h('h3', {}, `Images (${images.length})`),
          h('div', { class: 'image-strip' }, ...images.map(figure)),
        )
      : undefined,
    branches.length ? branchList(branches, record, actions) : undefined,
    h(
      'section',
      { class: 'turns' },
      h('h3', {}, `Turns (${record.turns.length})`),
      ...record.turns.map((turn) => turnView(turn, images, figure)),
    ),
    tokens,
  );
}

/** The trajectory's re-roll branches (never training data): where each was cut, what it changed, its rewards, where it diverges. */
function branchList(branches: readonly BranchSummary[], record: TrajectoryRecord, actions: DetailActions): HTMLElement {
  const rows = branches.map((b) => {
    const from = b.cut.at === 'call' ? `before turn ${b.cut.turn}'s results` : `turn ${b.cut.turn}`;
    const edits = b.edits.length
      ? b.edits
          .map((e) =>
            e.kind === 'result'
              ? `result of call ${e.call} edited`
              : e.kind === 'arguments'
                ? `arguments of call ${e.call} edited`
                : `${e.role} message inserted`,
          )
          .join(', ')
      : 'no edit';
    const diverges = b.firstDivergence === null ? 'identical' : `diverges at token ${b.firstDivergence}`;
    const delta = b.rewards.total - record.rewards.total;
    return h(
      'li',
      { class: 'branch', 'data-branch': `${b.id}/${b.branch}` },
      h('span', { class: 'branch-name' }, `branch ${b.branch}`),
      h('span', {}, ` from ${from} · ${edits} · ${b.checkpoint} · T ${b.temperature} · `),
      h(
        'span',
        { class: 'branch-reward' },
        `total ${formatMetricValue(b.rewards.total)} (${delta >= 0 ? '+' : ''}${formatMetricValue(delta)}) · outcome ${formatMetricValue(b.rewards.outcome)} · process ${formatMetricValue(b.rewards.process)}`,
      ),
      h('span', { class: 'muted' }, ` · ${b.finishReason} · ${diverges} `),
      actions.showBranch ? button('Compare', () => actions.showBranch!(b.id, b.branch), 'secondary') : undefined,
      actions.replayBranch && b.branch === 0
        ? button('Replay', () => actions.replayBranch!(b.id), 'secondary')
        : undefined,
    );
  });
  return h(
    'section',
    { class: 'branches', id: 'branches' },
    h('h3', {}, `Branches (${branches.length})`),
    h('ul', { class: 'branch-list' }, ...rows),
  );
}

function pair(term: string, value: string, key: string): HTMLElement[] {
  return [h('dt', {}, term), h('dd', { 'data-field': key }, value)];
}

/** An image with what it was: where it came from, its size and its tokens. The page loads it from the run directory (or says why not). */
function imageFigure(image: TrajectoryImageRecord, uri: string | undefined): HTMLElement {
  const origin = image.from.kind === 'prompt' ? 'prompt' : `tool call ${image.from.call} of turn ${image.from.turn}`;
  const caption = `${origin} · ${image.width}×${image.height} ${image.format} · ${image.tokens} tokens at ${image.tokenStart}`;
  return h(
    'figure',
    { class: 'trajectory-image', 'data-sha256': image.sha256, 'data-from': image.from.kind },
    uri
      ? h('img', {
          src: uri,
          alt: `image from the ${origin}, ${image.width}×${image.height}`,
          width: String(Math.min(256, Math.max(128, image.width))),
        })
      : h('p', { class: 'muted' }, `(${image.file} is not available here)`),
    h('figcaption', { class: 'muted' }, caption),
  );
}

function turnView(
  turn: TurnRecord,
  images: readonly TrajectoryImageRecord[],
  figure: (image: TrajectoryImageRecord) => HTMLElement,
): HTMLElement {
  const facts: string[] = [`tokens ${turn.tokenStart}–${turn.tokenEnd}`];
  if (turn.finish) facts.push(`finish: ${turn.finish}`);
  if (turn.logprob) facts.push(`log-prob mean ${turn.logprob.mean.toFixed(3)}, min ${turn.logprob.min.toFixed(3)}`);
  if (turn.entropy) facts.push(`entropy mean ${turn.entropy.mean.toFixed(3)}`);
  return h(
    'article',
    { class: `turn role-${turn.role}`, 'data-turn': String(turn.index) },
    h('header', {}, h('span', { class: 'role' }, turn.role), h('span', { class: 'muted' }, facts.join(' · '))),
    h('pre', { class: 'turn-text' }, turn.text),
    ...(turn.toolCalls ?? []).map((call) =>
      toolCallView(
        call,
        images
          .filter((im) => im.from.kind === 'tool' && im.from.turn === turn.index && im.from.call === call.index)
          .map(figure),
      ),
    ),
  );
}

function toolCallView(call: ToolCallRecord, images: HTMLElement[] = []): HTMLElement {
  const facts = [
    `${formatMetricValue(call.latencyMs, 1)} ms`,
    `process reward ${formatMetricValue(call.processReward)}`,
  ];
  if (call.truncated) facts.push('result truncated');
  return h(
    'div',
    { class: `tool-call${call.error ? ' failed' : ''}`, 'data-error-kind': call.error?.kind },
    h(
      'header',
      {},
      h('span', { class: 'tool-name' }, call.name ?? '(unparsed call)'),
      call.error ? tag(call.error.kind) : undefined,
      h('span', { class: 'muted' }, facts.join(' · ')),
    ),
    h('div', { class: 'label' }, call.arguments !== undefined ? 'Arguments' : 'Raw call'),
    h('pre', { class: 'tool-args' }, call.arguments !== undefined ? JSON.stringify(call.arguments, null, 2) : call.raw),
    call.error
      ? h(
          'div',
          { class: 'tool-error' },
          h('div', { class: 'label' }, `Error (${call.error.kind})`),
          h('pre', { class: 'error-message' }, call.error.message),
          h('div', { class: 'label' }, 'Observation shown to the policy'),
          h('pre', { class: 'observation' }, call.observation),
        )
      : h(
          'div',
          { class: 'tool-result' },
          h('div', { class: 'label' }, 'Result'),
          ...(images.length ? [h('div', { class: 'image-strip' }, ...images)] : []),
          h('pre', { class: 'observation' }, call.observation),
        ),
  );
}
