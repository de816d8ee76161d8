/**
 * Word pools of the generated pretraining corpus: ordinary English, plus syllables for made-up
 * names. Deliberately general — no example's task or world lives here (no search over a
 * knowledge base, no arithmetic, no units to convert); `test/unit/bases/corpus.test.ts`
 * checks generated samples against the examples' tools and entities.
 */

export const NOUNS = (
  'time year people way day thing woman life child world school state family student group country problem hand part place case week ' +
  'company system program question work number night point home water room mother area money story fact month lot right study book eye job ' +
  'word business issue side kind head house service friend father power hour game line end member law car city community name team minute ' +
  'idea kid body information back parent face level office door health person art war history party result change morning reason research ' +
  'girl moment air teacher force education food answer value report garden river window table letter market train bridge island forest music ' +
  'paper phone street church village field plan project meeting painting camera ticket bottle kitchen shelf lamp coat blanket bicycle boat ' +
  'engine wheel tower castle museum library hospital station airport harbor valley mountain lake beach desert farm orchard bakery studio ' +
  'concert festival election contract budget invoice order parcel package delivery shipment recipe menu lesson course exam score record ' +
  'signal message email note list schedule calendar event visit trip journey route map key lock password account device sensor battery ' +
  'screen keyboard printer server network file folder photo video song album playlist podcast article chapter poem novel letter sample'
).split(' ');

export const PAST_VERBS = (
  'said made went took came saw knew got gave found thought told became left felt brought began kept held wrote stood heard met ran paid ' +
  'sat spoke led read grew lost sent built drew spent drove bought wore chose sold moved opened closed carried asked needed wanted used called ' +
  'tried helped showed played started turned visited painted repaired cleaned collected delivered finished ordered packed planned printed ' +
  'received recorded returned signed sorted studied watched washed welcomed checked counted covered described designed followed noticed ' +
  'offered prepared protected reached remembered shared supported carried answered'
).split(' ');

export const ADJECTIVES = (
  'good new first last long great little own other old right big high different small large next early young important few public bad ' +
  'same able late hard major better free strong whole clear recent certain personal open red blue green dark cold hot quiet quick warm empty ' +
  'full simple bright heavy light narrow wide deep soft sharp smooth busy calm careful clean famous fresh gentle happy honest kind lucky ' +
  'modern polite proud rare rich safe silent slow strange sweet tall thin tiny wild wooden yellow silver golden broken hidden local northern ' +
  'southern eastern western annual daily weekly monthly'
).split(' ');

export const ADVERBS =
  'quickly slowly carefully quietly early later again soon often never always already almost finally suddenly'.split(
    ' ',
  );

export const SUBJECT_PRONOUNS = ['we', 'they', 'he', 'she', 'you', 'I'];

/** Syllables of made-up names: every generated name is new to the tokenizer, so it splits into several tokens. */
export const NAME_ONSETS = 'b br c ch d dr f fl g gr h j k kl l m n p pr r s sh st t th tr v w z'.split(' ');
export const NAME_VOWELS = 'a e i o u a e o ai ei ou ia'.split(' ');
export const NAME_CODAS = ['', '', '', 'n', 'r', 'l', 's', 'm', 'th', 'x', 'nd', 'rk'];

/** Verbs and nouns that tool names are built from (`get_invoice`, `schedule_visit`, …). */
export const TOOL_VERBS = (
  'get lookup fetch find check list create update cancel book reserve send schedule track register assign archive rate report ' +
  'open close submit approve reject pause resume rename tag share verify restore estimate'
).split(' ');
export const TOOL_NOUNS = (
  'order invoice ticket parcel flight room account booking payment shipment device sensor employee patient student course recipe song ' +
  'playlist vehicle repair loan policy claim subscription reservation appointment event task project document contract license profile ' +
  'review issue badge voucher meeting route delivery table seat locker permit'
).split(' ');

/** Field names of records, tool parameters and tool results (`customer_name`, `due_date`, …). */
export const FIELD_WORDS = (
  'id name code number label title status color size count level priority owner email phone city region zone date time day start end ' +
  'due amount price total limit offset rating score weight height width depth speed capacity quantity balance deposit fee discount note ' +
  'comment reason message tag category type mode channel topic language version build port host path seat gate room floor table row ' +
  'customer user member driver guest author artist manager doctor team'
).split(' ');

/** Words that enum parameters choose between. */
export const ENUM_WORDS = (
  'low medium high urgent normal small large standard express economy basic premium daily weekly monthly yearly open closed pending ' +
  'active inactive draft final public private north south east west morning evening red green blue black white ascending descending'
).split(' ');

/** System prompts of chat episodes (the format instruction, when any, is added separately). */
export const SYSTEM_PROMPTS = [
  'You are a helpful assistant.',
  'You are a careful assistant. Use the tools when they help.',
  'You help users with their requests.',
  'You are an assistant that answers briefly.',
  'Be accurate and concise.',
  'You are a support agent.',
  'You work for an office and answer questions from staff.',
];
