/**
 * A hostile repository opened in Restricted Mode (runExtensionTests.ts with
 * ROLLOUT_TEST_RESTRICTED=1; skipped in the ordinary, trusted run): every action that would run
 * its code — Re-roll of a planted run, Run MCP Tool, Run and Debug Tool, Evaluate on Samples,
 * Start and Debug Training, a `rollout` launch, Check Environment — is triggered as a code lens
 * or the panel triggers it (executeCommand with the lens's arguments: VS Code applies no command
 * enablement there), and none of the planted code runs. Each refusal says what would have run.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { HOSTILE_MARKER } from '../../fixtures/hostileWorkspace';
import { RestrictedModeError, spawnWorkspaceCode } from '../../../extension/workspaceCode';

const EXTENSION_ID = 'rollout-studio.rollout-studio';
const restricted = process.env.ROLLOUT_TEST_RESTRICTED === '1';

(restricted ? describe : describe.skip)('Restricted Mode: a hostile repository runs nothing', () => {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const workspace = folder?.uri.fsPath ?? '';
  const file = (name: string) => path.join(workspace, name);
  const warnings: string[] = [];
  let restore: (() => void) | undefined;

  before(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)?.activate();
    // The extension's `vscode` is this one (same extension): see what it tells the user.
    const window = vscode.window as { showWarningMessage: (...args: unknown[]) => unknown };
    const original = window.showWarningMessage;
    window.showWarningMessage = (...args: unknown[]) => {
      warnings.push(String(args[0]));
      return original.apply(vscode.window, args);
    };
    restore = () => (window.showWarningMessage = original);
  });
  after(() => restore?.());

  const refused = (action: string, runs: string) =>
    assert.ok(
      warnings.some((w) => w.includes(`Restricted Mode: ${action} would run ${runs}`)),
      `no Restricted Mode warning for ${action}; warnings: ${JSON.stringify(warnings)}`,
    );

  it('opened the folder untrusted', () => {
    assert.equal(vscode.workspace.isTrusted, false);
  });

  it('Re-roll of the planted run (its run.json names evil.config.ts) is refused before any quick pick', async () => {
    await vscode.commands.executeCommand('rolloutStudio.rerollFromHere', {
      runDirectory: file('.rollout/runs/r1'),
      step: 1,
      index: 0,
      checkpoint: 'best',
      temperature: 1,
      samples: 1,
    });
    refused('Re-roll', 'the config evil.config.ts');
  });

  it('the lenses’ Run MCP Tool…, Run Tool…, Debug Tool and Evaluate on Samples are refused', async () => {
    const config = file('evil.config.ts');
    await vscode.commands.executeCommand(
      'rolloutStudio.runMcpTool',
      { file: config, server: 'evil', label: 'evil' },
      { tool: 'x', args: '{}' },
    );
    refused('Run MCP Tool', `the config ${config} and its MCP server evil`);
    const tool = { file: file('evil.tools.ts'), selector: { by: 'export', path: 'evil' }, label: 'evil' };
    await vscode.commands.executeCommand('rolloutStudio.runTool', tool, { args: '{}' });
    refused('Run Tool', `the tool in ${tool.file}`);
    await vscode.commands.executeCommand('rolloutStudio.debugTool', tool, { args: '{}' });
    refused('Debug Tool', `the tool in ${tool.file}`);
    const reward = { file: file('evil.rewards.ts'), exportPath: 'evil', kind: 'outcome', label: 'evil' };
    await vscode.commands.executeCommand('rolloutStudio.evaluateReward', reward, { config, samples: 1 });
    refused('Evaluate on Samples', `the reward ${reward.file}`);
  });

  it('Start Training, Debug Training and a rollout launch of the config are refused', async () => {
    const config = vscode.Uri.file(file('evil.config.ts'));
    assert.equal(await vscode.commands.executeCommand('rolloutStudio.startTraining', config), false);
    refused('Start Training', `the config ${config.fsPath}`);
    assert.equal(await vscode.commands.executeCommand('rolloutStudio.debugTraining', config), false);
    refused('Debug Training', `the config ${config.fsPath}`);
    // launch.json's way in: the debug adapter refuses the launch. VS Code then reports the failed
    // launch in a dialog, which the test workbench refuses to show, so startDebugging may not settle.
    const launch = vscode.debug.startDebugging(folder, {
      type: 'rollout',
      request: 'launch',
      name: 'evil',
      config: config.fsPath,
    });
    const outcome = await Promise.race([
      Promise.resolve(launch).catch(() => false),
      new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 10_000)),
    ]);
    assert.notEqual(outcome, true, 'the rollout launch started');
    assert.equal(vscode.debug.activeDebugSession, undefined, 'a debug session is running');
  });

  it('the gate itself refuses a spawn in this extension host', () => {
    assert.throws(
      () =>
        spawnWorkspaceCode(
          { action: 'A test', runs: 'evil-server.js' },
          process.execPath,
          [file('evil-server.js')],
          {},
        ),
      RestrictedModeError,
    );
  });

  it('none of the planted code ran', async () => {
    await vscode.commands.executeCommand('rolloutStudio.checkEnvironment').then(undefined, () => undefined);
    // Anything started would have written by now: the planted code's first statement writes.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const marker = file(HOSTILE_MARKER);
    assert.equal(fs.existsSync(marker), false, fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '');
  });
});
