/**
 * The `search` tool of the multi-hop example: the built-in BM25 search over the generated
 * knowledge base, plus a process reward — a search earns credit when it brings up a document
 * the question needs that no earlier search of the trajectory had found (so repeating a good
 * search earns nothing).
 */
import { SearchTool, type RewardContext, type SearchData, type ToolCallOutcome } from 'rollout-studio';
import { buildKnowledgeBase } from './kb';
import type { MultihopRow } from './rows';

export class KnowledgeBaseSearch extends SearchTool {
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

export const search = new KnowledgeBaseSearch(knowledgeBase.documents, {
  description: 'Search the knowledge base about people, organisations, cities and countries. Returns the best matching documents.',
  topK: 1,
});

export const tools = [search];
