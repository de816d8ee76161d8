import * as vscode from 'vscode';
import {
  EnvironmentReport,
  EnvironmentPanelToWebview,
  EnvironmentWebviewToPanel,
  parseWith,
} from '../trainer/contract/protocol';
import { resolveTrainerRuntime, runTrainer, TrainerProcessError } from './trainerProcess';
import { webviewHtml, webviewOptions } from './webviewHtml';
import { untrustedReason } from './workspaceTrust';

/** What Check Environment ended with: the report, or the error the user was shown. */
export type EnvironmentCheckOutcome =
  { ok: true; report: EnvironmentReport } | { ok: false; title: string; detail: string };

/**
 * Rollout Studio: Check Environment. Starts the trainer process exactly as training will
 * (same runtime, same IPC), receives its environment report and shows it in a panel.
 */
export class EnvironmentPanel {
  static readonly viewType = 'rolloutStudio.environment';
  private static current: EnvironmentPanel | undefined;

  private lastReport: EnvironmentReport | undefined;
  private ready = false;
  private pending: EnvironmentPanelToWebview | undefined;
  private running: Promise<EnvironmentCheckOutcome> | undefined;

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.OutputChannel,
  ) {
    panel.webview.html = webviewHtml(panel.webview, extensionUri, 'environment', 'Rollout Studio: Environment');
    panel.onDidDispose(() => (EnvironmentPanel.current = undefined));
    panel.webview.onDidReceiveMessage((raw) => this.onMessage(raw));
  }

  /**
   * Open (or reveal) the panel and run a fresh check. Resolves with what the panel shows;
   * failures are shown to the user here and never reject, so the command stays quiet.
   */
  static async show(extensionUri: vscode.Uri, log: vscode.OutputChannel): Promise<EnvironmentCheckOutcome> {
    if (!EnvironmentPanel.current) {
      const panel = vscode.window.createWebviewPanel(
        EnvironmentPanel.viewType,
        'Rollout Studio: Environment',
        vscode.ViewColumn.Active,
        webviewOptions(extensionUri),
      );
      EnvironmentPanel.current = new EnvironmentPanel(panel, extensionUri, log);
    } else {
      EnvironmentPanel.current.panel.reveal();
    }
    return EnvironmentPanel.current.check();
  }

  private check(): Promise<EnvironmentCheckOutcome> {
    this.running ??= this.runCheck().finally(() => (this.running = undefined));
    return this.running;
  }

  private async runCheck(): Promise<EnvironmentCheckOutcome> {
    const use = { action: 'Check Environment', runs: 'the trainer with the configured Node.js' };
    const refusal = untrustedReason(use);
    if (refusal !== undefined) {
      this.post({ type: 'failed', title: 'This workspace is not trusted.', detail: refusal });
      return { ok: false, title: 'This workspace is not trusted.', detail: refusal };
    }
    this.post({ type: 'checking' });
    const configured = vscode.workspace.getConfiguration('rolloutStudio').get<string>('trainer.nodePath');
    const runtime = resolveTrainerRuntime(configured);
    const cliPath = vscode.Uri.joinPath(this.extensionUri, 'dist', 'trainer', 'cli.js').fsPath;
    this.log.appendLine(`Checking the environment with ${runtime.description}`);
    try {
      const messages = await runTrainer({ use, runtime, cliPath, args: ['env', '--ipc'], timeoutMs: 180_000 });
      const reportMessage = messages.find((m) => m.type === 'environment.report');
      if (!reportMessage)
        throw new TrainerProcessError(
          'The trainer finished without sending an environment report.',
          'Rebuild or reinstall the extension.',
        );
      this.lastReport = reportMessage.report;
      this.post({ type: 'report', report: reportMessage.report });
      return { ok: true, report: reportMessage.report };
    } catch (error) {
      const { title, detail } =
        error instanceof TrainerProcessError
          ? error
          : { title: 'Checking the environment failed.', detail: String(error) };
      this.log.appendLine(`${title}\n${detail}`);
      this.post({ type: 'failed', title, detail });
      void vscode.window
        .showErrorMessage(`Rollout Studio: ${title}`, { detail, modal: false }, 'Show Log')
        .then((choice) => {
          if (choice === 'Show Log') this.log.show();
        });
      return { ok: false, title, detail };
    }
  }

  private onMessage(raw: unknown): void {
    let message: EnvironmentWebviewToPanel;
    try {
      message = parseWith(EnvironmentWebviewToPanel, raw, 'message from the environment panel');
    } catch (error) {
      this.log.appendLine(String(error));
      return;
    }
    switch (message.type) {
      case 'ready':
        this.ready = true;
        if (this.pending) void this.panel.webview.postMessage(this.pending);
        break;
      case 'recheck':
        void this.check();
        break;
      case 'copyJson':
        if (this.lastReport) void vscode.env.clipboard.writeText(JSON.stringify(this.lastReport, null, 2));
        break;
    }
  }

  /** Messages sent before the webview script runs are kept and sent once it says ready. */
  private post(message: EnvironmentPanelToWebview): void {
    this.pending = message;
    if (this.ready) void this.panel.webview.postMessage(message);
  }
}
