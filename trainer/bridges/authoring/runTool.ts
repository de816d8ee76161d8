import { describeIssues } from '../../contract/protocol/parse';
import type { ArgumentCheck, ArgumentIssue, ToolInfo, ToolRunReport } from '../../contract/protocol/authoring';
import type { DatasetRow } from '../../foundations/data/row';
import { describeThrown, ToolRunner, type ToolCallRequest } from '../../foundations/tools/runner';
import { observationText } from '../../foundations/tools/result';
import type { Tool } from '../../foundations/tools/tool';
import { ToolSet } from '../../foundations/tools/toolSet';
import { WorkerTool } from '../usercode/toolHost';

/**
 * One tool, run by hand: what Run Tool… and Debug Tool do. The arguments are checked with the
 * tool's own zod schema (each bad field named) and the call goes through the same ToolRunner a
 * rollout uses — timeout, error kinds, output checks — outside any trajectory.
 */

export function toolInfo(tool: Tool): ToolInfo {
  // A tool run in a worker (run-tool) is shown as the user's class, not as the stand-in that forwards to it.
  const className = (tool instanceof WorkerTool ? tool.original : tool).constructor.name;
  return {
    name: tool.name,
    description: tool.description,
    className,
    parameters: tool.jsonSchema(),
    timeoutMs: tool.timeoutMs,
  };
}

/** Checks the arguments against the tool's schema without running it. */
export async function checkArguments(tool: Tool, args: unknown): Promise<ArgumentCheck> {
  let parsed;
  try {
    parsed = await tool.parameters.safeParseAsync(args);
  } catch (error) {
    return {
      ok: false,
      message: `validating the arguments threw: ${describeThrown(error).split('\n')[0]}`,
      issues: [],
    };
  }
  if (parsed.success) return { ok: true };
  const issues: ArgumentIssue[] = parsed.error.issues.map((issue) => ({
    path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    message: issue.message,
  }));
  return { ok: false, message: describeIssues(parsed.error.issues), issues };
}

/** `data` as plain JSON (it is the user's value: a Map or a cycle must not break the report). */
function jsonSafe(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch (error) {
    return `(not JSON: ${(error as Error).message})`;
  }
}

/** A dataset row for a call made by hand: no ground truth, no per-row tool arguments. */
function handRow(tool: Tool): DatasetRow {
  return { id: 'run-tool', messages: [], toolArgs: {}, source: { file: `run-tool ${tool.name}`, line: 1 } };
}

export async function runToolOnce(
  tool: Tool,
  args: unknown,
  options: { onLog?: (line: string) => void } = {},
): Promise<ToolRunReport> {
  const info = toolInfo(tool);
  const check = await checkArguments(tool, args);
  if (!check.ok) {
    return {
      tool: info,
      arguments: args,
      error: {
        kind: 'invalid_arguments',
        message: `arguments of ${tool.name} do not match its schema: ${check.message}`,
      },
      issues: check.issues,
      latencyMs: 0,
      logs: [],
    };
  }
  const runner = new ToolRunner(new ToolSet([tool]), {
    onLog: (line) => options.onLog?.(`${line.level}: ${line.message}`),
  });
  const request: ToolCallRequest = {
    name: tool.name,
    arguments: args,
    trajectory: { index: 0, rowId: 'run-tool', group: 0, sample: 0, messages: [], calls: [] },
    turn: 0,
    callIndex: 0,
    row: handRow(tool),
  };
  const [outcome] = await runner.run([request]);
  const report: ToolRunReport = {
    tool: info,
    arguments: outcome.arguments,
    latencyMs: outcome.latencyMs,
    logs: outcome.logs,
  };
  if (outcome.error) report.error = outcome.error;
  if (outcome.result) {
    report.observation = observationText(outcome.result);
    if (outcome.result.data !== undefined) report.data = jsonSafe(outcome.result.data);
  }
  return report;
}
