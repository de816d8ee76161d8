/** MCP result content as observations: text as it is, binary blocks as a note, images kept apart in `data`. */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { errorText, imageBlocks, toToolResult } from '#trainer/foundations/mcp/content';
import { observationText } from '#trainer/foundations/tools/result';

describe('MCP content as observations', () => {
  it('keeps text, notes images, audio and resources, and keeps the images and structured content as data', () => {
    const content = [
      { type: 'text', text: 'found 2' },
      { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inside a' } },
      { type: 'resource', resource: { uri: 'file:///b.bin', mimeType: 'application/octet-stream', blob: 'AAAAAAAA' } },
      { type: 'resource_link', uri: 'file:///c', name: 'c' },
      { type: 'audio', mimeType: 'audio/wav', data: 'AA==' },
    ];
    const result = toToolResult(content, { count: 2 });
    assert.equal(
      observationText(result),
      'found 2\n[image image/png, 3 bytes]\ninside a\n[resource file:///b.bin (application/octet-stream), 6 bytes]\n[resource file:///c "c"]\n[audio audio/wav, 1 bytes]',
    );
    assert.deepEqual(result.data, {
      structuredContent: { count: 2 },
      images: [{ mimeType: 'image/png', data: 'AAAA' }],
    });
    assert.deepEqual(imageBlocks(content), [{ mimeType: 'image/png', data: 'AAAA' }]);
  });

  it('shows structured content as JSON when there are no blocks', () => {
    assert.equal(observationText(toToolResult([], { a: 1 })), '{"a":1}');
    assert.equal(toToolResult([{ type: 'text', text: 'x' }]).data, undefined);
  });

  it("an error result's text, or a note that there was none", () => {
    assert.equal(errorText([{ type: 'text', text: ' no such file ' }]), 'no such file');
    assert.equal(errorText([]), 'the tool reported an error and gave no text');
  });
});
