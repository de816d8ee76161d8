import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  describeOnnxRuntimeTelemetry,
  optOutOfOnnxRuntimeTelemetry,
} from '#trainer/foundations/engine/runtime/onnxruntime';

describe("onnxruntime's telemetry setting", () => {
  it('is set to 1 (off) where the user set nothing', () => {
    const env: NodeJS.ProcessEnv = { PATH: '/usr/bin' };
    optOutOfOnnxRuntimeTelemetry(env);
    assert.deepEqual(env, { PATH: '/usr/bin', ORT_DISABLE_TELEMETRY: '1' });
    assert.equal(describeOnnxRuntimeTelemetry(env), 'off (ORT_DISABLE_TELEMETRY=1)');
  });

  it("keeps the user's own value, whatever it is", () => {
    for (const value of ['0', '1', 'false', '']) {
      const env: NodeJS.ProcessEnv = { ORT_DISABLE_TELEMETRY: value };
      optOutOfOnnxRuntimeTelemetry(env);
      assert.equal(env.ORT_DISABLE_TELEMETRY, value);
    }
    assert.equal(describeOnnxRuntimeTelemetry({ ORT_DISABLE_TELEMETRY: '0' }), 'your setting: ORT_DISABLE_TELEMETRY=0');
  });

  it('is described as on where nothing set it (a process that has not loaded onnxruntime through us)', () => {
    assert.equal(describeOnnxRuntimeTelemetry({}), 'on (ORT_DISABLE_TELEMETRY is not set)');
  });
});
