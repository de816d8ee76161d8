/**
 * What marks a Rollout Studio workspace, for the part of the extension that waits for one.
 * The extension activates in every TypeScript file (the code lenses over tools, rewards and
 * configs need it), but watching the runs folders, listing runs in the Rollout Runs view and the
 * live-run status bar start only once the workspace is a Rollout Studio workspace: a runs folder
 * (or a `.rollout/` folder) exists, a TypeScript file that imports 'rollout-studio' is open, or
 * the user reaches for Rollout Studio (a command, a training, a panel). No vscode import: tested
 * in plain Node; registerPanels.ts wires it to the editor.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Whether a TypeScript source imports the 'rollout-studio' package (or a subpath of it). */
export function importsRolloutStudio(text: string): boolean {
  return /(?:\bfrom\s*|\bimport\s*(?:\(\s*)?|\brequire\s*\(\s*)['"]rollout-studio(?:\/[^'"]*)?['"]/.test(text);
}

/** The workspace as far as the markers go: its runs folders, its folders, and the sources open in the editor. */
export interface WorkspaceView {
  runsRoots: readonly string[];
  folders: readonly string[];
  openSources: readonly string[];
}

/** Whether the workspace is a Rollout Studio workspace by what is on disk and open now. */
export function isRolloutWorkspace(view: WorkspaceView, exists: (p: string) => boolean = fs.existsSync): boolean {
  return (
    view.runsRoots.some(exists) ||
    view.folders.some((folder) => exists(path.join(folder, '.rollout'))) ||
    view.openSources.some(importsRolloutStudio)
  );
}

/** Runs `start` once, the first time anything opens it; later opens do nothing. */
export class StartOnce {
  private done = false;

  constructor(private readonly start: () => void) {}

  get started(): boolean {
    return this.done;
  }

  open(): void {
    if (this.done) return;
    this.done = true;
    this.start();
  }
}
