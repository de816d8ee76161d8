/**
 * Workspace Trust as package.json declares it: a repository opened in Restricted Mode can show
 * its runs but not run its code, and cannot name the program the extension starts.
 * (The refusal at the point of starting is extension/workspaceTrust.ts; VS Code reads this.)
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
  capabilities?: {
    untrustedWorkspaces?: { supported?: unknown; description?: unknown; restrictedConfigurations?: unknown };
  };
  contributes: {
    commands: { command: string; enablement?: string }[];
    configuration: { properties: Record<string, { scope?: string; markdownDescription?: string }> };
  };
};

/** Commands that start the trainer on the workspace's config, tools or rewards, or start a configured program. */
const RUNS_WORKSPACE_CODE = [
  'rolloutStudio.checkEnvironment',
  'rolloutStudio.startTraining',
  'rolloutStudio.debugTraining',
  'rolloutStudio.runTool',
  'rolloutStudio.runMcpTool',
  'rolloutStudio.debugTool',
  'rolloutStudio.evaluateReward',
  'rolloutStudio.runTrainingCommand',
  'rolloutStudio.rerollFromHere',
  'rolloutStudio.rerollWithEditedResult',
];
/** Commands that only read recorded runs, or stop what runs. */
const VIEWS = [
  'rolloutStudio.openRun',
  'rolloutStudio.openTrajectories',
  'rolloutStudio.openMetrics',
  'rolloutStudio.refreshRuns',
  'rolloutStudio.openRunInDebugger',
  'rolloutStudio.stopTraining',
];

describe('Workspace Trust in package.json', () => {
  it('declares limited support in untrusted workspaces, saying what works there', () => {
    const declared = manifest.capabilities?.untrustedWorkspaces;
    assert.equal(declared?.supported, 'limited');
    assert.match(String(declared?.description), /Restricted Mode.*viewed.*need a trusted workspace/s);
  });

  it('settings that name a program are machine settings, restricted in untrusted workspaces', () => {
    const programs = Object.entries(manifest.contributes.configuration.properties).filter(([, p]) =>
      /executable|Node\.js/i.test(p.markdownDescription ?? ''),
    );
    assert.deepEqual(
      programs.map(([name]) => name),
      ['rolloutStudio.trainer.nodePath'],
      'the settings that name a program',
    );
    for (const [name, property] of programs) {
      assert.equal(property.scope, 'machine', `${name}: a workspace's .vscode/settings.json must not set it`);
      assert.ok(
        (manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations as string[] | undefined)?.includes(name),
        `${name} is a restricted configuration`,
      );
    }
  });

  it('commands that run workspace code need trust; viewing runs does not', () => {
    const enablement = new Map(manifest.contributes.commands.map((c) => [c.command, c.enablement]));
    for (const command of RUNS_WORKSPACE_CODE) assert.equal(enablement.get(command), 'isWorkspaceTrusted', command);
    for (const command of VIEWS) {
      assert.ok(enablement.has(command), `${command} is contributed`);
      assert.doesNotMatch(enablement.get(command) ?? '', /isWorkspaceTrusted/, `${command} works in Restricted Mode`);
    }
  });
});
