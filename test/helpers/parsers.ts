import { splitVerlResponse } from '#trainer/bridges/verl/response';
import { hostNameOf } from '#trainer/foundations/http/requestGuard';
import { blockText } from '#trainer/foundations/mcp/content';
import { answerTag } from '#trainer/pipeline/rewards/answer';
import { normalizeAnswer } from '#trainer/pipeline/rewards/answerText';
import { CodeBlockFormat } from '#trainer/pipeline/rollout/formats/codeBlock';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { contentStart } from '#trainer/pipeline/rollout/formats/toolCallFormat';
import { splitReasoning } from '#trainer/pipeline/rollout/gateway/assistantAnswer';
import { parseArguments, readChatRequest } from '#trainer/pipeline/rollout/gateway/chatRequest';
import { decodeBase64 } from '#trainer/pipeline/rollout/images';
import { readErrorObservation } from '#trainer/pipeline/rollout/readErrorObservation';
import type { Trajectory } from '#trainer/pipeline/rollout/trajectory';

/**
 * Every reader of untrusted text — what a policy wrote, what a client sent, what a tool or an MCP
 * server answered — by name, each taking the text alone, for the linear-time tests to run in a
 * worker (test/helpers/parseDeadline.ts). Errors the readers throw on bad input are their
 * answers, not failures: only the time counts.
 */
export const PARSERS: Record<string, (text: string) => unknown> = {
  hermes: (text) => new HermesFormat().parse(text),
  'hermes history message': (text) => {
    const format = new HermesFormat();
    return format.assistantMessage(text, format.parse(text));
  },
  'code blocks': (text) => new CodeBlockFormat().parse(text),
  'thinking split (contentStart)': (text) => contentStart(text),
  'thinking split (splitReasoning)': (text) => splitReasoning(text),
  'verl response': (text) => splitVerlResponse(text),
  'answer tag': (text) => answerTag(assistantTurn(text)),
  'answer normalisation': (text) => normalizeAnswer(text),
  'error observation': (text) => readErrorObservation(text),
  'base64 image': (text) => quietly(() => decodeBase64(text, 'image')),
  'MCP image block': (text) => blockText({ type: 'image', data: text, mimeType: 'image/png' }),
  'Host header': (text) => hostNameOf(text),
  'call arguments': (text) => parseArguments(text),
  'chat request': (text) =>
    quietly(() =>
      readChatRequest({ model: 'm', messages: [{ role: 'user', content: text }], stop: [text.slice(0, 16) || 'x'] }),
    ),
};

function assistantTurn(content: string): Trajectory<object> {
  return {
    turns: [{ index: 0, role: 'assistant', tokenStart: 0, tokenEnd: 0, content }],
  } as unknown as Trajectory<object>;
}

function quietly(read: () => unknown): unknown {
  try {
    return read();
  } catch (error) {
    return error;
  }
}
