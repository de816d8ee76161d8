/** The dataset rows of the deep-search example: the fields its rewards and its tools read. */
import { z, type DatasetRow } from 'rollout-studio';

export const DeepSearchFields = z.object({
  /** The entity name the question asks for. */
  answer: z.string().min(1),
  /** Calls needed: 2 to 4. */
  hops: z.int().min(2).max(4),
  /** Ids of the facts that together answer the question, in the order they are needed. */
  neededDocs: z.array(z.string()).min(2),
  /** Which question template it came from (`owner_home_country`, …). */
  type: z.string(),
});

export type DeepSearchRow = DatasetRow<z.output<typeof DeepSearchFields>>;

/** Short on purpose: every token of it is in every trajectory's prompt. */
export const SYSTEM_PROMPT =
  'Look up one fact at a time, as in {"query": "capital of France"}, from the last name in the question: search for people and organisations, atlas for places. ' +
  'A fact says "is", an old one "was". Then reply <answer> the name</answer>.';
