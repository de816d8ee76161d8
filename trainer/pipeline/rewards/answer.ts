import { contentStart } from '../rollout/formats/toolCallFormat';
import { finalContent, type Trajectory } from '../rollout/trajectory';

const OPEN = '<answer>';
const CLOSE = '</answer>';

/** Pulls the final answer out of a trajectory; undefined when there is none. */
export type AnswerExtractor = (trajectory: Trajectory<object>) => string | undefined;

/**
 * The text of the last `<answer>…</answer>` in the final assistant turn's answer part (after its
 * thinking), trimmed. The convention of Search-R1 / Agent-R1 style prompts.
 */
export const answerTag: AnswerExtractor = (trajectory) => {
  const text = finalContent(trajectory);
  const body = text.slice(contentStart(text));
  // indexOf, not a lazy regular expression: that one rescans the rest of the text for every
  // `<answer>` without a closer (quadratic in what the policy wrote).
  let found: string | undefined;
  for (let open = body.indexOf(OPEN); open >= 0;) {
    const close = body.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) break;
    found = body.slice(open + OPEN.length, close);
    open = body.indexOf(OPEN, close + CLOSE.length);
  }
  return found?.trim();
};

/** The whole answer part of the final turn (after thinking), trimmed; for prompts without answer tags. */
export const finalText: AnswerExtractor = (trajectory) => {
  const text = finalContent(trajectory);
  const answer = text.slice(contentStart(text)).trim();
  return answer === '' ? undefined : answer;
};
