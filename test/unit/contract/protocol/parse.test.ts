import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  EnvironmentReport,
  parseWith,
  ProtocolError,
  PROTOCOL_VERSION,
  TrainerMessage,
} from '#trainer/contract/protocol';

describe('parseWith', () => {
  it('names the source, the path of the bad field and what was expected', () => {
    const message = {
      protocol: PROTOCOL_VERSION,
      type: 'environment.report',
      report: { generatedAt: 'x', runtime: { node: 20 } },
    };
    assert.throws(
      () => parseWith(TrainerMessage, message, 'message from the trainer'),
      (error: unknown) => {
        assert.ok(error instanceof ProtocolError);
        assert.match(error.message, /^message from the trainer: /);
        assert.match(error.message, /report\.runtime\.node: Invalid input: expected string, received number/);
        assert.match(error.message, /report\.providers/);
        return true;
      },
    );
  });

  it('rejects another protocol version before looking at the fields', () => {
    assert.throws(
      () => parseWith(TrainerMessage, { protocol: 99, type: 'fatal', message: 'x' }, 'message'),
      /protocol version 99 is not supported \(this build speaks version 1\)/,
    );
  });

  it('returns the typed value when it validates', () => {
    const fatal = parseWith(TrainerMessage, { protocol: PROTOCOL_VERSION, type: 'fatal', message: 'boom' }, 'message');
    assert.deepEqual(fatal, { protocol: 1, type: 'fatal', message: 'boom' });
  });

  it('accepts a complete environment report and keeps optional fields', () => {
    const report = {
      generatedAt: new Date(0).toISOString(),
      runtime: {
        node: '20.0.0',
        platform: 'linux',
        arch: 'x64',
        cpuModel: 'cpu',
        cpuCount: 2,
        totalMemoryBytes: 1,
        freeMemoryBytes: 1,
      },
      onnxruntime: { version: '1.30.0', backends: [{ name: 'cpu', bundled: true }] },
      providers: {
        cpu: { name: 'cpu', available: true, maxAbsError: 0 },
        webgpu: {
          name: 'webgpu',
          available: true,
          adapter: { vendor: 'mesa', architecture: 'software', device: 'llvmpipe', description: 'd' },
        },
        cuda: {
          name: 'cuda',
          available: false,
          reason: 'not installed',
          providerLibrary: { installed: false, path: '/x' },
        },
      },
    };
    const parsed = parseWith(EnvironmentReport, report, 'report');
    assert.equal(parsed.providers.webgpu.adapter?.device, 'llvmpipe');
    assert.equal(parsed.providers.cuda.providerLibrary?.installed, false);
  });
});
