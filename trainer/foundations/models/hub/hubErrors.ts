import { HubApiError } from '@huggingface/hub';
import { formatBytes } from '../../../contract/formatBytes';
import type { HubSettings } from './hubSettings';

/**
 * A Hub download that cannot go on, said in terms of what the user does next: the repo, the
 * revision, the cache folder, the environment variable to set. Printed without a stack trace.
 */
export class HubError extends Error {
  constructor(
    message: string,
    /**
     * `repo-not-found`: the Hub has no such repo (or hides a private one); `unreachable`: the Hub
     * did not answer. Either way a name like `runs/abc` may have been meant as a folder.
     */
    readonly reason?: 'repo-not-found' | 'unreachable',
  ) {
    super(message);
    this.name = 'HubError';
  }
}

/** What a failed request was about, for the message. */
export interface HubRequestContext {
  repo: string;
  revision: string;
  settings: HubSettings;
  /** The file being downloaded, when it was a file. */
  file?: string;
  /** The commit the cache holds for this revision, if any: offered as the way out when the network is down. */
  cachedCommit?: string;
}

/** An HTTP answer that was not a success, with the Hub's own error code (`X-Error-Code`). */
export interface HubHttpFailure {
  status: number;
  url: string;
  errorCode: string | undefined;
  /** The Hub's `X-Error-Message`, or the `error` field of its JSON body. */
  serverMessage: string | undefined;
}

const NETWORK_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** The system error code behind a failed `fetch` (undici wraps it in `cause`), if it is a network failure. */
export function networkErrorCode(error: unknown): string | undefined {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return e.code;
    // AggregateError: one per address tried (IPv4 and IPv6).
    const errors = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(errors)) for (const inner of errors) if (networkErrorCode(inner)) return networkErrorCode(inner);
  }
  if (error instanceof TypeError && /fetch failed|terminated|other side closed/i.test(error.message)) {
    const cause = (error as { cause?: { message?: unknown } }).cause?.message;
    return typeof cause === 'string' && cause ? `connection failed: ${cause}` : 'connection failed';
  }
  return undefined;
}

function repoPage(context: HubRequestContext): string {
  return `${context.settings.endpoint}/${context.repo}`;
}

/** The error for an HTTP failure of a Hub request (the revision API, the file listing or a file). */
export function httpFailureError(failure: HubHttpFailure, context: HubRequestContext): HubError {
  const { repo, revision, settings } = context;
  const what = context.file ? `${context.file} of ${repo}` : repo;
  const server = failure.serverMessage ? ` (the Hub said: ${failure.serverMessage})` : '';
  const tokenState = settings.token ? 'the token in HF_TOKEN has no access to it' : 'no token is set (HF_TOKEN)';
  if (failure.errorCode === 'RevisionNotFound') {
    return new HubError(
      `${repo} has no revision "${revision}": expected a branch, a tag or a full commit hash of the repo (see ${repoPage(context)}/tree/main)${server}`,
    );
  }
  if (failure.errorCode === 'GatedRepo') {
    return new HubError(
      `${repo} is a gated model and ${tokenState}. Accept its licence on ${repoPage(context)} while logged in, then set HF_TOKEN to an access token of that account (${settings.endpoint}/settings/tokens)${server}`,
    );
  }
  if (failure.errorCode === 'EntryNotFound')
    return new HubError(`${what}: the file is not in revision "${revision}" of ${repo}${server}`);
  if (failure.status === 401 && /invalid credentials|invalid.*token|expired/i.test(failure.serverMessage ?? '')) {
    return new HubError(
      `${settings.endpoint} refused the access token in HF_TOKEN (invalid or expired) while fetching ${what}; create a new one at ${settings.endpoint}/settings/tokens${server}`,
    );
  }
  if (failure.errorCode === 'RepoNotFound' || failure.status === 404 || failure.status === 401) {
    return new HubError(
      `${repo} was not found on ${settings.endpoint}${failure.status === 401 ? ' or is private' : ''}: check the repo id (org/name, as in its page's URL). ` +
        `If it is private or gated, ${tokenState}: set HF_TOKEN to an access token that can read it and accept its licence on ${repoPage(context)}${server}`,
      'repo-not-found',
    );
  }
  if (failure.status === 403) {
    return new HubError(
      `${settings.endpoint} refused access to ${what} (403): accept the licence on ${repoPage(context)} and make sure the token in HF_TOKEN can read the repo${server}`,
    );
  }
  if (failure.status === 416)
    return new HubError(
      `${what}: the server refused to resume the download (416); delete the .incomplete file in ${settings.cacheDir} and pull again${server}`,
    );
  if (failure.status === 429)
    return new HubError(
      `${settings.endpoint} is rate-limiting downloads of ${what} (429); wait a few minutes and pull again${server}`,
    );
  return new HubError(
    `${settings.endpoint} answered ${failure.status} for ${what} (${failure.url}); try again later${server}`,
  );
}

