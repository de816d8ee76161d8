import type { RewardKind, ToolSelector } from '../../trainer/contract/protocol/authoring';
import type { Definition, SourcePosition } from './definitions';

/**
 * Which code lenses go above which definition, and what each does — without `vscode`, so unit
 * tests can check titles and command arguments; codeLenses.ts turns these into CodeLens objects.
 */

export const AUTHORING_COMMANDS = {
  runTool: 'rolloutStudio.runTool',
  runMcpTool: 'rolloutStudio.runMcpTool',
  debugTool: 'rolloutStudio.debugTool',
  evaluateReward: 'rolloutStudio.evaluateReward',
  /** Runs a training command of another module by id (registered in registerAuthoring.ts), with a clear message when it is missing. */
  runTrainingCommand: 'rolloutStudio.runTrainingCommand',
  explainLens: 'rolloutStudio.explainCodeLens',
  newTool: 'rolloutStudio.newTool',
  newReward: 'rolloutStudio.newReward',
  newTrainingConfig: 'rolloutStudio.newTrainingConfig',
} as const;

/** The live-training commands (branch `live`); the config lenses call them by id with the config's URI. */
export const TRAINING_COMMANDS = {
  start: { id: 'rolloutStudio.startTraining', title: 'Start Training' },
  debug: { id: 'rolloutStudio.debugTraining', title: 'Debug Training' },
} as const;

/** A tool a lens runs: the file and how the trainer finds the tool in it. */
export interface ToolTarget {
  file: string;
  selector: ToolSelector;
  label: string;
}

/** The MCP server whose tools a lens runs (which tool is asked for when it runs). */
export interface McpServerTarget {
  file: string;
  server: string;
  label: string;
}

/** A reward a lens evaluates. */
export interface RewardTarget {
  file: string;
  exportPath: string;
  kind: RewardKind;
  label: string;
}

export type LensAction =
  | { action: 'runTool' | 'debugTool'; target: ToolTarget }
  | { action: 'evaluateReward'; target: RewardTarget }
  | { action: 'runMcpTool'; target: McpServerTarget }
  | { action: 'training'; command: (typeof TRAINING_COMMANDS)[keyof typeof TRAINING_COMMANDS]; file: string }
  | { action: 'explain'; message: string };

export interface LensSpec {
  at: SourcePosition;
  title: string;
  tooltip: string;
  do: LensAction;
}

/** What a training lens says when its command is not registered in this build. */
export function missingTrainingCommandMessage(title: string, commandId: string, config: string): string {
  return `${title} is not available in this build of Rollout Studio (no command "${commandId}" is registered). Train from a terminal instead: npx rollout-studio train ${config}`;
}

function notReachable(what: string, label: string): string {
  return `${what} ${label} is not reachable from the module's exports, so the trainer cannot find it. Export it (export const … = …) or put it in an exported list, then use the lens again.`;
}

export function lensSpecs(definitions: readonly Definition[], file: string): LensSpec[] {
  return definitions.flatMap((definition): LensSpec[] => {
    const { at } = definition;
    switch (definition.kind) {
      case 'tool': {
        if (!definition.selector) {
          const message = notReachable('The tool', definition.label);
          return [{ at, title: '$(play) Run Tool…', tooltip: message, do: { action: 'explain', message } }];
        }
        const target: ToolTarget = { file, selector: definition.selector, label: definition.label };
        return [
          {
            at,
            title: '$(play) Run Tool…',
            tooltip: `Run ${definition.label} with arguments you type (checked against its schema)`,
            do: { action: 'runTool', target },
          },
          {
            at,
            title: '$(debug-alt-small) Debug Tool',
            tooltip: `Run ${definition.label} under the Node debugger: breakpoints in its source hit`,
            do: { action: 'debugTool', target },
          },
        ];
      }
      case 'reward': {
        if (!definition.exportPath) {
          const message = notReachable('The reward', definition.label);
          return [{ at, title: '$(beaker) Evaluate on Samples', tooltip: message, do: { action: 'explain', message } }];
        }
        const target: RewardTarget = {
          file,
          exportPath: definition.exportPath,
          kind: definition.rewardKind,
          label: definition.label,
        };
        return [
          {
            at,
            title: '$(beaker) Evaluate on Samples',
            tooltip: `Score ${definition.label} (${definition.rewardKind}) on a few dataset rows and on recorded trajectories`,
            do: { action: 'evaluateReward', target },
          },
        ];
      }
      case 'mcpServer':
        return [
          {
            at,
            title: '$(play) Run MCP Tool…',
            tooltip: `Start ${definition.label} as training would, pick one of its tools and run it with arguments you type (checked against its JSON Schema)`,
            do: { action: 'runMcpTool', target: { file, server: definition.server, label: definition.label } },
          },
        ];
      case 'config':
        return [
          {
            at,
            title: `$(play) ${TRAINING_COMMANDS.start.title}`,
            tooltip: 'Train with this config',
            do: { action: 'training', command: TRAINING_COMMANDS.start, file },
          },
          {
            at,
            title: `$(debug-alt) ${TRAINING_COMMANDS.debug.title}`,
            tooltip: 'Train with this config under the debugger (breakpoints on tools and turns)',
            do: { action: 'training', command: TRAINING_COMMANDS.debug, file },
          },
        ];
    }
  });
}
