import { z } from 'zod';
import { ChatMessage } from './chatMessages';

/**
 * A demonstration for the supervised warm start (`sft.data` of a training config): one JSON
 * object per line of a JSONL file, laid out as a rollout of the agent loop would be —
 *
 *   { "id": "q-7",                                                   (optional)
 *     "messages": [
 *       { "role": "system", "content": "…" },                        (optional)
 *       { "role": "user", "content": "What is 909 * 893?" },
 *       { "role": "assistant", "content": "",
 *         "tool_calls": [{ "type": "function", "function": { "name": "calculator", "arguments": { "expression": "909 * 893" } } }] },
 *       { "role": "tool", "name": "calculator", "content": "811737" },
 *       { "role": "assistant", "content": "<answer>811737</answer>" } ] }
 *
 * The prompt (system and user messages, ending with a user message), then assistant turns: a
 * turn that calls tools is followed by one `tool` message per call, in the order of its
 * `tool_calls` (a `name`, when given, is the call's); the last message is the assistant's
 * answer, with no calls. Other fields of the line are kept as they are (a generator's notes).
 * The warm start trains on the assistant turns only, token-exact as the agent loop lays them out
 * (see rollout/tokenizeDemonstration.ts); tool names and arguments are checked against the config's
 * tools when the file is loaded (data/demonstrations.ts).
 */
export const Demonstration = z
  .looseObject({
    id: z.union([z.string().min(1), z.number().int()]).optional(),
    messages: z.array(ChatMessage).min(2),
  })
  .superRefine((value, ctx) => {
    for (const problem of conversationProblems(value.messages))
      ctx.addIssue({ code: 'custom', path: ['messages', ...problem.path], message: problem.message });
  });
export type Demonstration = z.output<typeof Demonstration>;

/** What is wrong with a demonstration's turn order, each problem at the message it is about. */
function conversationProblems(messages: readonly ChatMessage[]): Array<{ path: (string | number)[]; message: string }> {
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  if (firstAssistant < 0)
    return [{ path: [], message: 'expected the prompt followed by assistant turns; there is no assistant message' }];
  for (let k = 0; k < firstAssistant; k++) {
    const role = messages[k].role;
    if (role !== 'system' && role !== 'user')
      return [
        {
          path: [k, 'role'],
          message: `the prompt before the first assistant message holds system and user messages, got "${role}"`,
        },
      ];
  }
  if (firstAssistant === 0 || messages[firstAssistant - 1].role !== 'user') {
    return [
      {
        path: [firstAssistant],
        message: 'the first assistant message must follow a user message (the prompt ends with the question)',
      },
    ];
  }
  let k = firstAssistant;
  while (k < messages.length) {
    const turn = messages[k];
    if (turn.role !== 'assistant')
      return [{ path: [k, 'role'], message: `expected an assistant message, got "${turn.role}"` }];
    const calls = turn.tool_calls ?? [];
    if (calls.length === 0) {
      if (k !== messages.length - 1)
        return [
          {
            path: [k + 1],
            message:
              'nothing may follow an assistant message without tool_calls: it is the answer, and ends the demonstration',
          },
        ];
      return [];
    }
    for (let c = 0; c < calls.length; c++) {
      const at = k + 1 + c;
      const answer = messages[at];
      const call = calls[c].function.name;
      if (answer?.role !== 'tool') {
        return [
          {
            path: answer ? [at, 'role'] : [],
            message: `expected a "tool" message with the result of messages.${k}.tool_calls.${c} (${call})${answer ? `, got "${answer.role}"` : '; the demonstration ends before it'}`,
          },
        ];
      }
      if (answer.name !== undefined && answer.name !== call)
        return [
          {
            path: [at, 'name'],
            message: `the result of messages.${k}.tool_calls.${c} is named "${answer.name}"; the call was to "${call}"`,
          },
        ];
    }
    k += 1 + calls.length;
    if (k === messages.length)
      return [
        {
          path: [k - 1],
          message: 'the demonstration must end with the assistant answering (a message without tool_calls)',
        },
      ];
  }
  return [];
}
