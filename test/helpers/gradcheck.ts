import { grad } from '#trainer/foundations/engine/autodiff';
import { Graph, type Tensor } from '#trainer/foundations/engine/graph';
import { disposeSerialized, serializeGraph } from '#trainer/foundations/engine/serialize';
import { createSession, releaseSession } from '#trainer/foundations/engine/runtime/ortSession';
import { fromOrtTensor, toOrtTensor, type HostTensor } from '#trainer/foundations/engine/runtime/tensors';

/**
 * Central finite-difference check of the engine's analytic gradients, in float64.
 *
 * `build` receives an empty graph and returns the scalar loss and the inputs to check; it is
 * called twice (a forward-only graph for the finite differences, and one with `grad`). Feeds
 * must be float64 for checked inputs.
 */
export interface GradCheckOptions {
  /** Elements checked per tensor; larger tensors are sampled evenly. */
  maxElementsPerTensor?: number | undefined;
  /** Finite-difference step. */
  step?: number | undefined;
}

export interface TensorGradCheck {
  name: string;
  checked: number;
  /** max |analytic − numeric| / max(max |numeric|, 1e-12) over the checked elements. */
  relativeError: number;
  maxAbsNumeric: number;
}

export async function gradCheck(
  build: (g: Graph) => { loss: Tensor; wrt: Tensor[]; graph?: Graph },
  feeds: Record<string, HostTensor>,
  options: GradCheckOptions = {},
): Promise<TensorGradCheck[]> {
  const maxElements = options.maxElementsPerTensor ?? 24;
  const h = options.step ?? 1e-6;

  // `build` may construct its own graph (a model builder does) and return it.
  const f = build(new Graph('gradcheck_forward'));
  const forward = f.graph ?? f.loss.graph;
  forward.output(f.loss, 'loss');
  const b = build(new Graph('gradcheck_backward'));
  const withGrad = b.graph ?? b.loss.graph;
  withGrad.output(b.loss, 'loss');
  const grads = grad(b.loss, b.wrt);
  grads.forEach((dt, i) => withGrad.output(dt, `grad_${i}`));

  // 'basic': the fusions of higher levels are float32-only.
  const settings = { provider: 'cpu' as const, optimization: 'basic' as const, threads: 1 };
  const forwardModel = serializeGraph(forward);
  const backwardModel = serializeGraph(withGrad);
  const forwardSession = await createSession(forwardModel, settings);
  const backwardSession = await createSession(backwardModel, settings);
  try {
    const inputNames = new Set(withGrad.inputs.map((t) => t.name));
    const toOrt = (values: Record<string, HostTensor>) =>
      Object.fromEntries(
        Object.entries(values)
          .filter(([k]) => inputNames.has(k))
          .map(([k, v]) => [k, toOrtTensor(v)]),
      );
    const analyticOut = await backwardSession.run(toOrt(feeds));
    const results: TensorGradCheck[] = [];
    for (let t = 0; t < b.wrt.length; t++) {
      const name = b.wrt[t].name;
      const feed = feeds[name];
      if (!feed) throw new Error(`gradCheck: ${name} is not fed (only graph inputs can be checked)`);
      if (feed.dtype !== 'float64') throw new Error(`gradCheck: feed ${name} must be float64, got ${feed.dtype}`);
      const analytic = fromOrtTensor(analyticOut[`grad_${t}`]).data as Float64Array;
      const base = feed.data as Float64Array;
      const count = base.length;
      const stride = Math.max(1, Math.floor(count / maxElements));
      let maxDiff = 0;
      let maxNumeric = 0;
      let checked = 0;
      for (let i = 0; i < count && checked < maxElements; i += stride, checked++) {
        const lossAt = async (delta: number) => {
          const data = Float64Array.from(base);
          data[i] += delta;
          const out = await forwardSession.run(toOrt({ ...feeds, [name]: { ...feed, data } }));
          return (out.loss.data as Float64Array)[0];
        };
        const numeric = ((await lossAt(h)) - (await lossAt(-h))) / (2 * h);
        maxDiff = Math.max(maxDiff, Math.abs(numeric - analytic[i]));
        maxNumeric = Math.max(maxNumeric, Math.abs(numeric));
      }
      results.push({ name, checked, relativeError: maxDiff / Math.max(maxNumeric, 1e-12), maxAbsNumeric: maxNumeric });
    }
    return results;
  } finally {
    await releaseSession(forwardSession);
    await releaseSession(backwardSession);
    disposeSerialized(forwardModel);
    disposeSerialized(backwardModel);
  }
}
