/** What run.json records of a config's MCP servers: no secrets from URLs or command lines (issue 36, item 4). */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  describeServer,
  maskServerSecrets,
  McpServerConfig,
  McpServersConfig,
  recordableServers,
} from '#trainer/foundations/mcp/mcpConfig';
import { maskSecrets, redactArguments, redactUrl } from '#trainer/foundations/mcp/redactSecrets';
import { exactMatch } from '#trainer/pipeline/rewards';
import { hashable, parseConfig } from '#trainer/pipeline/training/config/trainingConfig';

/** Fake secrets of each shape, made at run time so that no scanner mistakes this file for a leak. */
const fake = (prefix: string, n = 36) => `${prefix}${'a1B2'.repeat(Math.ceil(n / 4)).slice(0, n)}`;
const JWT = `eyJ${fake('', 20)}.${fake('eyJ', 24)}.${fake('', 43)}`;

/** Issue 53, item 4: each form a secret takes on a command line, and what run.json records of it. */
const COMMAND_LINE_SECRETS: Array<[what: string, args: string[], recorded: string[]]> = [
  [
    '--header=Authorization: Bearer …',
    ['--header=Authorization: Bearer s3cr3t-value'],
    ['--header=Authorization: ***'],
  ],
  ["-H 'Authorization: …'", ['-H', 'Authorization: Basic dXNlcjpwYXNz'], ['-H', 'Authorization: ***']],
  ['-p X', ['mysql', '-u', 'root', '-p', 'hunter2'], ['mysql', '-u', 'root', '-p', '***']],
  ['--password X', ['--password', 'hunter2'], ['--password', '***']],
  ['a JWT alone', [JWT], ['***']],
  ['a JWT inside an argument', [`--data={"jwt": "${JWT}"}`], ['--data={"jwt": "***"}']],
  ['Cookie:', ['-H', 'Cookie: session=abc123'], ['-H', 'Cookie: ***']],
  ['Set-Cookie:', ['Set-Cookie: id=abc123; HttpOnly'], ['Set-Cookie: ***']],
  ['--header=Cookie: …', ['--header=Cookie: id=abc123'], ['--header=Cookie: ***']],
  [
    'a connection string',
    ['postgres://app:hunter2@db.internal:5432/main'],
    ['postgres://***:***@db.internal:5432/main'],
  ],
  [
    'a connection string as a value',
    ['--db=mongodb+srv://app:hunter2@c0.example.net/x'],
    ['--db=mongodb+srv://***:***@c0.example.net/x'],
  ],
  ['a GitHub token', [fake('ghp_')], ['***']],
  ['a fine-grained GitHub token', [fake('github_pat_', 60)], ['***']],
  ['an OpenAI-style key', [fake('sk-', 40)], ['***']],
  ['a Hugging Face token', [fake('hf_', 34)], ['***']],
  ['a Slack token', [fake('xoxb-', 30), fake('xoxa-', 30), fake('xoxp-', 30)], ['***', '***', '***']],
  ['an AWS key id', [`AKIA${'ABCD2345'.repeat(2)}`], ['***']],
  ['a GitLab token', [fake('glpat-', 20)], ['***']],
  ['a token inside a longer argument', [`--note=use ${fake('ghp_')} here`], ['--note=use *** here']],
];

