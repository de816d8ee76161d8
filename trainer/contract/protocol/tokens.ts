/**
 * Per-token arrays travel as base64 of their little-endian bytes: a 4k-token trajectory is
 * 22 kB of ids instead of 30 kB of JSON numbers, and float32 log-probs round-trip exactly.
 * Works in Node and in the browser (webviews).
 */

/** Node's Buffer where there is one (faster than btoa/atob); the contract also runs in webviews, which have none. */
interface NodeBufferLike {
  from(data: ArrayBufferLike, offset: number, length: number): { toString(encoding: 'base64'): string };
  from(text: string, encoding: 'base64'): Uint8Array;
}
const nodeBuffer = (globalThis as { Buffer?: NodeBufferLike }).Buffer;

function toBase64(bytes: Uint8Array): string {
  if (nodeBuffer) return nodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  // Copied into a fresh, aligned buffer so typed views of any element size work.
  if (nodeBuffer) return new Uint8Array(nodeBuffer.from(text, 'base64'));
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function encodeInt32(values: ArrayLike<number>): string {
  return toBase64(new Uint8Array(Int32Array.from(values).buffer));
}

export function decodeInt32(text: string): Int32Array {
  const bytes = fromBase64(text);
  if (bytes.byteLength % 4) throw new Error(`int32 array: ${bytes.byteLength} bytes is not a multiple of 4`);
  return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

export function encodeFloat32(values: ArrayLike<number>): string {
  return toBase64(new Uint8Array(Float32Array.from(values).buffer));
}

export function decodeFloat32(text: string): Float32Array {
  const bytes = fromBase64(text);
  if (bytes.byteLength % 4) throw new Error(`float32 array: ${bytes.byteLength} bytes is not a multiple of 4`);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

export function encodeUint8(values: ArrayLike<number>): string {
  return toBase64(Uint8Array.from(values));
}

export function decodeUint8(text: string): Uint8Array {
  return fromBase64(text);
}
