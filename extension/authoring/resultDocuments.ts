import * as vscode from 'vscode';

/**
 * Read-only documents for what Run Tool… and Evaluate on Samples produce: one per tool or
 * reward, updated in place on the next run, opened beside the source. Their text lives here
 * (a content provider), so nothing is written to disk and nothing asks to be saved.
 */
export class ResultDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'rollout-studio-result';
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** Shows `text` as the document named `name` (a `.txt` name: plain text). */
  async show(name: string, text: string): Promise<vscode.TextEditor> {
    const uri = vscode.Uri.from({ scheme: ResultDocuments.scheme, path: `/${name.replace(/[\\/]/g, '∕')}` });
    const wasShown = this.texts.has(uri.toString());
    this.texts.set(uri.toString(), text);
    if (wasShown) this.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    return vscode.window.showTextDocument(document, {
      viewColumn: vscode.ViewColumn.Beside,
      preview: false,
      preserveFocus: true,
    });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
