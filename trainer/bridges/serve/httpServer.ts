import * as http from 'node:http';
import * as path from 'node:path';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { McpServers } from '../../foundations/mcp/servers';
import { describeIssues } from '../../contract/protocol/parse';
import { RewardRequest, type RewardResponse, type ServeError } from '../../contract/protocol/serve';
import { RewardError } from '../../pipeline/rewards/rewardErrors';
import {
  placeConfigRewards,
  placeConfigTools,
  type LoadedConfig,
  type PlacedTools,
} from '../../pipeline/training/config/trainingConfig';
import { ToolSet } from '../../foundations/tools/toolSet';
import { listen, sameSecret, sendJson } from '../../foundations/http/localServer';
import { RewardRequestError, scoreRewardRequest } from './rewards';
import { ToolCallService } from './toolServer';
import {
  allowedHostNames,
  boundedServer,
  checkBatchSize,
  checkCaller,
  checkJsonBody,
  DEFAULT_LIMITS,
  readLimitedBody,
  RefusedRequest,
  type GuardLimits,
} from '../../foundations/http/requestGuard';

/**
 * `rollout-studio serve-tools`: one HTTP server with
 *
 *   /mcp      the config's tools (its own and its MCP servers') as an MCP server, Streamable HTTP,
 *             stateless (each request stands alone), answers as JSON;
 *   /reward   POST a RewardRequest, get a RewardResponse (contract/protocol/serve.ts);
 *   /health   GET: `{ ok: true, tools: [...] }`.
 *
 * Bound to 127.0.0.1 by default. Another host needs a token: every request must then carry
 * `Authorization: Bearer <token>`. Web pages are kept out whatever the host (foundations/http/requestGuard.ts):
 * a foreign `Host` or `Origin` gets 403 on every route, a POST must be `application/json`, and
 * the body and batch sizes are bounded.
 */

export interface ServeOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  token?: string;
  /** More names a client may use in `Host` (a DNS name of this machine, say). */
  allowHosts?: readonly string[];
  /** Web page origins (`https://app.example`) allowed to call; none by default. */
  allowOrigins?: readonly string[];
  limits?: Partial<GuardLimits>;
  log?: (line: string) => void;
}

export interface RunningToolServer {
  /** `http://host:port` */
  url: string;
  tools: ToolSet;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

export class ServeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServeConfigError';
  }
}

function fail(res: http.ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: message } satisfies ServeError);
}

/** A refused request's answer; past a size limit the connection closes too, so the rest of the body is never read. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, refused: RefusedRequest): void {
  if (refused.status === 413) res.setHeader('connection', 'close');
  fail(res, refused.status, refused.message);
  if (refused.status === 413) res.on('finish', () => req.destroy());
}

function authorised(req: http.IncomingMessage, token: string | undefined): boolean {
  return token === undefined || sameSecret(req.headers.authorization, `Bearer ${token}`);
}

export async function startToolServer(loaded: LoadedConfig, options: ServeOptions): Promise<RunningToolServer> {
  if (!LOOPBACK.has(options.host) && !options.token) {
    throw new ServeConfigError(
      `--host ${options.host} is reachable from other machines; set ROLLOUT_STUDIO_TOKEN or give --token-file FILE (clients send "Authorization: Bearer <token>"), or serve on 127.0.0.1`,
    );
  }
  const { tools, closeTools: closeServedTools } = await openServedTools(loaded, options.log);
  // /reward scores in the reward worker, as a training does: a reward that never returns is ended by its deadline, not the server.
  const placedRewards = await placeConfigRewards(loaded).catch(async (error: unknown) => {
    await closeServedTools();
    throw error;
  });
  const closeTools = async () => {
    await placedRewards.close();
    await closeServedTools();
  };
  const routes: Routes = {
    config: { ...loaded.config, rewards: placedRewards.rewards },
    tools,
    service: new ToolCallService(tools, options.log ? { onLog: options.log } : {}),
    limits: { ...DEFAULT_LIMITS, ...options.limits },
  };
  const hosts = allowedHostNames(options.host, options.allowHosts);
  const origins = new Set((options.allowOrigins ?? []).map((o) => o.toLowerCase()));

  const server = boundedServer(routes.limits, (req, res) => {
    const route = new URL(req.url ?? '/', 'http://localhost').pathname;
    try {
      checkCaller(req, hosts, origins);
    } catch (error) {
      return refuse(req, res, error as RefusedRequest);
    }
    if (!authorised(req, options.token))
      return fail(res, 401, 'missing or wrong token: send "Authorization: Bearer <token>"');
    const handle =
      route === '/mcp'
        ? handleMcp
        : route === '/reward'
          ? handleReward
          : route === '/health'
            ? async () => sendJson(res, 200, { ok: true, tools: tools.names })
            : async () => fail(res, 404, `no route ${route}; the routes are /mcp, /reward and /health`);
    handle(routes, req, res).catch((error: unknown) => {
      if (error instanceof RefusedRequest) return refuse(req, res, error);
      options.log?.(`serve-tools: ${req.method} ${route} failed: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) fail(res, 500, (error as Error).message ?? String(error));
      else res.end();
    });
  });
  const listening = await listen(server, options.host, options.port).catch(async (error: Error) => {
    await closeTools();
    throw new ServeConfigError(error.message);
  });
  return {
    url: listening.url,
    tools,
    close: async () => {
      await listening.close();
      await closeTools();
    },
  };
}

/** What the route handlers serve from. */
interface Routes {
  config: LoadedConfig['config'];
  tools: ToolSet;
  service: ToolCallService;
  limits: GuardLimits;
}

