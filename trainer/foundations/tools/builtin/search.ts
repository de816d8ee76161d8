import MiniSearch from 'minisearch';
import { z } from 'zod';
import { ToolDefinitionError } from '../toolErrors';
import type { ToolResult } from '../result';
import { Tool } from '../tool';

/**
 * Full-text search over a local corpus, ranked with BM25+ by MiniSearch (a maintained search
 * library; no hand-written ranking here). Title matches count double; prefix and light fuzzy
 * matching absorb a model's small spelling slips. The observation lists the top hits as
 * `[n] Title: text`; `data.documentIds` lists their ids in rank order for process rewards.
 */

export interface SearchDocument {
  id: string;
  title: string;
  text: string;
}

export interface SearchHit {
  id: string;
  title: string;
  text: string;
  score: number;
}

export interface SearchToolOptions {
  name?: string;
  description?: string;
  /** Hits shown per query (default 3). */
  topK?: number;
  /** MiniSearch fuzziness: a fraction of the term length allowed as edit distance (default 0.2; 0 = exact). */
  fuzzy?: number;
  /** What the policy sees when nothing matches. */
  noResults?: string;
}

export interface SearchData {
  documentIds: string[];
}

const SearchArgs = z.object({
  query: z.string().min(1).describe('What to search for: names, places, organisations or keywords.'),
});

export class SearchTool extends Tool<typeof SearchArgs> {
  readonly name: string;
  readonly description: string;
  readonly parameters = SearchArgs;
  private readonly index: MiniSearch<SearchDocument>;
  private readonly documents: Map<string, SearchDocument>;
  private readonly topK: number;
  private readonly noResults: string;

  constructor(documents: readonly SearchDocument[], options: SearchToolOptions = {}) {
    super();
    this.name = options.name ?? 'search';
    this.description = options.description ?? 'Search the knowledge base and return the most relevant documents.';
    this.topK = options.topK ?? 3;
    this.noResults = options.noResults ?? 'No documents match the query.';
    if (!Number.isInteger(this.topK) || this.topK < 1)
      throw new ToolDefinitionError(`tool "${this.name}": topK must be a positive integer, got ${this.topK}`);
    this.documents = new Map();
    documents.forEach((doc, i) => {
      if (typeof doc?.id !== 'string' || typeof doc.title !== 'string' || typeof doc.text !== 'string') {
        throw new ToolDefinitionError(
          `tool "${this.name}": documents[${i}] must be { id: string, title: string, text: string }`,
        );
      }
      if (this.documents.has(doc.id))
        throw new ToolDefinitionError(`tool "${this.name}": documents[${i}] repeats the id "${doc.id}"`);
      this.documents.set(doc.id, doc);
    });
    this.index = new MiniSearch<SearchDocument>({
      fields: ['title', 'text'],
      storeFields: [],
      searchOptions: { boost: { title: 2 }, prefix: true, fuzzy: options.fuzzy ?? 0.2, combineWith: 'OR' },
    });
    this.index.addAll([...documents]);
  }

  /** The best `k` documents for `query`, best first (ties broken by id, so results are reproducible). */
  search(query: string, k = this.topK): SearchHit[] {
    return this.index
      .search(query)
      .sort((a, b) => b.score - a.score || String(a.id).localeCompare(String(b.id)))
      .slice(0, k)
      .map((hit) => {
        const doc = this.documents.get(String(hit.id))!;
        return { id: doc.id, title: doc.title, text: doc.text, score: hit.score };
      });
  }

  /** The observation for a list of hits. */
  format(hits: readonly SearchHit[]): string {
    if (hits.length === 0) return this.noResults;
    return hits.map((hit, i) => `[${i + 1}] ${hit.title}: ${hit.text}`).join('\n');
  }

  execute({ query }: z.output<typeof SearchArgs>): ToolResult<SearchData> {
    const hits = this.search(query);
    return { content: [{ type: 'text', text: this.format(hits) }], data: { documentIds: hits.map((h) => h.id) } };
  }
}
