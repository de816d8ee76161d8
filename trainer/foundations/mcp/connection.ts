import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROLLOUT_STUDIO_VERSION } from '../../version';
import { describeServer, isStdioServer, maskServerSecrets, type McpServerConfig } from './mcpConfig';

/**
 * What a server says of one of its tools, and what a call returns: the fields of MCP's `Tool` and
 * `CallToolResult` we use. Our own types, so that the library's public declarations do not
 * depend on the SDK's (it is bundled, not a dependency of the package).
 */
export interface McpToolDescription {
  name: string;
  title?: string;
  description?: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
}

export interface McpCallResult {
  content?: unknown[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

/** The server could not be started or reached, or it exited more often than it may restart. */
export class McpServerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'McpServerError';
  }
}

export interface McpConnectionOptions {
  /** The folder relative paths (`cwd`, and a command's relative arguments) start from: the config's. */
  baseDir: string;
  /** Lines the server process writes to stderr, as they come (default: kept only for error messages). */
  onStderr?: (line: string) => void;
  /** Notes on the connection's life (restarts). */
  log?: (line: string) => void;
}

const STDERR_TAIL = 4000;

/**
 * One MCP server for the length of a run, through the official SDK's client: a process over
 * stdio (started here, stopped by `close`) or a Streamable HTTP endpoint.
 *
 * A stdio server that exits while the run goes on is restarted on the next call, at most
 * `maxRestarts` times; after that every call fails with an McpServerError that names the server,
 * says how often it exited, and quotes the end of its stderr. Calls in flight when it exits fail
 * (they become error observations); the run goes on. An HTTP endpoint that drops the connection
 * is reconnected on the next call.
 */
export class McpConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  private exits = 0;
  private stderrTail = '';
  private failure: McpServerError | undefined;

  constructor(
    readonly name: string,
    readonly server: McpServerConfig,
    private readonly options: McpConnectionOptions,
  ) {}

  get description(): string {
    return describeServer(this.name, this.server);
  }

  /** Connects (starting the process) and lists the server's tools, every page of them. */
  async start(): Promise<McpToolDescription[]> {
    const client = await this.connected();
    const tools: McpToolDescription[] = [];
    let cursor: string | undefined;
    do {
      let page;
      try {
        page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.server.startTimeoutMs });
      } catch (error) {
        const masked = this.maskedInPlace(error);
        throw new McpServerError(
          this.masked(`${this.description}: listing its tools failed: ${(error as Error).message}${this.stderrNote()}`),
          { cause: masked },
        );
      }
      tools.push(...(page.tools as McpToolDescription[]));
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /** One tool call. `timeoutMs` is the SDK's own limit, a backstop behind the runner's deadline (which aborts `signal`). */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<McpCallResult> {
    const client = await this.connected();
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
      })) as McpCallResult;
    } catch (error) {
      // The message becomes the policy's observation and is recorded with the trajectory.
      throw this.maskedInPlace(error);
    }
  }

  /** The error with this server's secrets masked in its message and stack: it is kept as a cause, which --verbose prints. */
  private maskedInPlace(error: unknown): unknown {
    if (!(error instanceof Error)) return error;
    const message = this.masked(error.message);
    const stack = error.stack === undefined ? undefined : this.masked(error.stack);
    // Nothing to mask (nearly always): the error as it was, its class and name intact (an AbortError stays one).
    if (message === error.message && stack === error.stack) return error;
    try {
      error.message = message;
      if (stack !== undefined) error.stack = stack;
      return error;
    } catch {
      // A message that cannot be set (a DOMException's is a getter): a new error carries the masked words.
      return new McpServerError(this.masked(`${error.name}: ${error.message}`));
    }
  }

  /** `text` without this server's secrets (messages of the SDK, fetch and the server's stderr use the real values). */
  private masked(text: string): string {
    return maskServerSecrets(text, this.server);
  }

  /** Stops the server process (stdio) or ends the session (HTTP). Calls after this fail. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  /** The stdio server's process id while it runs (tests check it is gone after close). */
  get pid(): number | null {
    const transport = this.client?.transport;
    return transport instanceof StdioClientTransport ? transport.pid : null;
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim();
    return tail ? `\n  its stderr ended with:\n    ${tail.split('\n').slice(-12).join('\n    ')}` : '';
  }

  private connected(): Promise<Client> {
    if (this.closed) return Promise.reject(new McpServerError(`${this.description} was closed (the run is over)`));
    if (this.failure) return Promise.reject(this.failure);
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting) {
      this.connecting = this.connect().finally(() => (this.connecting = undefined));
    }
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const server = this.server;
    if (this.exits > 0) {
      if (isStdioServer(server) && this.exits > server.maxRestarts) {
        this.failure = new McpServerError(
          this.masked(
            `${this.description} exited ${this.exits} times during the run (maxRestarts is ${server.maxRestarts}); its tools fail from now on${this.stderrNote()}`,
          ),
        );
        throw this.failure;
      }
      this.options.log?.(
        `${this.description} ${isStdioServer(server) ? `exited; restarting it (${this.exits} of ${server.maxRestarts} restarts)` : 'dropped the connection; reconnecting'}`,
      );
    }
    const client = new Client({ name: 'rollout-studio', version: ROLLOUT_STUDIO_VERSION });
    const transport = isStdioServer(server)
      ? new StdioClientTransport({
          command: server.command,
          args: server.args,
          env: { ...getDefaultEnvironment(), ...(server.env ?? {}) },
          cwd: path.resolve(this.options.baseDir, server.cwd ?? '.'),
          stderr: 'pipe',
        })
      : new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers ?? {} } });
    if (transport instanceof StdioClientTransport) {
      transport.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL);
        if (this.options.onStderr)
          for (const line of text.split('\n')) if (line.trim()) this.options.onStderr(this.masked(line));
      });
    }
    client.onclose = () => {
      if (this.client === client) {
        this.client = undefined;
        if (!this.closed) this.exits++;
      }
    };
    try {
      await client.connect(transport, { timeout: server.startTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      const masked = this.maskedInPlace(error);
      // A restart that fails counts against maxRestarts too, so a server that cannot come back is given up on.
      if (this.exits > 0) this.exits++;
      const what = isStdioServer(server) ? 'could not be started' : 'could not be reached';
      const hint =
        isStdioServer(server) && /ENOENT/.test(String((error as Error).message))
          ? ` (is "${server.command}" installed and on PATH?)`
          : '';
      throw new McpServerError(
        this.masked(`${this.description} ${what}: ${(error as Error).message}${hint}${this.stderrNote()}`),
        { cause: masked },
      );
    }
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new McpServerError(`${this.description} was closed (the run is over)`);
    }
    this.client = client;
    return client;
  }
}