/** The config's own tools and its MCP servers' as one set; on a failure, whatever was opened is closed. */
async function openServedTools(
  loaded: LoadedConfig,
  log: ((line: string) => void) | undefined,
): Promise<{ tools: ToolSet; closeTools: () => Promise<void> }> {
  const mcp = await McpServers.open(loaded.config.mcpServers, {
    baseDir: path.dirname(loaded.file),
    ...(log ? { log } : {}),
  });
  let placed: PlacedTools | undefined;
  const closeTools = async () => {
    await placed?.close();
    await mcp.close();
  };
  try {
    placed = await placeConfigTools(loaded);
    return { tools: new ToolSet([...placed.tools, ...mcp.tools]), closeTools };
  } catch (error) {
    await closeTools();
    throw error;
  }
}

/** /mcp: one stateless MCP exchange per POST, a fresh server and transport for each. */
async function handleMcp(routes: Routes, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method !== 'POST') {
    // Stateless: no session to stream to (GET) or to end (DELETE).
    res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' }).end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed: this server is stateless; POST JSON-RPC requests' },
        id: null,
      }),
    );
    return;
  }
  checkJsonBody(req);
  const text = await readLimitedBody(req, routes.limits.maxBodyBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    res.writeHead(400, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32700, message: `Parse error: ${(error as Error).message}` },
        id: null,
      }),
    );
    return;
  }
  if (Array.isArray(body)) checkBatchSize(body.length, routes.limits, 'JSON-RPC batch');
  const server = routes.service.mcpServer();
  const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true }); // no session ids: stateless;
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** /reward: a RewardRequest scored by the config's reward functions. */
async function handleReward(routes: Routes, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method !== 'POST') return fail(res, 405, 'POST a JSON reward request to /reward');
  checkJsonBody(req);
  const text = await readLimitedBody(req, routes.limits.maxBodyBytes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail(res, 400, `the body is not JSON: ${(error as Error).message}`);
  }
  const items = (value as { items?: unknown } | null)?.items;
  if (Array.isArray(items)) checkBatchSize(items.length, routes.limits, '/reward');
  const parsed = RewardRequest.safeParse(value);
  if (!parsed.success) return fail(res, 400, describeIssues(parsed.error.issues));
  try {
    const response: RewardResponse = await scoreRewardRequest(routes.config, routes.tools, parsed.data, (name, args) =>
      routes.service.dataFor(name, args),
    );
    sendJson(res, 200, response);
  } catch (error) {
    if (error instanceof RewardRequestError) return fail(res, 400, error.message);
    if (error instanceof RewardError) return fail(res, 500, error.message);
    throw error;
  }
}
