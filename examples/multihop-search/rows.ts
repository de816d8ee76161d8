/** The dataset rows of the multi-hop example: the fields its rewards and its search tool read. */
import { z, type DatasetRow } from 'rollout-studio';

export const MultihopFields = z.object({
  /** The entity name the question asks for. */
  answer: z.string().min(1),
  /** Searches needed: 1 to 3. */
  hops: z.int().min(1).max(3),
  /** Ids of the documents that together answer the question, in the order they are needed. */
  neededDocs: z.array(z.string()).min(1),
  /** Which question template it came from (`employer_city`, …). */
  type: z.string(),
  /** A question about another world than the default one: its relation seed (kb.ts), which the search tool serves it from. */
  world: z.int().optional(),
});

export type MultihopRow = DatasetRow<z.output<typeof MultihopFields>>;

export const SYSTEM_PROMPT =
  'Answer the question with the search tool. Search for one fact at a time, as in {"query": "where was Ada Lovelace born"}, and follow what the facts say. ' +
  'When you know the answer, reply with <answer>the name</answer>.';
