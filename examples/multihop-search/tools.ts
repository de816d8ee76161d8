/**
 * The `search` tool of the multi-hop example: the built-in BM25 search over the generated
 * knowledge base (one fact per document; a result is the fact's sentence), plus a process
 * reward — a search earns credit when it brings up a document the question needs that no
 * earlier search of the trajectory had found (so repeating a good search earns nothing).
 */
import {
  SearchTool,
  type RewardContext,
  type SearchData,
  type SearchHit,
  type ToolCallOutcome,
  type ToolContext,
  type ToolResult,
} from 'rollout-studio';
import { buildKnowledgeBase, KB_OPTIONS, type KnowledgeBase } from './kb';
import type { MultihopRow } from './rows';

export class KnowledgeBaseSearch extends SearchTool {
  /** Each hit is one fact's sentence ("William Harlow works for Bluefin Labs."). */
  override format(hits: readonly SearchHit[]): string {
    return hits.length === 0 ? super.format(hits) : hits.map((hit) => hit.text).join('\n');
  }

  override reward(call: ToolCallOutcome<{ query: string }>, ctx: RewardContext<MultihopRow>): number {
    const needed = new Set(ctx.row.neededDocs);
    const found = (c: { result?: { data?: unknown } | undefined }) =>
      ((c.result?.data as SearchData | undefined)?.documentIds ?? []).filter((id) => needed.has(id));
    const earlier = new Set(
      ctx.trajectory.calls
        .filter((c) => c.turn < call.turn || (c.turn === call.turn && c.index < call.index))
        .flatMap((c) => (c.name === this.name && !c.error ? found(c) : [])),
    );
    return found(call).some((id) => !earlier.has(id)) ? 1 : 0;
  }
}

export const knowledgeBase = buildKnowledgeBase();

/** The search tool over a knowledge base (the demonstrations' worlds have their own). */
export function searchOver(kb: KnowledgeBase): KnowledgeBaseSearch {
  return new KnowledgeBaseSearch(kb.documents, {
    description:
      'Search the knowledge base of facts about people, organisations, cities and countries. Returns the best matching fact.',
    topK: 1,
  });
}

export const search = searchOver(knowledgeBase);

export const tools = [search];

/**
 * `search` over the world a row names (`world`: a relation seed) and over the default world for a
 * row without one: one tool, the same name and description as `search`, for questions from
 * several worlds in one evaluation (the benchmark's new-world test set).
 */
export class MultiWorldSearch extends KnowledgeBaseSearch {
  private readonly worlds = new Map<number, KnowledgeBaseSearch>();

  constructor() {
    super(knowledgeBase.documents, { description: search.description, topK: 1 });
  }

  override execute(args: { query: string }, ctx?: ToolContext): ToolResult<SearchData> {
    // Any row may reach a tool: only a multi-hop row's whole-number `world` picks another world.
    const world = (ctx?.row as { world?: unknown } | undefined)?.world;
    if (typeof world !== 'number') return super.execute(args);
    let tool = this.worlds.get(world);
    if (!tool) this.worlds.set(world, (tool = searchOver(buildKnowledgeBase({ ...KB_OPTIONS, relationSeed: world }))));
    return tool.execute(args);
  }
}
