import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ChatMessage } from '../../../contract/protocol/chatMessages';
import { contentStart, type ParsedToolCall, type StopConditions, type ToolCallFormat } from './toolCallFormat';

export interface CodeBlockFormatOptions {
  /** The code tool that runs each block (default `run_javascript`, the built-in JavaScriptTool). */
  toolName?: string;
  /** The argument the code goes into (default `code`). */
  argument?: string;
  /** Fence languages that mean "run this" (default `javascript`, `js`). Other fences are plain text. */
  languages?: readonly string[];
}

/**
 * ReTool-style code execution: every fenced block of a runnable language in the turn's answer
 * part is a call of the code tool with the block's code; its output comes back as a tool
 * message. The turn ends at the end-of-turn token like any other, so a turn with several blocks
 * runs them all (concurrently, each in its own sandbox).
 *
 * The turn is kept in the history as written (the blocks stay in the content): templates know
 * nothing of this convention, so there is nothing to move into `tool_calls`.
 */
export class CodeBlockFormat implements ToolCallFormat {
  readonly name = 'code-block';
  private readonly toolName: string;
  private readonly argument: string;
  private readonly languages: Set<string>;

  constructor(options: CodeBlockFormatOptions = {}) {
    this.toolName = options.toolName ?? 'run_javascript';
    this.argument = options.argument ?? 'code';
    this.languages = new Set((options.languages ?? ['javascript', 'js']).map((l) => l.toLowerCase()));
  }

  stopConditions(_tokenizer: Tokenizer): StopConditions {
    return { tokenIds: [], strings: [] };
  }

  parse(text: string): ParsedToolCall[] {
    const calls: ParsedToolCall[] = [];
    // An opening fence at the start of a line: ``` + language + end of line.
    const opening = /(^|\n)```([A-Za-z0-9_+-]*)[ \t]*\n/g;
    opening.lastIndex = contentStart(text);
    for (let match = opening.exec(text); match; match = opening.exec(text)) {
      const start = match.index + match[1].length;
      const codeStart = match.index + match[0].length;
      const closeAt = text.indexOf('```', codeStart);
      const runnable = this.languages.has(match[2].toLowerCase());
      if (closeAt < 0) {
        if (runnable)
          calls.push({
            start,
            end: text.length,
            raw: text.slice(codeStart),
            parseError: 'the code block is not closed with ```',
          });
        break;
      }
      const end = closeAt + 3;
      if (runnable) {
        const code = text.slice(codeStart, closeAt).replace(/\n$/, '');
        calls.push({ start, end, raw: code, name: this.toolName, arguments: { [this.argument]: code } });
      }
      opening.lastIndex = end;
    }
    return calls;
  }

  assistantMessage(text: string): ChatMessage {
    return { role: 'assistant', content: text };
  }
}
