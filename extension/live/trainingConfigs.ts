/**
 * The workspace's training configs, and the one to train: a TypeScript file that imports from
 * 'rollout-studio' and either is named `*.config.ts` or does `export default defineConfig(`.
 * (Other tools' `vite.config.ts` and friends also `export default defineConfig(` — the import
 * tells ours apart.) The last config trained is remembered and offered first.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { isTrainingConfigSource } from './configSource';

const EXCLUDE = '{**/node_modules/**,**/.rollout/**,**/dist/**,**/out/**,**/.git/**}';
const LAST_CONFIG_KEY = 'rolloutStudio.lastTrainingConfig';
/** Files larger than this are not read when looking for configs (a config is small). */
const MAX_CONFIG_BYTES = 256 * 1024;

function readSmall(file: string): string | undefined {
  try {
    if (fs.statSync(file).size > MAX_CONFIG_BYTES) return undefined;
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Training configs in the workspace's folders, sorted by path. */
export async function findTrainingConfigs(): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles('**/*.{ts,mts,cts}', EXCLUDE, 5000);
  return files
    .filter((uri) => uri.scheme === 'file')
    .filter((uri) => {
      const text = readSmall(uri.fsPath);
      return text !== undefined && isTrainingConfigSource(uri.fsPath, text);
    })
    .sort((a, b) => a.fsPath.localeCompare(b.fsPath));
}

/** A config named by a command's argument (a URI from the explorer or a code lens, or a path). */
function fromArgument(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  if (typeof arg === 'string' && arg) return vscode.Uri.file(arg);
  return undefined;
}

/**
 * The config to train: the command's argument; else the only config there is; else a quick
 * pick with the last one trained first and the active editor's config next. Undefined when
 * there is none (the user is told) or the pick was dismissed.
 */
export async function chooseTrainingConfig(
  context: vscode.ExtensionContext,
  arg?: unknown,
  title = 'Train which config?',
): Promise<vscode.Uri | undefined> {
  const given = fromArgument(arg);
  if (given) return remember(context, given);
  const configs = await findTrainingConfigs();
  if (configs.length === 0) {
    void vscode.window.showErrorMessage(
      "Rollout Studio: no training config in this workspace. A training config is a TypeScript file that imports from 'rollout-studio' and does `export default defineConfig({ … })` (for example `agent.config.ts`).",
    );
    return undefined;
  }
  if (configs.length === 1) return remember(context, configs[0]);
  const last = context.workspaceState.get<string>(LAST_CONFIG_KEY);
  const active = vscode.window.activeTextEditor?.document.uri.fsPath;
  const rank = (uri: vscode.Uri) => (uri.fsPath === last ? 0 : uri.fsPath === active ? 1 : 2);
  const items = [...configs]
    .sort((a, b) => rank(a) - rank(b))
    .map((uri) => ({
      label: path.basename(uri.fsPath),
      description: [
        vscode.workspace.asRelativePath(path.dirname(uri.fsPath)),
        uri.fsPath === last ? 'last trained' : uri.fsPath === active ? 'open in the editor' : '',
      ]
        .filter(Boolean)
        .join(' · '),
      uri,
    }));
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: 'Training configs of this workspace' });
  return picked ? remember(context, picked.uri) : undefined;
}

function remember(context: vscode.ExtensionContext, uri: vscode.Uri): vscode.Uri {
  void context.workspaceState.update(LAST_CONFIG_KEY, uri.fsPath);
  return uri;
}
