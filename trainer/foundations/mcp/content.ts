import type { ToolResult } from '../tools/result';

/**
 * What an MCP tool result becomes: the observation the policy sees. MCP results are lists of
 * content blocks (text, image, audio, resource links, embedded resources) plus, optionally,
 * `structuredContent`.
 *
 * Today observations are text, so every block is written as text: text as it is, a resource's
 * text as it is, anything binary as a one-line note of what it was. Images are the one kind that
 * will become real observation content (vision-language agents): `imageBlocks` keeps them apart
 * so that change is one line in `toToolResult`.
 */

export interface McpContentBlock {
  type: string;
  [key: string]: unknown;
}

export interface McpImage {
  mimeType: string;
  /** base64, as MCP carries it. */
  data: string;
}

/** The image blocks of a result (for when observations can hold images). */
export function imageBlocks(content: readonly McpContentBlock[]): McpImage[] {
  return content
    .filter((b) => b.type === 'image' && typeof b['data'] === 'string')
    .map((b) => ({ mimeType: String(b['mimeType'] ?? 'image/png'), data: b['data'] as string }));
}

function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  // A loop, not /=+$/: that one is quadratic on a server's long run of '=' followed by anything else.
  let length = data.length;
  while (length > 0 && data[length - 1] === '=') length--;
  return Math.floor((length * 3) / 4);
}

/** One block as observation text. */
export function blockText(block: McpContentBlock): string {
  switch (block.type) {
    case 'text':
      return String(block['text'] ?? '');
    case 'image':
    case 'audio':
      // Not shown to a text policy; issue 19 (vision) turns images into real observation content.
      return `[${block.type} ${String(block['mimeType'] ?? '')}, ${base64Bytes(block['data'])} bytes]`;
    case 'resource': {
      const resource = (block['resource'] ?? {}) as Record<string, unknown>;
      if (typeof resource['text'] === 'string') return resource['text'];
      return `[resource ${String(resource['uri'] ?? '')}${resource['mimeType'] ? ` (${String(resource['mimeType'])})` : ''}, ${base64Bytes(resource['blob'])} bytes]`;
    }
    case 'resource_link':
      return `[resource ${String(block['uri'] ?? '')}${block['name'] ? ` "${String(block['name'])}"` : ''}]`;
    default:
      return `[${block.type} content]`;
  }
}

/**
 * A successful result as our ToolResult: the blocks as text parts, and for the program (`data`)
 * the structured content and the images. A result with no blocks but structured content shows
 * that content as JSON (the spec's advice for backwards compatibility).
 */
export function toToolResult(content: readonly McpContentBlock[], structuredContent?: unknown): ToolResult {
  const parts = content.map((block) => ({ type: 'text' as const, text: blockText(block) }));
  if (parts.length === 0 && structuredContent !== undefined)
    parts.push({ type: 'text', text: JSON.stringify(structuredContent) });
  const images = imageBlocks(content);
  const data = {
    ...(structuredContent !== undefined ? { structuredContent } : {}),
    ...(images.length ? { images } : {}),
  };
  return Object.keys(data).length ? { content: parts, data } : { content: parts };
}

/** The text of an error result (`isError: true`): what the tool said went wrong. */
export function errorText(content: readonly McpContentBlock[]): string {
  const text = content.map(blockText).join('\n').trim();
  return text || 'the tool reported an error and gave no text';
}
