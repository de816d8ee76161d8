import * as fs from 'node:fs';
import * as inspector from 'node:inspector';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { parseWith, ToolSessionRequest, type ToolSelector } from '../../../contract/protocol';
import { checkArguments, runToolOnce, toolInfo } from '../../authoring/runTool';
import { watchExitDuringCall, type WriteEndedCall } from '../../authoring/exitDuringCall';
import { formatToolRun } from '../../../contract/authoringReport';
import { exportedTools, selectTool } from '../../usercode/selectTool';
import { UserCodeError } from '../../../foundations/tools/toolErrors';
import { compileUserModule, evaluateUserModule, loadUserModule } from '../../usercode/loadUserModule';
import { isolateSelectedTool, WorkerTool } from '../../usercode/toolHost';
import type { Tool } from '../../../foundations/tools/tool';
import type { ToolRunReport } from '../../../contract/protocol/authoring';
import { declaredMcpServers, openDeclaredMcpServers } from '../../authoring/mcpTools';
import { McpServers } from '../../../foundations/mcp/servers';
import { hasParent, sendToParent } from '../ipc';
import { UsageError } from '../usage';

export const runToolUsage = `rollout-studio run-tool <file.ts> [--tool NAME | --class NAME | --export PATH] [options]

Runs one tool of a module by hand: the arguments are checked with the tool's schema (each bad
field named) and the call goes through the runner a rollout uses, in a tool worker as in a
rollout (timeout, error kinds; isolation: 'trainer' and --inspect keep it on this thread).
  --tool NAME      the tool the policy calls NAME
  --class NAME     the exported instance of class NAME (or new NAME() when the module exports
                   the class and its constructor needs no arguments)
  --export PATH    the tool at an export path: search, tools[0]
                   (none of the three: the module's only tool)
  --mcp-server S   a tool of the MCP server S that the module's config declares
                   (mcpServers); with --tool NAME, or --list for its tools. --tool NAME
                   alone also finds MCP tools when no exported tool has that name
  --args JSON      the arguments, a JSON object (default {})
  --list           print the tools (JSON: name, description, parameters) instead of running one
  --json           print the report as JSON
  --ipc            send the report to the extension that started this process
  --session        with --ipc: stay up and answer the extension's tool.check and tool.run
                   messages until it disconnects (Run Tool… and Debug Tool in the editor)
  --inspect        with --session: open the Node inspector on a free port of 127.0.0.1 and
                   report its URL, so a debugger can attach before the tool runs
Exit code 1 when the call fails (bad arguments, a throw, a timeout, process.exit in the tool),
unless --ipc.`;

function selectorFrom(values: {
  tool?: string;
  class?: string;
  export?: string;
  'mcp-server'?: string;
  list?: boolean;
}): ToolSelector | undefined {
  if (values['mcp-server'] !== undefined) {
    if (values.class !== undefined || values.export !== undefined)
      throw new UsageError('--mcp-server takes --tool NAME, not --class or --export');
    if (values.tool === undefined)
      return values.list
        ? undefined
        : (() => {
            throw new UsageError('--mcp-server needs --tool NAME (or --list)');
          })();
    return { by: 'mcp', server: values['mcp-server'], tool: values.tool };
  }
  const given = [values.tool, values.class, values.export].filter((v) => v !== undefined);
  if (given.length > 1) throw new UsageError('give at most one of --tool, --class and --export');
  if (values.tool !== undefined) return { by: 'name', name: values.tool };
  if (values.class !== undefined) return { by: 'class', name: values.class };
  if (values.export !== undefined) return { by: 'export', path: values.export };
  return undefined;
}

