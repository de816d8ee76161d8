import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ChatMessage, ToolSpec } from '../../../contract/protocol/chatMessages';
import { tokenizeDemonstration } from '../../../pipeline/rollout/tokenizeDemonstration';

/**
 * An episode of the pretraining corpus as tokens, each with a role that decides its loss weight
 * (the recipe maps roles to weights) and, on copy targets, the skill it exercises (held-out
 * exact match is measured per skill).
 *
 * Roles: `hidden` — read but never scored (system prompts and tool schemas: fixed text the
 * model never writes); `text` — ordinary language modelling at a low weight; `target` — what
 * must be copied or answered exactly, at full weight.
 */
export const ROLES = ['hidden', 'text', 'target'] as const;
export type Role = (typeof ROLES)[number];
export const ROLE_ID: Record<Role, number> = { hidden: 0, text: 1, target: 2 };

/** `fact_call` and `fact_answer`: the calls and the answer of a chain of facts read beside near misses (factChainEpisodes.ts). */
export const SKILLS = [
  'number',
  'name',
  'string',
  'span',
  'lookup',
  'tool_call',
  'tool_answer',
  'chat_answer',
  'fact_call',
  'fact_answer',
] as const;
export type Skill = (typeof SKILLS)[number];
/** Skill ids start at 1: 0 marks a token that exercises none. */
export const SKILL_ID: Record<Skill, number> = Object.fromEntries(SKILLS.map((s, i) => [s, i + 1])) as Record<
  Skill,
  number
>;

export interface CorpusEpisode {
  kind: string;
  ids: number[];
  /** ROLE_ID per token. */
  roles: Uint8Array;
  /** SKILL_ID per token (0: none). */
  skills: Uint8Array;
}

export class CorpusError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CorpusError';
  }
}

/** A stretch of plain text with its role (and skill, for targets). */
export interface Segment {
  text: string;
  role: Role;
  skill?: Skill;
}

/**
 * Plain text made of segments, tokenized as one text (so tokens are those the tokenizer gives
 * the whole, exactly as at inference); a token takes the strongest role among the segments it
 * overlaps, so a token that straddles a target's edge belongs to the target.
 */
export function encodeSegments(tokenizer: Tokenizer, kind: string, segments: readonly Segment[]): CorpusEpisode {
  const text = segments.map((s) => s.text).join('');
  const ids = tokenizer.encode(text);
  const pieces = tokenizer.pieces(ids);
  if (pieces.join('') !== text)
    throw new CorpusError(
      `${kind}: the tokens of ${JSON.stringify(text.slice(0, 80))} do not spell it back (the corpus must be plain ASCII)`,
    );
  // Character → segment index.
  const owner = new Int32Array(text.length);
  let at = 0;
  segments.forEach((s, i) => {
    owner.fill(i, at, at + s.text.length);
    at += s.text.length;
  });
  const roles = new Uint8Array(ids.length);
  const skills = new Uint8Array(ids.length);
  let start = 0;
  pieces.forEach((piece, t) => {
    let role = 0;
    let skill = 0;
    for (let c = start; c < start + piece.length; c++) {
      const s = segments[owner[c]];
      const r = ROLE_ID[s.role];
      if (r > role || (r === role && skill === 0 && s.skill)) {
        role = r;
        skill = s.skill ? SKILL_ID[s.skill] : 0;
      }
    }
    roles[t] = role;
    skills[t] = role === ROLE_ID.target ? skill : 0;
    start += piece.length;
  });
  return { kind, ids, roles, skills };
}

/**
 * A conversation laid out exactly as the agent loop lays out a rollout (the demonstration
 * layout the SFT warm start uses): the assistant's turns are targets, each with its skill
 * (`turnSkills`, in order); user turns and tool results are text; the system turn (with the
 * tools' schemas) is hidden.
 */
export function encodeChat(
  template: ChatTemplate,
  kind: string,
  messages: readonly ChatMessage[],
  options: { tools?: readonly ToolSpec[]; kwargs?: Record<string, unknown>; turnSkills: readonly Skill[] },
): CorpusEpisode {
  const tokens = tokenizeDemonstration(template, messages, {
    tools: options.tools,
    kwargs: options.kwargs,
    origin: kind,
  });
  const tokenizer = template.tokenizer;
  const ids = tokens.ids;
  const roles = new Uint8Array(ids.length);
  const skills = new Uint8Array(ids.length);
  const imStart = tokenizer.tokenId('<|im_start|>');
  let current: number = ROLE_ID.text;
  let turn = -1;
  for (let t = 0; t < ids.length; t++) {
    if (ids[t] === imStart)
      current = tokenizer.decode(ids.slice(t + 1, t + 4)).startsWith('system') ? ROLE_ID.hidden : ROLE_ID.text;
    if (tokens.mask[t]) {
      if (t === 0 || !tokens.mask[t - 1]) turn++;
      const skill = options.turnSkills[turn];
      if (skill === undefined) throw new CorpusError(`${kind}: assistant turn ${turn} has no skill`);
      roles[t] = ROLE_ID.target;
      skills[t] = SKILL_ID[skill];
    } else roles[t] = current;
  }
  if (turn + 1 !== options.turnSkills.length)
    throw new CorpusError(`${kind}: ${turn + 1} assistant turns for ${options.turnSkills.length} skills`);
  return { kind, ids, roles, skills };
}
