/**
 * The `search` tool of the multi-hop example: the built-in BM25 search over the generated
 * knowledge base (one fact per document; a result is the fact's sentence), plus a process
 * reward — a search earns credit when it brings up a document the question needs that no
 * earlier search of the trajectory had found (so repeating a good search earns nothing).
 */
import { SearchTool, type RewardContext, type SearchData, type SearchHit, type ToolCallOutcome } from 'rollout-studio';
import { buildKnowledgeBase, type KnowledgeBase } from './kb';
import type { MultihopRow } from './rows';

export class KnowledgeBaseSearch extends SearchTool {
  /** Each hit is one fact's sentence ("William Harlow works for Bluefin Labs."). */
  override format(hits: readonly SearchHit[]): string {
    return hits.length === 0 ? super.format(hits) : hits.map((hit) => hit.text).join('\n');
  }

  override reward(call: ToolCallOutcome<{ query: string }>, ctx: RewardContext<MultihopRow>): number {
    const needed = new Set(ctx.row.neededDocs);
    const found = (c: { result?: { data?: unknown } }) => ((c.result?.data as SearchData | undefined)?.documentIds ?? []).filter((id) => needed.has(id));
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
    description: 'Search the knowledge base of facts about people, organisations, cities and countries. Returns the best matching fact.',
    topK: 1,
  });
}

export const search = searchOver(knowledgeBase);

export const tools = [search];
