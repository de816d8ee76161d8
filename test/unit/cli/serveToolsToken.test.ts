/**
 * Where serve-tools takes its token from: a --token-file that is empty (or only whitespace) is an
 * error naming the file, never a server without a token.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readToken, TOKEN_VARIABLE } from '#trainer/bridges/cli/commands/serveToolsCommand';
import { UsageError } from '#trainer/bridges/cli/usage';

let dir: string;
let saved: string | undefined;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'token-file-'));
  saved = process.env[TOKEN_VARIABLE];
  delete process.env[TOKEN_VARIABLE];
});
afterEach(() => {
  if (saved === undefined) delete process.env[TOKEN_VARIABLE];
  else process.env[TOKEN_VARIABLE] = saved;
  fs.rmSync(dir, { recursive: true, force: true });
});

function tokenFile(content: string): string {
  const file = path.join(dir, 'token');
  fs.writeFileSync(file, content);
  return file;
}

describe('serve-tools --token-file', () => {
  it('reads the first line, trimmed', () => {
    assert.equal(readToken(tokenFile('  0123456789abcdef \nsecond line\n'), undefined), '0123456789abcdef');
  });

  for (const [what, content] of [
    ['empty', ''],
    ['only a line break', '\n'],
    ['only whitespace', ' \t \r\n'],
    ['an empty first line', '\n0123456789abcdef\n'],
  ] as const) {
    it(`refuses a file that is ${what}, naming the file, even with ${TOKEN_VARIABLE} set`, () => {
      process.env[TOKEN_VARIABLE] = 'token-from-environment';
      const file = tokenFile(content);
      assert.throws(
        () => readToken(file, undefined),
        (error: Error) =>
          error instanceof UsageError &&
          error.message.includes(`token file ${file} is empty`) &&
          error.message.includes('openssl rand -hex 16'),
      );
    });
  }

  it('without a file, an unset or empty variable still means no token (the loopback default)', () => {
    assert.equal(readToken(undefined, undefined), undefined);
    process.env[TOKEN_VARIABLE] = '';
    assert.equal(readToken(undefined, undefined), undefined);
  });
});
