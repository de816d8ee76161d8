/**
 * Entry of the device worker thread: owns onnxruntime and answers DeviceApi calls posted by
 * WorkerDevice. session.run blocks the thread that calls it, so it runs here and the
 * trainer's main thread (tools, IPC, the debugger) stays responsive.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { HostTensor } from '../runtime/tensors';
import { DeviceCore } from './core';
import type { DeviceApi } from './deviceApi';

interface Call {
  id: number;
  method: keyof DeviceApi;
  args: unknown[];
}

const core = new DeviceCore(workerData.provider, workerData.threads);
const port = parentPort!;

function transferables(result: unknown): ArrayBuffer[] {
  if (!result || typeof result !== 'object') return [];
  const buffers: ArrayBuffer[] = [];
  for (const value of Object.values(result as Record<string, HostTensor>)) {
    const data = value?.data;
    // Only whole buffers we own can move; a view into a shared buffer is copied.
    if (
      data &&
      ArrayBuffer.isView(data) &&
      data.byteOffset === 0 &&
      data.byteLength === data.buffer.byteLength &&
      data.buffer instanceof ArrayBuffer
    )
      buffers.push(data.buffer);
  }
  return buffers;
}

// Each call answers its own failure (the catch below), so nothing is left to await here.
port.on('message', (call: Call) => void answer(call));

async function answer(call: Call): Promise<void> {
  try {
    const result = await (core[call.method] as (...a: unknown[]) => Promise<unknown>)(...call.args);
    port.postMessage({ id: call.id, result }, transferables(result));
  } catch (error) {
    const e = error as Error;
    port.postMessage({ id: call.id, error: { message: e.message ?? String(e), stack: e.stack } });
  }
}
