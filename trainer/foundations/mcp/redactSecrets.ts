/**
 * Secrets in what a run records about its MCP servers (run.json): a URL's user and password, its
 * query values named like credentials (`?token=…`, `api_key=…`, `sig=…`), and on a command line the
 * values of flags named so (`--api-key X`, `--token=X`) and `NAME=value` pairs named so. Each is
 * replaced by `***`; everything else stays as written, so a reader still recognises the server.
 */

export const REDACTED = '***';

/** A name that says it holds a credential: the whole name or one of its `-`/`_` parts. */
const CREDENTIAL = /^(api-?key|apikey|access-?token|auth|authorization|bearer|client-?secret|credentials?|key|pass|passwd|password|private-?key|secret|session|sig|signature|token)$/;

export function isCredentialName(name: string): boolean {
  const lower = name.toLowerCase().replace(/^-+/, '');
  if (CREDENTIAL.test(lower)) return true;
  return lower.split(/[-_.]/).some((part) => CREDENTIAL.test(part)) || CREDENTIAL.test(lower.replace(/_/g, '-'));
}

/** The URL with its credentials replaced; the same string when it has none (or is not a URL). */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  let changed = false;
  if (url.username) {
    url.username = REDACTED;
    changed = true;
  }
  if (url.password) {
    url.password = REDACTED;
    changed = true;
  }
  for (const key of [...new Set(url.searchParams.keys())]) {
    if (isCredentialName(key)) {
      url.searchParams.set(key, REDACTED);
      changed = true;
    }
  }
  return changed ? url.toString() : text;
}

/** A command line with the values of credential flags and `NAME=value` credentials replaced, and URLs redacted. */
export function redactArguments(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const assignment = /^(-{0,2}[A-Za-z][\w.-]*)=(.*)$/s.exec(arg);
    if (assignment && isCredentialName(assignment[1])) {
      out.push(`${assignment[1]}=${REDACTED}`);
      continue;
    }
    if (/^--?[A-Za-z][\w.-]*$/.test(arg) && isCredentialName(arg) && i + 1 < args.length && !args[i + 1].startsWith('-')) {
      out.push(arg, REDACTED);
      i++;
      continue;
    }
    out.push(redactUrl(arg));
  }
  return out;
}