const NETWORK_WORDS: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be looked up',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  UND_ERR_SOCKET: 'the connection was closed',
  UND_ERR_HEADERS_TIMEOUT: 'the server did not answer in time',
  UND_ERR_BODY_TIMEOUT: 'the transfer stalled',
};

/** The error for a request that never got an answer. */
export function networkError(code: string, context: HubRequestContext): HubError {
  const reason = NETWORK_WORDS[code] ? `${NETWORK_WORDS[code]} (${code})` : code;
  const cached = context.cachedCommit
    ? ` The cache has revision "${context.revision}" of ${context.repo} (commit ${context.cachedCommit.slice(0, 12)}): set HF_HUB_OFFLINE=1 to use it.`
    : ` Offline? Set HF_HUB_OFFLINE=1 to use the Hugging Face cache (${context.settings.cacheDir}); it does not have ${context.repo} yet, so download it once where the network works (rollout-studio pull ${context.repo}).`;
  const proxy = context.settings.endpoint === 'https://huggingface.co' ? '' : ' (set by HF_ENDPOINT)';
  return new HubError(
    `cannot reach ${context.settings.endpoint}${proxy} to ${context.file ? `download ${context.file} of` : 'look up'} ${context.repo}: ${reason}.${cached}`,
    'unreachable',
  );
}

/** Writing to the cache failed: a full disk names the folder to clean or move. */
export function cacheWriteError(
  error: NodeJS.ErrnoException,
  context: HubRequestContext & { bytesNeeded?: number },
): HubError | undefined {
  const { settings, repo, file } = context;
  if (error.code === 'ENOSPC' || error.code === 'EDQUOT') {
    return new HubError(
      `no space left on the disk of the Hugging Face cache ${settings.cacheDir} while downloading ${file ?? 'files'} of ${repo}` +
        `${context.bytesNeeded !== undefined ? ` (${formatBytes(context.bytesNeeded)} still to download)` : ''}. Free space there, or set HF_HUB_CACHE to a folder on a disk with room; the part already downloaded is kept and the next pull resumes it`,
    );
  }
  if (error.code === 'EACCES' || error.code === 'EROFS' || error.code === 'EPERM') {
    return new HubError(
      `cannot write to the Hugging Face cache ${settings.cacheDir} (${error.code}: ${error.message}); set HF_HUB_CACHE (or HF_HOME) to a folder you can write`,
    );
  }
  return undefined;
}

/** What a `HubApiError` from @huggingface/hub says, with the `X-Error-Code` the fetch wrapper saw for its URL. */
export function failureOfApiError(error: HubApiError, errorCodes: ReadonlyMap<string, string>): HubHttpFailure {
  const data = error.data as { error?: unknown; message?: unknown } | undefined;
  const serverMessage =
    typeof data?.error === 'string'
      ? data.error
      : typeof data?.message === 'string' && data.message
        ? data.message
        : undefined;
  return { status: error.statusCode, url: error.url, errorCode: errorCodes.get(error.url), serverMessage };
}

export function isHubApiError(error: unknown): error is HubApiError {
  return error instanceof HubApiError;
}
