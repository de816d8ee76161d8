import * as path from 'node:path';
import * as vscode from 'vscode';
import type * as DefinitionsModule from './definitions';
import { AUTHORING_COMMANDS, lensSpecs, type LensSpec } from './lensSpecs';

/**
 * The code lenses over tools, rewards and training configs in TypeScript files that import
 * 'rollout-studio'. Finding them needs TypeScript's parser, which lives in its own bundle
 * (dist/extension/definitions.js, 3.5 MB minified): it is loaded on the first document that
 * mentions the package, not when the extension activates.
 */

let definitionsModule: typeof DefinitionsModule | undefined;

function definitions(): typeof DefinitionsModule {
  // A path esbuild does not follow: the parser stays out of extension.js.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, at run time
  definitionsModule ??= require(path.join(__dirname, 'definitions.js')) as typeof DefinitionsModule;
  return definitionsModule;
}

function command(spec: LensSpec): vscode.Command {
  const base = { title: spec.title, tooltip: spec.tooltip };
  switch (spec.do.action) {
    case 'runTool':
      return { ...base, command: AUTHORING_COMMANDS.runTool, arguments: [spec.do.target] };
    case 'debugTool':
      return { ...base, command: AUTHORING_COMMANDS.debugTool, arguments: [spec.do.target] };
    case 'runMcpTool':
      return { ...base, command: AUTHORING_COMMANDS.runMcpTool, arguments: [spec.do.target] };
    case 'evaluateReward':
      return { ...base, command: AUTHORING_COMMANDS.evaluateReward, arguments: [spec.do.target] };
    case 'training':
      return {
        ...base,
        command: AUTHORING_COMMANDS.runTrainingCommand,
        arguments: [spec.do.command.id, vscode.Uri.file(spec.do.file), spec.do.command.title],
      };
    case 'explain':
      return { ...base, command: AUTHORING_COMMANDS.explainLens, arguments: [spec.do.message] };
  }
}

export class AuthoringCodeLensProvider implements vscode.CodeLensProvider {
  private readonly cache = new Map<string, { version: number; lenses: vscode.CodeLens[] }>();

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (document.uri.scheme !== 'file') return [];
    const key = document.uri.toString();
    const cached = this.cache.get(key);
    if (cached?.version === document.version) return cached.lenses;
    const text = document.getText();
    const module = text.includes('rollout-studio') ? definitions() : undefined;
    const found = module ? module.findDefinitions(text, document.fileName) : [];
    const lenses = lensSpecs(found, document.uri.fsPath).map((spec) => {
      const position = new vscode.Position(spec.at.line, spec.at.character);
      return new vscode.CodeLens(new vscode.Range(position, position), command(spec));
    });
    this.cache.set(key, { version: document.version, lenses });
    return lenses;
  }

  forget(document: vscode.TextDocument): void {
    this.cache.delete(document.uri.toString());
  }
}
