import * as path from 'node:path';
import * as vscode from 'vscode';
import { z } from 'zod';
import { parseWith, ToolInfo, type ToolRunReport } from '../../trainer/contract/protocol';
import { TrainerProcessError } from '../trainerProcess';
import { saveIfDirty, showFailure, trainerLaunch, type AuthoringContext } from './authoringContext';
import type { McpServerTarget } from './lensSpecs';
import { runToolFromEditor, type RunToolOptions } from './toolCommands';
import { execFileWorkspaceCode, type WorkspaceCodeUse } from '../workspaceCode';
import { requireTrust } from '../workspaceTrust';

/**
 * Run MCP Tool…, the lens above a server of a config's `mcpServers`: the trainer starts the
 * server as training would and lists its tools (`run-tool --mcp-server S --list`), the user picks
 * one, and from there it is Run Tool… on that tool (the arguments checked against the server's
 * JSON Schema as they are typed, the call through the trainer's runner).
 */

export interface RunMcpToolOptions extends RunToolOptions {
  /** The tool (the name the policy calls it), instead of asking (programmatic use, tests). */
  tool?: string;
}

function isServerTarget(value: unknown): value is McpServerTarget {
  const t = value as McpServerTarget | undefined;
  return typeof t === 'object' && t !== null && typeof t.file === 'string' && typeof t.server === 'string';
}

/** What listing the tools runs: the config (evaluated to find the server) and the server's command. */
function mcpUse(target: McpServerTarget): WorkspaceCodeUse {
  return { action: 'Run MCP Tool', runs: `the config ${target.file} and its MCP server ${target.server}` };
}

function listTools(context: AuthoringContext, target: McpServerTarget): Promise<ToolInfo[]> {
  const { runtime, cliPath } = trainerLaunch(context);
  return new Promise((resolve, reject) => {
    execFileWorkspaceCode(
      mcpUse(target),
      runtime.command,
      [cliPath, 'run-tool', target.file, '--mcp-server', target.server, '--list'],
      {
        cwd: vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.file))?.uri.fsPath ?? path.dirname(target.file),
        env: runtime.env,
        maxBuffer: 16 * 1024 * 1024,
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        if (error) {
          const detail = stderr.replace(/^rollout-studio: /, '').trim() || error.message;
          reject(new TrainerProcessError(`Could not list the tools of ${target.label}.`, detail));
          return;
        }
        try {
          resolve(parseWith(z.array(ToolInfo), JSON.parse(stdout), `the tools of ${target.label}`));
        } catch (problem) {
          reject(
            new TrainerProcessError(
              `The trainer listed the tools of ${target.label} in a form this extension does not read.`,
              (problem as Error).message,
            ),
          );
        }
      },
    );
  });
}

export async function runMcpToolCommand(
  context: AuthoringContext,
  target: unknown,
  options: RunMcpToolOptions = {},
): Promise<ToolRunReport | undefined> {
  if (!isServerTarget(target)) {
    void vscode.window.showInformationMessage(
      "Run MCP Tool… runs from the code lens above a server of a training config's mcpServers.",
    );
    return undefined;
  }
  // Before listing: that starts the server. A lens click skips the command's enablement (microsoft/vscode#111354).
  if (!requireTrust(mcpUse(target))) return undefined;
  await saveIfDirty(target.file);
  let tools: ToolInfo[];
  try {
    tools = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Starting ${target.label}…` },
      () => listTools(context, target),
    );
  } catch (error) {
    showFailure(context, 'Run MCP Tool', error);
    return undefined;
  }
  let name = options.tool;
  if (name === undefined) {
    const picked = await vscode.window.showQuickPick(
      tools.map((t) => ({ label: t.name, detail: t.description })),
      {
        title: `Run MCP Tool: ${target.label}`,
        placeHolder: `Which of its ${tools.length} tools?`,
        matchOnDetail: true,
      },
    );
    if (!picked) return undefined;
    name = picked.label;
  } else if (!tools.some((t) => t.name === name)) {
    showFailure(
      context,
      'Run MCP Tool',
      new TrainerProcessError(
        `${target.label} has no tool named "${name}".`,
        `Its tools: ${tools.map((t) => t.name).join(', ') || 'none'}`,
      ),
    );
    return undefined;
  }
  return runToolFromEditor(
    context,
    {
      file: target.file,
      selector: { by: 'mcp', server: target.server, tool: name },
      label: `${name} (${target.label})`,
    },
    options,
    false,
  );
}