function parseJsonArgs(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--args: not valid JSON (${(error as Error).message})`);
  }
}

/** The tool to run, and what was started to run it (MCP servers, a tool worker), closed when the command ends. */
interface LoadedTool {
  tool: Tool;
  servers: McpServers;
  close?: () => Promise<void>;
  /** The tool runs on this thread (isolation: 'trainer', Debug Tool): a process.exit in it ends the command (exitDuringCall.ts). */
  onThisThread?: boolean;
}

async function loadTool(file: string, selector: ToolSelector | undefined, isolate: boolean): Promise<LoadedTool> {
  const code = await compileUserModule(file);
  const exports = evaluateUserModule(file, code);
  if (selector?.by === 'mcp') return mcpTool(exports, file, selector.server, selector.tool);
  if (
    selector?.by === 'name' &&
    !exportedTools(exports).some((t) => t.name === selector.name) &&
    declaredMcpServers(exports) !== undefined
  ) {
    return mcpTool(exports, file, undefined, selector.name);
  }
  // The tool runs in a worker, as in a rollout: the worker finds it in the same code by the same
  // selector. Not under Debug Tool (--inspect): breakpoints bind on this thread.
  const inWorker = async (tool: Tool, by: ToolSelector): Promise<LoadedTool> => {
    if (!isolate) return { tool, servers: McpServers.none(), onThisThread: true };
    const placed = await isolateSelectedTool(file, code, tool, by);
    return {
      tool: placed.tool,
      servers: McpServers.none(),
      close: placed.close,
      onThisThread: !(placed.tool instanceof WorkerTool),
    };
  };
  if (selector) return inWorker(selectTool(exports, selector, file), selector);
  const tools = exportedTools(exports);
  if (tools.length === 1) return inWorker(tools[0], { by: 'name', name: tools[0].name });
  throw new UserCodeError(
    `${file}: ${tools.length ? `exports ${tools.length} tools (${tools.map((t) => t.name).join(', ')}); say which with --tool NAME` : 'exports no tools; export an instance: export const tool = new MyTool()'}`,
  );
}

async function mcpTool(
  exports: Record<string, unknown>,
  file: string,
  server: string | undefined,
  name: string,
): Promise<LoadedTool> {
  const servers = await openDeclaredMcpServers(exports, file, server);
  const tool = servers.tools.find((t) => t.name === name);
  if (tool) return { tool, servers };
  await servers.close();
  const where = server !== undefined ? `MCP server "${server}"` : 'the module and its MCP servers';
  throw new UserCodeError(
    `${file}: ${where} ha${server !== undefined ? 's' : 've'} no tool named "${name}" (MCP tools: ${servers.tools.map((t) => t.name).join(', ') || 'none'})`,
  );
}

/** Answers the extension until it disconnects; the tool module stays loaded (and debuggable) in between. */
function serve(tool: Tool, run: (args: unknown) => Promise<ToolRunReport>): Promise<number> {
  return new Promise((resolve, reject) => {
    process.on('message', (raw) => {
      let request: ToolSessionRequest;
      try {
        request = parseWith(ToolSessionRequest, raw, 'request from the extension');
      } catch (error) {
        reject(error);
        return;
      }
      const answer =
        request.type === 'tool.check'
          ? checkArguments(tool, request.args).then((check) =>
              sendToParent({ type: 'tool.checked', id: request.id, check }),
            )
          : run(request.args).then((report) => sendToParent({ type: 'tool.result', id: request.id, report }));
      answer.catch(reject);
    });
    process.on('disconnect', () => resolve(0));
  });
}

export async function runToolCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tool: { type: 'string' },
      class: { type: 'string' },
      export: { type: 'string' },
      args: { type: 'string' },
      json: { type: 'boolean', default: false },
      ipc: { type: 'boolean', default: false },
      session: { type: 'boolean', default: false },
      inspect: { type: 'boolean', default: false },
      'mcp-server': { type: 'string' },
      list: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one tool file');
  if (values.session && !values.ipc)
    throw new UsageError('--session needs --ipc (it answers the extension that started it)');
  if (values.inspect && !values.session) throw new UsageError('--inspect needs --session');
  if (values.ipc && !hasParent())
    throw new UsageError('--ipc was given but this process has no IPC channel; it must be started by the extension');
  const file = path.resolve(positionals[0]);
  const selector = selectorFrom(values);
  const args = values.args === undefined ? {} : parseJsonArgs(values.args);

  if (values.list) {
    if (values['mcp-server'] === undefined) throw new UsageError('--list needs --mcp-server S');
    const servers = await openDeclaredMcpServers(await loadUserModule(file), file, values['mcp-server']);
    process.stdout.write(JSON.stringify(servers.tools.map(toolInfo), null, 2) + '\n');
    await servers.close();
    return 0;
  }
  const { tool, servers, close, onThisThread } = await loadTool(file, selector, !values.inspect);
  try {
    return await runLoaded(tool, file, args, { ...values, onThisThread: onThisThread ?? false });
  } finally {
    await close?.();
    await servers.close();
  }
}

/**
 * The report of a call the tool ended with process.exit, where a finished call's report would go;
 * over IPC on stderr, whose last lines the extension shows when the process exits during a call.
 */
function endedCallWriter(file: string, values: { ipc: boolean; json: boolean }): WriteEndedCall {
  return (report) => {
    if (values.ipc) fs.writeSync(2, `rollout-studio: ${report.error?.message}\n`);
    else fs.writeSync(1, (values.json ? JSON.stringify(report, null, 2) : formatToolRun(report, file)) + '\n');
  };
}

async function runLoaded(
  tool: Tool,
  file: string,
  args: unknown,
  values: { session: boolean; inspect: boolean; ipc: boolean; json: boolean; onThisThread: boolean },
): Promise<number> {
  const write = endedCallWriter(file, values);
  const run = (callArgs: unknown) =>
    values.onThisThread
      ? watchExitDuringCall(tool, callArgs, write, () => runToolOnce(tool, callArgs))
      : runToolOnce(tool, callArgs);
  if (values.session) {
    // Opened after loading: the tool's module is compiled by then, and its source map is there to bind breakpoints to.
    let inspectorUrl: string | undefined;
    if (values.inspect) {
      inspector.open(0, '127.0.0.1');
      inspectorUrl = inspector.url();
    }
    await sendToParent({
      type: 'tool.ready',
      tool: toolInfo(tool),
      file,
      ...(inspectorUrl ? { inspectorUrl } : {}),
    });
    return serve(tool, run);
  }
  const report = await run(args);
  if (values.ipc) await sendToParent({ type: 'tool.result', report });
  else process.stdout.write(values.json ? JSON.stringify(report, null, 2) + '\n' : formatToolRun(report, file) + '\n');
  // Over IPC the failure travels in the report; the process itself did its job.
  return report.error && !values.ipc ? 1 : 0;
}
