/**
 * Shapes at build time. A dimension is a number, or a symbol (`'B'`, `'T'`, or a product such
 * as `'B*T'`) for sizes only known when the graph runs. Shapes are checked when a node is
 * added so a mistake fails with the op and scope named, not inside onnxruntime.
 */
export type Dim = number | string;
export type Shape = readonly Dim[];

export function formatShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

export function isStatic(shape: Shape): shape is readonly number[] {
  return shape.every((d) => typeof d === 'number');
}

/** The product of some dims as one Dim: numbers multiply, symbols join with `*`. */
export function productDim(dims: readonly Dim[]): Dim {
  let n = 1;
  const symbols: string[] = [];
  for (const d of dims) {
    if (typeof d === 'number') n *= d;
    else symbols.push(d);
  }
  if (symbols.length === 0) return n;
  if (n === 1) return symbols.join('*');
  return [String(n), ...symbols].join('*');
}

/**
 * numpy-style broadcast of two shapes. Two different concrete sizes (neither 1) are an error;
 * a symbol against a concrete size other than 1 is taken to be that size (the runtime checks).
 */
export function broadcastShapes(a: Shape, b: Shape): Dim[] | string {
  const rank = Math.max(a.length, b.length);
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    const da = i < rank - a.length ? 1 : a[i - (rank - a.length)];
    const db = i < rank - b.length ? 1 : b[i - (rank - b.length)];
    if (da === db) out.push(da);
    else if (da === 1) out.push(db);
    else if (db === 1) out.push(da);
    else if (typeof da === 'number' && typeof db === 'number')
      return `dimension ${i} is ${da} in one and ${db} in the other`;
    else if (typeof da === 'number') out.push(da);
    else if (typeof db === 'number') out.push(db);
    else out.push(da);
  }
  return out;
}

export function normalizeAxis(axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new RangeError(`axis ${axis} is out of range for rank ${rank}`);
  return a;
}
