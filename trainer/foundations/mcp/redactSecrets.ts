/**
 * Secrets in what a run records about its MCP servers (run.json, and the messages that name a
 * server, which reach run.json's error and the logs): a URL's user and password, its query (and
 * fragment) values named like credentials (`?token=…`, `api_key=…`, `sig=…`, `#access_token=…`),
 * and on a command line the values of flags named so (`--api-key X`, `--token=X`), `NAME=value`
 * pairs and `Name: value` headers named so (also as a flag's value: `--header=Authorization: …`;
 * `Cookie` and `Set-Cookie` count), a `-p` flag's value, and values shaped like well-known API
 * tokens (`hf_…`, `ghp_…`, `github_pat_…`, `sk-…`, `xoxb-…`, `AKIA…`, `glpat-…`, JWTs), also
 * inside a longer argument. Each is
 * replaced by `***`; everything else stays as written, so a reader still recognises the server.
 * A secret in no such form (a token as a bare path segment) is still written: pass secrets in
 * `env` or `headers`, whose values are never recorded.
 */

export const REDACTED = '***';

/** A name that says it holds a credential: the whole name or one of its `-`/`_` parts. */
const CREDENTIAL =
  /^(api-?key|apikey|access-?token|auth|authorization|bearer|client-?secret|cookie|credentials?|key|pass|passwd|password|private-?key|secret|session|sig|signature|token)$/;

export function isCredentialName(name: string): boolean {
  // camelCase parts count as parts too: authToken, clientSecret.
  const lower = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/^-+/, '');
  if (CREDENTIAL.test(lower)) return true;
  return lower.split(/[-_.]/).some((part) => CREDENTIAL.test(part)) || CREDENTIAL.test(lower.replace(/_/g, '-'));
}

/**
 * Tokens of well-known services, whatever they are called: Hugging Face, GitHub, OpenAI-style,
 * Slack, AWS key ids, GitLab, and JSON Web Tokens (three base64url parts, the first `eyJ`: `{"`).
 */
const TOKEN_SHAPES = [
  /hf_[A-Za-z0-9]{20,}/,
  /(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/,
  /github_pat_[A-Za-z0-9_]{20,}/,
  /sk-[A-Za-z0-9_-]{20,}/,
  /xox[abposr]-[A-Za-z0-9-]{10,}/,
  /AKIA[A-Z0-9]{16}/,
  /glpat-[A-Za-z0-9_-]{20,}/,
  /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/,
];
const WHOLE_TOKEN = TOKEN_SHAPES.map((shape) => new RegExp(`^(?:${shape.source})$`));
/** The same shapes anywhere in a text, on a word boundary (`Bearer eyJ…`, `token ghp_…;`). */
const TOKEN_IN_TEXT = new RegExp(TOKEN_SHAPES.map((shape) => `(?<![A-Za-z0-9_-])(?:${shape.source})`).join('|'), 'g');

export function looksLikeToken(value: string): boolean {
  return WHOLE_TOKEN.some((shape) => shape.test(value));
}

/** `text` with every token of a well-known shape in it replaced (and noted). */
function maskTokenShapes(text: string, found?: FoundSecrets): string {
  return text.replace(TOKEN_IN_TEXT, (token) => {
    note(found, token);
    return REDACTED;
  });
}

/**
 * The secret values a redaction replaced, as written and as decoded: messages from the libraries
 * that use the real value (fetch quotes the whole URL when it refuses credentials in it) are
 * masked with them (maskSecrets).
 */
export type FoundSecrets = Set<string>;

function note(found: FoundSecrets | undefined, ...values: string[]): void {
  if (!found) return;
  for (const value of values) {
    found.add(value);
    try {
      found.add(decodeURIComponent(value));
    } catch {
      // not percent-encoded: the value as written is enough
    }
    found.add(encodeURIComponent(value));
  }
}

/** `#access_token=…&state=1` (OAuth's implicit flow) with its credential values replaced; any other fragment as it is. */
function redactFragment(hash: string, found?: FoundSecrets): string {
  if (!hash.includes('=')) return hash;
  const params = new URLSearchParams(hash.slice(1));
  let changed = false;
  for (const [key, value] of [...params]) {
    if (isCredentialName(key) || looksLikeToken(value)) {
      note(found, value);
      params.set(key, REDACTED);
      changed = true;
    }
  }
  return changed ? `#${params.toString()}` : hash;
}

/** The URL with its credentials replaced; the same string when it has none (or is not a URL). */
export function redactUrl(text: string, found?: FoundSecrets): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  let changed = false;
  if (url.username) {
    note(found, url.username);
    url.username = REDACTED;
    changed = true;
  }
  if (url.password) {
    note(found, url.password);
    url.password = REDACTED;
    changed = true;
  }
  for (const key of [...new Set(url.searchParams.keys())]) {
    if (isCredentialName(key) || url.searchParams.getAll(key).some(looksLikeToken)) {
      note(found, ...url.searchParams.getAll(key));
      url.searchParams.set(key, REDACTED);
      changed = true;
    }
  }
  const fragment = redactFragment(url.hash, found);
  if (fragment !== url.hash) {
    url.hash = fragment;
    changed = true;
  }
  return changed ? url.toString() : text;
}

