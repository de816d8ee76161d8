import * as vscode from 'vscode';
import type { ToolSession } from './toolSession';
import { parseArgumentText } from './argumentText';

/**
 * Run Tool…'s input box: the arguments as JSON, checked as the user types — first as JSON, then
 * against the tool's own zod schema by the trainer process that holds the tool — with the
 * problem shown under the box (`query: Invalid input: expected string, received number`). Enter
 * is refused while the text does not pass.
 */

export interface ArgumentBoxOptions {
  title: string;
  prompt: string;
  initial: string;
  session: ToolSession;
  /** Closes the box early (the debug session ended). */
  cancel?: vscode.Event<void>;
}

/** The accepted arguments (parsed), or undefined when the box was dismissed. */
export function askArguments(options: ArgumentBoxOptions): Promise<{ text: string; value: unknown } | undefined> {
  const box = vscode.window.createInputBox();
  box.title = options.title;
  box.prompt = options.prompt;
  box.value = options.initial;
  box.placeholder = '{"name": "value"}';
  box.ignoreFocusOut = true;
  // Only the newest check may set the message: answers to older text are dropped.
  let generation = 0;
  let verdict: { text: string; ok: boolean } | undefined;

  const validate = async (text: string): Promise<boolean> => {
    const mine = ++generation;
    const parsed = parseArgumentText(text);
    if (!parsed.ok) {
      box.validationMessage = { message: parsed.message, severity: vscode.InputBoxValidationSeverity.Error };
      verdict = { text, ok: false };
      return false;
    }
    box.busy = true;
    try {
      const check = await options.session.check(parsed.value);
      if (mine !== generation) return verdict?.ok ?? false;
      box.validationMessage = check.ok
        ? undefined
        : {
            message: `Does not match the schema of ${options.session.tool.name}: ${check.message}`,
            severity: vscode.InputBoxValidationSeverity.Error,
          };
      verdict = { text, ok: check.ok };
      return check.ok;
    } catch (error) {
      box.validationMessage = { message: (error as Error).message, severity: vscode.InputBoxValidationSeverity.Error };
      return false;
    } finally {
      if (mine === generation) box.busy = false;
    }
  };

  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: { text: string; value: unknown } | undefined) => {
      if (settled) return;
      settled = true;
      resolve(result);
      subscriptions.forEach((d) => d.dispose());
      box.dispose();
    };
    const subscriptions: vscode.Disposable[] = [
      box.onDidChangeValue((text) => void validate(text)),
      box.onDidAccept(async () => {
        const text = box.value;
        const ok = verdict?.text === text ? verdict.ok : await validate(text);
        if (ok) finish({ text, value: JSON.parse(text) });
      }),
      box.onDidHide(() => finish(undefined)),
    ];
    if (options.cancel) subscriptions.push(options.cancel(() => finish(undefined)));
    box.show();
    void validate(box.value);
  });
}
