import * as inspector from 'node:inspector';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { parseWith, PROTOCOL_VERSION, ToolSessionRequest, type ToolSelector } from '../../shared/protocol';
import { checkArguments, runToolOnce, toolInfo } from '../../authoring/runTool';
import { formatToolRun } from '../../shared/authoringReport';
import { exportedTools, selectTool } from '../../authoring/selectTool';
import { UserCodeError } from '../../tools/toolErrors';
import { loadUserModule } from '../../usercode/loadUserModule';
import type { Tool } from '../../tools/tool';
import { hasParent, sendToParent } from '../ipc';
import { UsageError } from '../usage';

export const runToolUsage = `rollout-studio run-tool <file.ts> [--tool NAME | --class NAME | --export PATH] [options]

Runs one tool of a module by hand: the arguments are checked with the tool's schema (each bad
field named) and the call goes through the runner a rollout uses (timeout, error kinds).
  --tool NAME      the tool the policy calls NAME
  --class NAME     the exported instance of class NAME (or new NAME() when the module exports
                   the class and its constructor needs no arguments)
  --export PATH    the tool at an export path: search, tools[0]
                   (none of the three: the module's only tool)
  --args JSON      the arguments, a JSON object (default {})
  --json           print the report as JSON
  --ipc            send the report to the extension that started this process
  --session        with --ipc: stay up and answer the extension's tool.check and tool.run
                   messages until it disconnects (Run Tool… and Debug Tool in the editor)
  --inspect        with --session: open the Node inspector on a free port of 127.0.0.1 and
                   report its URL, so a debugger can attach before the tool runs
Exit code 1 when the call fails (bad arguments, a throw, a timeout), unless --ipc.`;

function selectorFrom(values: { tool?: string; class?: string; export?: string }): ToolSelector | undefined {
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

async function loadTool(file: string, selector: ToolSelector | undefined): Promise<Tool> {
  const exports = await loadUserModule(file);
  if (selector) return selectTool(exports, selector, file);
  const tools = exportedTools(exports);
  if (tools.length === 1) return tools[0];
  throw new UserCodeError(
    `${file}: ${tools.length ? `exports ${tools.length} tools (${tools.map((t) => t.name).join(', ')}); say which with --tool NAME` : 'exports no tools; export an instance: export const tool = new MyTool()'}`,
  );
}

/** Answers the extension until it disconnects; the tool module stays loaded (and debuggable) in between. */
function serve(tool: Tool): Promise<number> {
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
          ? checkArguments(tool, request.args).then((check) => sendToParent({ protocol: PROTOCOL_VERSION, type: 'tool.checked', id: request.id, check }))
          : runToolOnce(tool, request.args).then((report) => sendToParent({ protocol: PROTOCOL_VERSION, type: 'tool.result', id: request.id, report }));
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
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one tool file');
  if (values.session && !values.ipc) throw new UsageError('--session needs --ipc (it answers the extension that started it)');
  if (values.inspect && !values.session) throw new UsageError('--inspect needs --session');
  if (values.ipc && !hasParent()) throw new UsageError('--ipc was given but this process has no IPC channel; it must be started by the extension');
  const file = path.resolve(positionals[0]);
  const selector = selectorFrom(values);
  const args = values.args === undefined ? {} : parseJsonArgs(values.args);

  const tool = await loadTool(file, selector);
  if (values.session) {
    // Opened after loading: the tool's module is compiled by then, and its source map is there to bind breakpoints to.
    let inspectorUrl: string | undefined;
    if (values.inspect) {
      inspector.open(0, '127.0.0.1');
      inspectorUrl = inspector.url();
    }
    await sendToParent({ protocol: PROTOCOL_VERSION, type: 'tool.ready', tool: toolInfo(tool), file, ...(inspectorUrl ? { inspectorUrl } : {}) });
    return serve(tool);
  }
  const report = await runToolOnce(tool, args);
  if (values.ipc) await sendToParent({ protocol: PROTOCOL_VERSION, type: 'tool.result', report });
  else process.stdout.write(values.json ? JSON.stringify(report, null, 2) + '\n' : formatToolRun(report, file) + '\n');
  // Over IPC the failure travels in the report; the process itself did its job.
  return report.error && !values.ipc ? 1 : 0;
}
