/**
 * The protocol version is written in one place on the editor's side: extension/protocolStamp.ts,
 * called by the send helpers. No other file of extension/ or webview/ stamps a message by hand.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stamped } from '../../../extension/protocolStamp';
import { ControlMessage, parseWith, PROTOCOL_VERSION } from '#trainer/contract/protocol';

const root = path.resolve(__dirname, '..', '..', '..');
const STAMPING_MODULE = 'extension/protocolStamp.ts';
const HAND_STAMP = /protocol\s*:\s*PROTOCOL_VERSION/;

function sources(dir: string): string[] {
  return (fs.readdirSync(path.join(root, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')));
}

describe('the protocol stamp', () => {
  it('no file in extension/ or webview/ but the stamping module writes `protocol: PROTOCOL_VERSION`', () => {
    const stamping = [...sources('extension'), ...sources('webview')].filter((file) =>
      HAND_STAMP.test(fs.readFileSync(path.join(root, file), 'utf8')),
    );
    assert.deepEqual(stamping, [STAMPING_MODULE]);
  });

  it('the check sees a hand-stamped message (a planted one)', () => {
    assert.ok(HAND_STAMP.test("send({ protocol: PROTOCOL_VERSION, type: 'stop' })"));
    assert.ok(HAND_STAMP.test('const m = {\n  protocol:PROTOCOL_VERSION,\n};'));
  });

  it('stamps the version a message needs to pass the trainer’s check', () => {
    const message = stamped<ControlMessage>({ type: 'debug.release', id: 3 });
    assert.deepEqual(message, { type: 'debug.release', id: 3, protocol: PROTOCOL_VERSION });
    assert.deepEqual(parseWith(ControlMessage, message, 'a control message'), message);
  });
});
