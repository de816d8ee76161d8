/**
 * A client that sends its request a byte now and then (slow loris) cannot hold the chat endpoint's
 * connections: past the headers or the request timeout Node answers 408 and closes; a complete
 * request's answer may take as long as it takes. The backend is a stand-in: no request here gets
 * as far as asking it for an answer.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { boundedServer, DEFAULT_LIMITS } from '#trainer/foundations/http/requestGuard';
import { listen } from '#trainer/foundations/http/localServer';
import {
  startChatServer,
  type ChatBackend,
  type RunningChatServer,
} from '#trainer/pipeline/rollout/gateway/chatServer';
import { slowClient } from '../../helpers/slowClient';

const unused = () => {
  throw new Error('not reached: the request never completes');
};
const backend: ChatBackend = {
  modelIds: () => ['m'],
  authorise: () => {},
  complete: async () => unused(),
  streamDecoder: () => unused(),
  tokenizer: undefined as never,
};

let server: RunningChatServer;
before(async () => {
  server = await startChatServer(backend, {
    host: '127.0.0.1',
    port: 0,
    limits: { headersTimeoutMs: 300, requestTimeoutMs: 600 },
  });
});
after(() => server?.close());

describe('the chat endpoint bounds slow clients', () => {
  it('closes a connection whose headers never end, with 408', async () => {
    const client = await slowClient(server.url, {
      head: 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n',
      drip: 'X-Slow: 1\r\n',
      everyMs: 50,
      giveUpMs: 5000,
    });
    assert.ok(client.closedByServer, `still open after ${client.openMs} ms`);
    assert.ok(client.openMs < 2000, `open for ${client.openMs} ms with a 300 ms headers timeout`);
    assert.match(client.answer, /^HTTP\/1\.1 408/);
  });

  it('closes a connection whose body never ends, with 408', async () => {
    const client = await slowClient(server.url, {
      head: 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
      drip: ' ',
      everyMs: 50,
      giveUpMs: 5000,
    });
    assert.ok(client.closedByServer, `still open after ${client.openMs} ms`);
    assert.ok(client.openMs < 2500, `open for ${client.openMs} ms with a 600 ms request timeout`);
    assert.match(client.answer, /^HTTP\/1\.1 408/);
  });

  it('answers a prompt client as before', async () => {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { ok: true });
  });

  it('does not cut off the answer to a complete request, however long it takes (a generation, a round)', async () => {
    const slowAnswer = boundedServer(
      { ...DEFAULT_LIMITS, headersTimeoutMs: 200, requestTimeoutMs: 300 },
      (req, res) => {
        req.resume();
        req.on('end', () => setTimeout(() => res.end('late but whole'), 1000));
      },
    );
    const listening = await listen(slowAnswer, '127.0.0.1', 0);
    try {
      const answer = await fetch(`${listening.url}/`, { method: 'POST', body: '{}' });
      assert.equal(answer.status, 200);
      assert.equal(await answer.text(), 'late but whole');
    } finally {
      await listening.close();
    }
  });
});
