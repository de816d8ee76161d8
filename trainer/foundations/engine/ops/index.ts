/** Every op the engine builds graphs from; each checks shapes and dtypes when it is called. */
export * from './elementwise';
export * from './linalg';
export * from './reduce';
export * from './layout';
export * from './indexing';
export * from './nn';
export type { Operand } from './common';
export * from './quantized';
