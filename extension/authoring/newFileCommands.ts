import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TOOL_NAME_PATTERN, TOOL_NAME_RULE } from '../../trainer/contract/protocol/authoring';
import { configTemplate, indentLike, rewardTemplate, toolTemplate } from './templates';

/**
 * New Tool, New Reward and New Training Config: ask for a name (checked as it is typed), write
 * the file from the same text as the snippet (templates.ts), open it. The file goes next to the
 * active editor's file when that is in the workspace, else into the first workspace folder.
 */

export interface NewFileOptions {
  /** The name, instead of asking (programmatic use, tests). */
  name?: string;
  /** The folder to write into, instead of the active file's. */
  folder?: string;
}

interface Kind {
  what: string;
  prompt: string;
  placeholder: string;
  /** A message when the name is not acceptable. */
  check(name: string): string | undefined;
  fileName(name: string): string;
  text(name: string): string;
}

const REWARD_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const CONFIG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const NEW_FILE_KINDS = {
  tool: {
    what: 'New Tool',
    prompt: "The tool's name: what the policy writes to call it",
    placeholder: 'web_search',
    check: (name) =>
      TOOL_NAME_PATTERN.test(name)
        ? undefined
        : `A tool name is ${TOOL_NAME_RULE} (the Tool API's rule), e.g. web_search`,
    fileName: (name) => `${name}.ts`,
    text: toolTemplate,
  },
  reward: {
    what: 'New Reward',
    prompt: "The reward's name: how the run records its score",
    placeholder: 'contains_answer',
    check: (name) =>
      REWARD_NAME.test(name)
        ? undefined
        : 'A reward name starts with a letter, then letters, digits, "_" or "-" (at most 64), e.g. contains_answer',
    fileName: (name) => `${name}.ts`,
    text: rewardTemplate,
  },
  config: {
    what: 'New Training Config',
    prompt: "The training run's name (the config file is <name>.config.ts)",
    placeholder: 'my-agent',
    check: (name) =>
      CONFIG_NAME.test(name)
        ? undefined
        : 'A run name is letters, digits, ".", "_" or "-" (at most 64), starting with a letter or digit, e.g. my-agent',
    fileName: (name) => `${name}.config.ts`,
    text: configTemplate,
  },
} satisfies Record<string, Kind>;

/** The active file's folder when it is in the workspace; else the first workspace folder. */
function targetFolder(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active?.scheme === 'file' && vscode.workspace.getWorkspaceFolder(active)) return path.dirname(active.fsPath);
  return vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
}

export async function newFileCommand(kind: Kind, options: NewFileOptions = {}): Promise<vscode.Uri | undefined> {
  const folder = options.folder ?? targetFolder();
  if (!folder) {
    void vscode.window.showErrorMessage(`${kind.what}: open a folder first; the new file goes into the workspace.`);
    return undefined;
  }
  const problem = (name: string) =>
    kind.check(name) ??
    (fs.existsSync(path.join(folder, kind.fileName(name)))
      ? `${kind.fileName(name)} exists already in ${vscode.workspace.asRelativePath(folder)}`
      : undefined);
  let name = options.name;
  if (name === undefined) {
    name = await vscode.window.showInputBox({
      title: kind.what,
      prompt: `${kind.prompt}. Creates the file in ${vscode.workspace.asRelativePath(folder, true)}.`,
      placeHolder: kind.placeholder,
      validateInput: (value) => (value === '' ? undefined : problem(value)),
    });
    if (!name) return undefined;
  }
  const refused = problem(name);
  if (refused) {
    void vscode.window.showErrorMessage(`${kind.what}: ${refused}`);
    return undefined;
  }
  const file = vscode.Uri.file(path.join(folder, kind.fileName(name)));
  const editor = vscode.workspace.getConfiguration('editor', { uri: file, languageId: 'typescript' });
  const text = indentLike(kind.text(name), editor.get<boolean>('insertSpaces', true), editor.get<number>('tabSize', 2));
  await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(text));
  await vscode.window.showTextDocument(file, { preview: false });
  return file;
}
