/** What run.json records of a config's MCP servers: no secrets from URLs or command lines (issue 36, item 4). */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { McpServersConfig, recordableServers } from '../../../trainer/foundations/mcp/mcpConfig';
import { redactArguments, redactUrl } from '../../../trainer/foundations/mcp/redactSecrets';

describe('secrets are not recorded', () => {
  it('a URL keeps its host and path; its user, password and credential query values go', () => {
    assert.equal(redactUrl('https://alice:hunter2@mcp.example.com/v1?token=abc&region=eu'), 'https://***:***@mcp.example.com/v1?token=***&region=eu');
    assert.equal(redactUrl('https://mcp.example.com/sse?api_key=k1&access_token=t1&X-Amz-Signature=s1&page=2'), 'https://mcp.example.com/sse?api_key=***&access_token=***&X-Amz-Signature=***&page=2');
    const clean = 'http://localhost:8808/mcp?page=2';
    assert.equal(redactUrl(clean), clean, 'nothing to redact: the very string');
    assert.equal(redactUrl('not a url'), 'not a url');
  });

  it('a command line keeps its paths and options; credential flags, NAME=value credentials and URLs in it are redacted', () => {
    assert.deepEqual(
      redactArguments(['server.js', '--api-key', 'sk-123', '--token=abc', '--port', '3000', 'GITHUB_TOKEN=ghp_x', 'https://u:p@h.example/x', './docs', '--keyboard', 'us']),
      ['server.js', '--api-key', '***', '--token=***', '--port', '3000', 'GITHUB_TOKEN=***', 'https://***:***@h.example/x', './docs', '--keyboard', 'us'],
    );
    assert.deepEqual(redactArguments(['--secret']), ['--secret'], 'a flag with no value after it has nothing to redact');
  });

  it('run.json: env and header values are dropped (their names kept), and a server with no secret is recorded as written, the same shape as before', () => {
    const servers = McpServersConfig.parse({
      files: { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', './docs'], env: { HOME_DIR: '/x' } },
      search: { url: 'https://search.example/mcp?key=k9', headers: { Authorization: 'Bearer t' } },
    });
    const recorded = recordableServers(servers) as Record<string, Record<string, unknown>>;
    assert.deepEqual({ command: recorded.files.command, args: recorded.files.args, env: recorded.files.env }, { command: 'npx', args: ['@modelcontextprotocol/server-filesystem', './docs'], env: ['HOME_DIR'] });
    // The shape run.json had before redaction: the config's fields in order, env (or headers) last.
    const { env: _env, ...files } = servers.files as Record<string, unknown>;
    assert.deepEqual(Object.keys(recorded.files), [...Object.keys(files), 'env']);
    assert.equal(recorded.search.url, 'https://search.example/mcp?key=***');
    assert.deepEqual(recorded.search.headers, ['Authorization']);
    assert.doesNotMatch(JSON.stringify(recorded), /k9|Bearer t|\/x"/);
  });
});
