/**
 * What a tool returns: the observation the policy will see — text, and for a vision-language
 * policy images (`{ type: 'image', data, mimeType }`, as MCP tools return them). `data` is for
 * the program, never shown to the policy: a search tool puts the ids of the documents it
 * returned there, and its process reward reads them.
 */

export interface TextContent {
  type: 'text';
  text: string;
}

/** An image the policy sees: PNG, JPEG or WebP bytes, or their base64 (MCP's image content). */
export interface ImageContent {
  type: 'image';
  data: Uint8Array | string;
  mimeType?: string | undefined;
}

/** One part of an observation. */
export type ToolContent = TextContent | ImageContent;

export interface ToolResult<Data = unknown> {
  content: ToolContent[];
  data?: Data;
}

/** `execute` may return plain text, or a result with content parts and data. */
export type ToolOutput<Data = unknown> = string | ToolResult<Data>;

export function textResult<Data>(text: string, data?: Data): ToolResult<Data> {
  return data === undefined ? { content: [{ type: 'text', text }] } : { content: [{ type: 'text', text }], data };
}

/**
 * The most text a call may return, all content parts together. The policy sees at most
 * `budget.maxToolResultTokens` of it, but the whole text is tokenized to cut it there: a tool that
 * returns a hundred megabytes (a whole file, a runaway loop) would stall the rollout for minutes.
 * A longer result fails the call (`threw`), naming its size.
 */
export const MAX_TOOL_TEXT_CHARS = 1_000_000;

function checkSize(toolName: string, result: ToolResult): ToolResult {
  const chars = result.content.reduce((n, part) => n + (part.type === 'text' ? part.text.length : 0), 0);
  if (chars > MAX_TOOL_TEXT_CHARS) {
    throw new RangeError(
      `tool "${toolName}" returned ${chars.toLocaleString('en-US')} characters of text; the limit is ${MAX_TOOL_TEXT_CHARS.toLocaleString('en-US')} (the policy is shown at most budget.maxToolResultTokens of it): return less, e.g. the top results only`,
    );
  }
  return result;
}

/**
 * Checks what a tool returned (it is user code: anything can come back) and brings it to the
 * `ToolResult` shape. Throws a TypeError saying what was expected (a RangeError for text over
 * MAX_TOOL_TEXT_CHARS); the runner records it as the call's `threw` error.
 */
export function normalizeToolOutput(toolName: string, output: unknown): ToolResult {
  if (typeof output === 'string') return checkSize(toolName, textResult(output));
  const shape =
    'a string or { content: [{ type: "text", text } | { type: "image", data: Uint8Array | base64 string }], data? }';
  if (typeof output !== 'object' || output === null || !Array.isArray((output as ToolResult).content)) {
    throw new TypeError(`tool "${toolName}" returned ${describeValue(output)}; expected ${shape}`);
  }
  const content = (output as ToolResult).content;
  content.forEach((part, i) => {
    const type = typeof part === 'object' && part !== null ? (part as { type?: unknown }).type : undefined;
    if (type === 'text' && typeof (part as TextContent).text === 'string') return;
    if (type === 'image') {
      const data = (part as ImageContent).data;
      if (data instanceof Uint8Array || (typeof data === 'string' && data.length > 0)) return;
      throw new TypeError(
        `tool "${toolName}" returned content[${i}], an image whose data is ${describeValue(data)}; expected PNG, JPEG or WebP bytes (a Uint8Array or Buffer) or their base64`,
      );
    }
    throw new TypeError(
      `tool "${toolName}" returned content[${i}] = ${describeValue(part)}; expected { type: "text", text: string } or { type: "image", data }`,
    );
  });
  return checkSize(toolName, output as ToolResult);
}

/** The observation text of a result: its text parts, one after another. */
export function observationText(result: ToolResult): string {
  return result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** The image parts of a result, in order. */
export function observationImages(result: ToolResult): ImageContent[] {
  return result.content.filter((part): part is ImageContent => part.type === 'image');
}

export function imageResult<Data>(
  images: readonly (Uint8Array | string)[],
  text: string,
  data?: Data,
): ToolResult<Data> {
  const content: ToolContent[] = [
    ...images.map((image) => ({ type: 'image' as const, data: image })),
    { type: 'text', text },
  ];
  return data === undefined ? { content } : { content, data };
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object with keys ${JSON.stringify(Object.keys(value))}`;
  return `a ${typeof value} (${String(value).slice(0, 40)})`;
}
