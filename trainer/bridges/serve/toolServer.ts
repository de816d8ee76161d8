import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DatasetRow } from '../../foundations/data/row';
import { defaultErrorObservation } from '../../pipeline/rollout/errorObservation';
import type { ToolContent } from '../../foundations/tools/result';
import { ToolRunner } from '../../foundations/tools/runner';
import type { ToolSet } from '../../foundations/tools/toolSet';
import { ROLLOUT_STUDIO_VERSION } from '../../version';

/**
 * A config's tools as an MCP server (the SDK's low-level `Server`, so the schemas it lists are
 * exactly the ones our chat template shows: `Tool.jsonSchema()`, zod's `z.toJSONSchema`).
 *
 * Calls go through the same ToolRunner a rollout uses — the tool's zod schema, its timeout, its
 * concurrency limit, its error kinds — and a failed call is answered as an error result
 * (`isError: true`) whose text is the observation our own loop shows the policy
 * (`defaultErrorObservation`), so a policy trained elsewhere sees what it would see here, and the
 * reward endpoint can tell the error kind back from the text.
 *
 * A served call belongs to no dataset row: `ctx.row` is empty and `ctx.rowArgs` undefined (verl's
 * MCP tools send only the arguments).
 */

const SERVED_ROW: DatasetRow = {
  id: 'serve-tools',
  messages: [],
  toolArgs: {},
  source: { file: 'serve-tools', line: 1 },
};

/** How many served calls' `data` are remembered for the reward endpoint. */
const REMEMBERED_CALLS = 50_000;

export class ToolCallService {
  private readonly runner: ToolRunner;
  private calls = 0;
  /**
   * The `data` of recent successful calls, by tool and validated arguments. A trajectory comes
   * back to the reward endpoint as text only, but a tool's process reward may read `data` (the
   * ids of the documents a search found): the calls were served here, so their data is looked up.
   */
  private readonly data = new Map<string, unknown>();

  constructor(
    readonly tools: ToolSet,
    options: { onLog?: (line: string) => void } = {},
  ) {
    this.runner = new ToolRunner(tools, {
      onLog: (line) => options.onLog?.(`${line.tool}: ${line.level}: ${line.message}`),
    });
  }

  /** The tools as `tools/list` lists them. */
  list() {
    return this.tools.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: { type: 'object' as const, ...tool.jsonSchema() },
    }));
  }

  async call(name: string, args: unknown): Promise<CallToolResult> {
    const index = this.calls++;
    const [outcome] = await this.runner.run([
      {
        name,
        arguments: args ?? {},
        trajectory: { index, rowId: SERVED_ROW.id, group: 0, sample: 0, messages: [], calls: [] },
        turn: 0,
        callIndex: 0,
        row: SERVED_ROW,
      },
    ]);
    if (outcome.error) {
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: defaultErrorObservation({ ...outcome.error, ...(this.tools.get(name) ? { tool: name } : {}) }),
          },
        ],
      };
    }
    if (outcome.result!.data !== undefined) this.remember(callKey(name, outcome.arguments), outcome.result!.data);
    return { content: outcome.result!.content.map(mcpContent) };
  }

  /** The data of the latest served call of `name` with these (validated) arguments, if remembered. */
  dataFor(name: string, args: unknown): unknown {
    return this.data.get(callKey(name, args));
  }

  private remember(key: string, data: unknown): void {
    this.data.delete(key);
    this.data.set(key, data);
    if (this.data.size > REMEMBERED_CALLS) this.data.delete(this.data.keys().next().value!);
  }

  /** A fresh MCP server over this service (one per HTTP request: the endpoint is stateless). */
  mcpServer(): Server {
    const server = new Server(
      { name: 'rollout-studio', version: ROLLOUT_STUDIO_VERSION },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: this.list() }));
    server.setRequestHandler(CallToolRequestSchema, async (request) =>
      this.call(request.params.name, request.params.arguments),
    );
    return server;
  }
}

function callKey(name: string, args: unknown): string {
  return `${name}\u0000${JSON.stringify(args)}`;
}

/** Our content part as MCP's: text as text, an image as base64 with its MIME type (from the bytes' signature when the tool gave none). */
function mcpContent(part: ToolContent): CallToolResult['content'][number] {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const bytes = typeof part.data === 'string' ? Buffer.from(part.data, 'base64') : Buffer.from(part.data);
  return { type: 'image', data: bytes.toString('base64'), mimeType: part.mimeType ?? imageMimeType(bytes) };
}

function imageMimeType(bytes: Buffer): string {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return 'application/octet-stream';
}