describe('secrets are not recorded', () => {
  for (const [what, args, recorded] of COMMAND_LINE_SECRETS) {
    it(`a command line: ${what}`, () => {
      const found = new Set<string>();
      assert.deepEqual(redactArguments(args, found), recorded);
      assert.ok(found.size > 0, 'the secret is noted, so messages quoting it are masked too');
    });
  }

  it('a URL keeps its host and path; its user, password and credential query values go', () => {
    assert.equal(
      redactUrl('https://alice:hunter2@mcp.example.com/v1?token=abc&region=eu'),
      'https://***:***@mcp.example.com/v1?token=***&region=eu',
    );
    assert.equal(
      redactUrl('https://mcp.example.com/sse?api_key=k1&access_token=t1&X-Amz-Signature=s1&page=2'),
      'https://mcp.example.com/sse?api_key=***&access_token=***&X-Amz-Signature=***&page=2',
    );
    const clean = 'http://localhost:8808/mcp?page=2';
    assert.equal(redactUrl(clean), clean, 'nothing to redact: the very string');
    assert.equal(redactUrl('not a url'), 'not a url');
  });

  it('a command line keeps its paths and options; credential flags, NAME=value credentials and URLs in it are redacted', () => {
    assert.deepEqual(
      redactArguments([
        'server.js',
        '--api-key',
        'sk-123',
        '--token=abc',
        '--port',
        '3000',
        'GITHUB_TOKEN=ghp_x',
        'https://u:p@h.example/x',
        './docs',
        '--keyboard',
        'us',
      ]),
      [
        'server.js',
        '--api-key',
        '***',
        '--token=***',
        '--port',
        '3000',
        'GITHUB_TOKEN=***',
        'https://***:***@h.example/x',
        './docs',
        '--keyboard',
        'us',
      ],
    );
    assert.deepEqual(
      redactArguments(['--secret']),
      ['--secret'],
      'a flag with no value after it has nothing to redact',
    );
  });

  it('run.json: env and header values are dropped (their names kept), and a server with no secret is recorded as written, the same shape as before', () => {
    const servers = McpServersConfig.parse({
      files: { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', './docs'], env: { HOME_DIR: '/x' } },
      search: { url: 'https://search.example/mcp?key=k9', headers: { Authorization: 'Bearer t' } },
    });
    const recorded = recordableServers(servers) as Record<string, Record<string, unknown>>;
    assert.deepEqual(
      { command: recorded.files.command, args: recorded.files.args, env: recorded.files.env },
      { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', './docs'], env: ['HOME_DIR'] },
    );
    // The shape run.json had before redaction: the config's fields in order, env (or headers) last.
    const { env: _env, ...files } = servers.files as Record<string, unknown>;
    assert.deepEqual(Object.keys(recorded.files), [...Object.keys(files), 'env']);
    assert.equal(recorded.search.url, 'https://search.example/mcp?key=***');
    assert.deepEqual(recorded.search.headers, ['Authorization']);
    assert.doesNotMatch(JSON.stringify(recorded), /k9|Bearer t|\/x"/);
  });

  it('camelCase names, OAuth fragments, well-known token shapes and URLs in NAME=value are caught too', () => {
    assert.equal(
      redactUrl('https://h.example/mcp?authToken=t1&clientSecret=c1&q=cats'),
      'https://h.example/mcp?authToken=***&clientSecret=***&q=cats',
    );
    assert.equal(
      redactUrl('https://h.example/cb#access_token=t2&state=1'),
      'https://h.example/cb#access_token=***&state=1',
    );
    const hf = `hf_${'a'.repeat(34)}`;
    assert.equal(redactUrl(`https://h.example/mcp?u=${hf}`), 'https://h.example/mcp?u=***');
    assert.deepEqual(
      redactArguments([
        `ghp_${'b'.repeat(36)}`,
        `--url=https://u:p@h.example/mcp`,
        `ENDPOINT=https://h.example/mcp?token=t3`,
        `MODEL=${hf}`,
        '--keyword',
        'cats',
      ]),
      [
        '***',
        '--url=https://***:***@h.example/mcp',
        'ENDPOINT=https://h.example/mcp?token=***',
        'MODEL=***',
        '--keyword',
        'cats',
      ],
    );
  });
});

describe("other programs' messages about a server", () => {
  it('a header on the command line (mcp-remote --header) is redacted; other colons are not', () => {
    assert.deepEqual(
      redactArguments([
        'mcp-remote',
        'https://h.example/mcp',
        '--header',
        'Authorization: Bearer abc123xyz',
        '--header',
        'X-Api-Key:k-42',
        '--header',
        'Accept: text/plain',
        'C:\\tools',
      ]),
      [
        'mcp-remote',
        'https://h.example/mcp',
        '--header',
        'Authorization: ***',
        '--header',
        'X-Api-Key: ***',
        '--header',
        'Accept: text/plain',
        'C:\\tools',
      ],
    );
  });

  it('masks the whole URL as describeServer writes it, and each secret wherever else it appears, decoded too', () => {
    const server = McpServerConfig.parse({
      url: 'https://bob:p%40ss-word@h.example/mcp?token=tok-1234&team=7',
      headers: { Authorization: 'Bearer hdr-5678', Accept: 'text/plain' },
    });
    const text = maskServerSecrets(
      'Request cannot be constructed from a URL that includes credentials: https://bob:p%40ss-word@h.example/mcp?token=tok-1234&team=7; the server said p@ss-word, tok-1234 and hdr-5678 (Accept: text/plain)',
      server,
    );
    assert.equal(
      text,
      `Request cannot be constructed from a URL that includes credentials: ${describeServer('w', server).slice('MCP server "w" ('.length, -1)}; the server said ***, *** and *** (Accept: text/plain)`,
    );
    assert.match(text, /https:\/\/\*\*\*:\*\*\*@h\.example\/mcp\?token=\*\*\*&team=7/);
  });

  it('a stdio server: its credential arguments and env values, not values too short to mean anything', () => {
    const server = McpServerConfig.parse({
      command: 'node',
      args: ['s.js', '--token', 'abcd1234', '--level', '2'],
      env: { API_TOKEN: 'env-secret-9', LEVEL: 'verbose-mode' },
    });
    assert.equal(
      maskServerSecrets('argv: s.js --token abcd1234 --level 2; token env-secret-9, level verbose-mode', server),
      'argv: s.js --token *** --level 2; token ***, level verbose-mode',
    );
    assert.equal(maskSecrets('a 1 on', ['1', 'on']), 'a 1 on', 'values under four characters are left');
  });
});

describe('what a run records and says of its MCP servers', () => {
  const SECRET = 'hunter2-SECRET';
  const withSecrets = {
    web: {
      url: `https://bot:${SECRET}@mcp.example.com/mcp?session_token=${SECRET}&team=7`,
      headers: { Authorization: `Bearer ${SECRET}` },
    },
    gh: {
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-github', '--personal-access-token', SECRET],
      env: { GITHUB_TOKEN: SECRET },
    },
  };
  const configWith = (mcpServers: Record<string, unknown>) =>
    parseConfig(
      {
        model: { path: 'model', lora: false },
        data: { train: 'train.jsonl' },
        rewards: { outcome: [exactMatch()] },
        steps: 10,
        algorithm: { name: 'grpo' },
        mcpServers,
      },
      'a.config.ts',
    );

  it("the config's record in run.json (and the hash a resume checks) holds no secret, and a rotated token leaves it unchanged", () => {
    const recorded = JSON.stringify(hashable(configWith(withSecrets)));
    assert.ok(!recorded.includes(SECRET), recorded);
    assert.match(recorded, /mcp\.example\.com\/mcp\?session_token=\*\*\*&team=7/);
    const rotated = JSON.parse(JSON.stringify(withSecrets).replaceAll(SECRET, 'a-new-token')) as Record<
      string,
      unknown
    >;
    assert.equal(JSON.stringify(hashable(configWith(rotated))), recorded);
  });

  it('messages naming a server (its start failing, its calls failing) carry no secret', () => {
    const text =
      describeServer('web', McpServerConfig.parse(withSecrets.web)) +
      describeServer('gh', McpServerConfig.parse(withSecrets.gh));
    assert.ok(!text.includes(SECRET), text);
    assert.match(text, /MCP server "web" \(https:\/\/\*\*\*:\*\*\*@mcp\.example\.com\/mcp/);
    assert.match(text, /server-github --personal-access-token \*\*\*\)/);
  });
});
