import type { Graph } from '../graph';
import { disposeSerialized, serializeGraph } from '../serialize';
import { createSession, releaseSession, type SessionSettings } from './ortSession';
import { fromOrtTensor, toOrtTensor, type HostTensor } from './tensors';

/**
 * Run a graph once, in this thread: serialise, create a session, run, release. For tests,
 * checks and one-off computations; training loops keep sessions in a Device.
 */
export async function runGraphOnce(
  graph: Graph,
  feeds: Record<string, HostTensor>,
  settings: SessionSettings = { provider: 'cpu' },
): Promise<Record<string, HostTensor>> {
  const model = serializeGraph(graph);
  try {
    const session = await createSession(model, settings);
    try {
      const ortFeeds = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, toOrtTensor(v)]));
      const out = await session.run(ortFeeds);
      return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, fromOrtTensor(v)]));
    } finally {
      await releaseSession(session);
    }
  } finally {
    disposeSerialized(model);
  }
}
