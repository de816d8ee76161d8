import { contentStart } from '../rollout/formats/toolCallFormat';
import { finalContent, type Trajectory } from '../rollout/trajectory';

/** Pulls the final answer out of a trajectory; undefined when there is none. */
export type AnswerExtractor = (trajectory: Trajectory<object>) => string | undefined;

/**
 * The text of the last `<answer>…</answer>` in the final assistant turn's answer part (after its
 * thinking), trimmed. The convention of Search-R1 / Agent-R1 style prompts.
 */
export const answerTag: AnswerExtractor = (trajectory) => {
  const text = finalContent(trajectory);
  const body = text.slice(contentStart(text));
  let found: string | undefined;
  for (const match of body.matchAll(/<answer>([\s\S]*?)<\/answer>/g)) found = match[1];
  return found?.trim();
};

/** The whole answer part of the final turn (after thinking), trimmed; for prompts without answer tags. */
export const finalText: AnswerExtractor = (trajectory) => {
  const text = finalContent(trajectory);
  const answer = text.slice(contentStart(text)).trim();
  return answer === '' ? undefined : answer;
};