/** A header with a credential name (`Authorization: Bearer …`, `Cookie: …`, `Set-Cookie: …`) with its value replaced; undefined for any other text. */
function redactHeader(text: string, found?: FoundSecrets): string | undefined {
  const header = /^([A-Za-z][\w-]*):\s*(\S.*)$/s.exec(text);
  if (!header || !isCredentialName(header[1])) return undefined;
  note(found, header[2], ...(/^\w+\s+(\S+)$/.exec(header[2])?.slice(1) ?? []));
  return `${header[1]}: ${REDACTED}`;
}

/**
 * Flags whose next argument is a password although their name does not say so: `-p` (mysql,
 * psql's wrappers, redis-cli's `-a`… keep to the common one). A port given as `-p 8080` is
 * redacted too: a record that hides a port loses little; one that shows a password loses much.
 */
const PASSWORD_SHORT_FLAGS = new Set(['-p']);

/** A command line with the values of credential flags and `NAME=value` credentials replaced, and URLs redacted. */
export function redactArguments(args: readonly string[], found?: FoundSecrets): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const assignment = /^(-{0,2}[A-Za-z][\w.-]*)=(.*)$/s.exec(arg);
    if (assignment && (isCredentialName(assignment[1]) || looksLikeToken(assignment[2]))) {
      note(found, assignment[2]);
      out.push(`${assignment[1]}=${REDACTED}`);
      continue;
    }
    // A header given on the command line (mcp-remote's --header "Authorization: Bearer …", curl's -H 'Cookie: …').
    const header = redactHeader(arg, found);
    if (header !== undefined) {
      out.push(header);
      continue;
    }
    if (assignment) {
      // --header=Authorization: Bearer …; --url=https://user:pass@host, ENDPOINT=https://…?token=…
      const value = redactHeader(assignment[2], found) ?? maskTokenShapes(redactUrl(assignment[2], found), found);
      out.push(`${assignment[1]}=${value}`);
      continue;
    }
    if (
      ((/^--?[A-Za-z][\w.-]*$/.test(arg) && isCredentialName(arg)) || PASSWORD_SHORT_FLAGS.has(arg)) &&
      i + 1 < args.length &&
      !args[i + 1].startsWith('-')
    ) {
      note(found, args[i + 1]);
      out.push(arg, REDACTED);
      i++;
      continue;
    }
    if (looksLikeToken(arg)) note(found, arg);
    out.push(looksLikeToken(arg) ? REDACTED : maskTokenShapes(redactUrl(arg, found), found));
  }
  return out;
}

/** Shorter values are left alone: masking every "1" or "on" in a message would garble it, and they guard nothing. */
const MIN_MASKED_LENGTH = 4;

/** `text` with every one of `secrets` (longest first, so one inside another goes whole) replaced by `***`. */
export function maskSecrets(text: string, secrets: Iterable<string>): string {
  const ordered = [...new Set(secrets)]
    .filter((s) => s.length >= MIN_MASKED_LENGTH)
    .sort((a, b) => b.length - a.length);
  let masked = text;
  for (const secret of ordered) masked = masked.replaceAll(secret, REDACTED);
  return masked;
}
