/**
 * The two tools of the deep-search example (world.ts says what each serves):
 *
 *   search({"query": "company of Mark"})   the two best facts — the fact and its distractor — one
 *                                          per line, in an order drawn from the query
 *   atlas({"query": "country of Field"})   the one geographic fact, or that it knows nothing
 *
 * Both reward a call that brings up a fact the question needs and no earlier call of the
 * trajectory had brought up (a process reward: repeating a good call earns nothing).
 */
import { createHash } from 'node:crypto';
import {
  defineTool,
  SearchTool,
  z,
  type RewardContext,
  type SearchData,
  type SearchHit,
  type ToolCallOutcome,
} from 'rollout-studio';
import { buildDeepWorld, type DeepWorld } from './world';
import type { DeepSearchRow } from './rows';

/** A call's reward: 1 when it returned a needed fact that no earlier call of the trajectory returned. */
function newNeededFact(call: ToolCallOutcome<unknown>, ctx: RewardContext<DeepSearchRow>): number {
  const needed = new Set(ctx.row.neededDocs);
  const found = (c: { result?: { data?: unknown } | undefined }) =>
    ((c.result?.data as SearchData | undefined)?.documentIds ?? []).filter((id) => needed.has(id));
  const earlier = new Set(
    ctx.trajectory.calls
      .filter((c) => c.turn < call.turn || (c.turn === call.turn && c.index < call.index))
      .flatMap((c) => (c.error ? [] : found(c))),
  );
  return found(call).some((id) => !earlier.has(id)) ? 1 : 0;
}

/** A stable pseudo-random order of a query's hits, so the answer's line is not always first. */
function shuffledFor(query: string, hits: readonly SearchHit[]): SearchHit[] {
  const key = (hit: SearchHit) => createHash('sha256').update(`${query.trim().toLowerCase()}|${hit.id}`).digest('hex');
  return [...hits].sort((a, b) => key(a).localeCompare(key(b)));
}

export class FactSearch extends SearchTool {
  /** The facts' sentences, one per line, in the query's order. */
  override format(hits: readonly SearchHit[]): string {
    return hits.length === 0 ? super.format(hits) : hits.map((hit) => hit.text).join('\n');
  }

  override execute({ query }: { query: string }) {
    const hits = shuffledFor(query, this.search(query));
    return {
      content: [{ type: 'text' as const, text: this.format(hits) }],
      data: { documentIds: hits.map((h) => h.id) },
    };
  }

  override reward(call: ToolCallOutcome<{ query: string }>, ctx: RewardContext<DeepSearchRow>): number {
    return newNeededFact(call, ctx);
  }
}

/** `atlas`: looks a place's fact up exactly — `<relation> of <name>` — or says it knows nothing. */
export function atlasOver(world: DeepWorld) {
  const facts = new Map(
    world.atlasDocuments.map((d) => [
      d.text.slice(0, d.text.lastIndexOf(' is ')).replace(/^The /, '').toLowerCase(),
      d,
    ]),
  );
  return defineTool({
    name: 'atlas',
    description: 'Where organisations and cities are.',
    parameters: z.object({ query: z.string().min(1) }),
    execute: ({ query }) => {
      const doc = facts.get(query.trim().replace(/\s+/g, ' ').toLowerCase());
      return {
        content: [{ type: 'text', text: doc ? doc.text : 'The atlas knows nothing about that.' }],
        data: { documentIds: doc ? [doc.id] : [] },
      };
    },
    reward: (call, ctx) => newNeededFact(call, ctx as RewardContext<DeepSearchRow>),
  });
}

export function searchOver(world: DeepWorld): FactSearch {
  return new FactSearch(world.searchDocuments, {
    description: 'Facts about people and organisations.',
    topK: 2,
  });
}

export const world = buildDeepWorld();
export const search = searchOver(world);
export const atlas = atlasOver(world);
export const tools = [search, atlas];
