import * as fs from 'fs/promises';
import * as path from 'path';
import * as vscode from 'vscode';
import { Diagnosis, isDiagnosis } from './diagnosis';
import { DiagnosisPanel } from './diagnosisPanel';
import { log } from './logging';
import { ServerManager } from './server';

type TracebackSource = 'editor selection' | 'notebook cell output' | 'terminal selection' | 'clipboard' | 'input';

// How VS Code hands a cell's error output to extensions ({name, message, stack}).
const NOTEBOOK_ERROR_MIME = 'application/vnd.code.notebook.error';

const TRACEBACK_HINT = /Traceback \(most recent call last\)|\b\w*(Error|Exception)\b.*:|CUDA error|out of memory/;

/**
 * "Diagnose this traceback": editor selection, the error output of the notebook cell (the one
 * whose menu ran the command, else the selected cells), terminal selection, clipboard, then an
 * input box.
 */
export async function diagnoseTraceback(
  server: ServerManager,
  panel: DiagnosisPanel,
  target?: unknown,
): Promise<Diagnosis | undefined> {
  if (!(await server.ready())) {
    void vscode.window.showErrorMessage(server.notRunningMessage());
    return undefined;
  }
  const input = await findTracebackText(target);
  if (!input) {
    return undefined;
  }
  log().info(`Diagnosing a traceback from the ${input.source} (${input.text.length} characters)`);
  let result: unknown;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'traindoctor: diagnosing traceback' },
      () => server.executeCommand<unknown>('traindoctor.diagnoseTraceback', [input.text]),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log().error(`diagnoseTraceback failed: ${message}`);
    void vscode.window.showErrorMessage(`traindoctor could not diagnose the traceback: ${message}`);
    return undefined;
  }
  if (!isDiagnosis(result)) {
    void vscode.window.showWarningMessage('traindoctor found no traceback it could diagnose in the text.');
    return undefined;
  }
  panel.show(result, 'traceback');
  return result;
}

async function findTracebackText(target?: unknown): Promise<{ text: string; source: TracebackSource } | undefined> {
  const editor = vscode.window.activeTextEditor;
  const selected = editor?.selections
    .filter((s) => !s.isEmpty)
    .map((s) => editor.document.getText(s))
    .join('\n');
  if (selected?.trim()) {
    return { text: selected, source: 'editor selection' };
  }
  const fromNotebook = notebookCellError(target);
  if (fromNotebook) {
    return { text: fromNotebook, source: 'notebook cell output' };
  }
  const fromTerminal = await terminalSelection();
  if (fromTerminal) {
    return { text: fromTerminal, source: 'terminal selection' };
  }
  const clipboard = await vscode.env.clipboard.readText();
  if (TRACEBACK_HINT.test(clipboard)) {
    return { text: clipboard, source: 'clipboard' };
  }
  const typed = await vscode.window.showInputBox({
    title: 'traindoctor: Diagnose this traceback',
    prompt: 'Select a traceback in an editor or terminal first, or paste one here, or give the path of a log file.',
    ignoreFocusOut: true,
  });
  if (!typed?.trim()) {
    return undefined;
  }
  return { text: await readIfLogFile(typed.trim()), source: 'input' };
}

/** The traceback of a notebook cell's error output: the cell passed by its menu, else the selected cells. */
function notebookCellError(target?: unknown): string | undefined {
  const isCell = (value: unknown): value is vscode.NotebookCell =>
    typeof value === 'object' && value !== null && 'outputs' in value && 'document' in value;
  const editor = vscode.window.activeNotebookEditor;
  const cells = isCell(target)
    ? [target]
    : (editor?.selections.flatMap((range) => editor.notebook.getCells(range)) ?? []);
  for (const cell of cells) {
    for (const output of cell.outputs) {
      for (const item of output.items) {
        if (item.mime !== NOTEBOOK_ERROR_MIME) {
          continue;
        }
        try {
          const error = JSON.parse(new TextDecoder().decode(item.data)) as { name?: string; message?: string; stack?: string };
          const text = error.stack?.trim() ? error.stack : `${error.name ?? 'Error'}: ${error.message ?? ''}`;
          if (text.trim()) {
            return text;
          }
        } catch {
          continue;
        }
      }
    }
  }
  return undefined;
}

/** The terminal API has no stable selection getter: copy the selection through the clipboard and put the clipboard back. */
async function terminalSelection(): Promise<string | undefined> {
  if (!vscode.window.activeTerminal) {
    return undefined;
  }
  const saved = await vscode.env.clipboard.readText();
  try {
    await vscode.env.clipboard.writeText('');
    await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
    const copied = await vscode.env.clipboard.readText();
    return copied.trim() ? copied : undefined;
  } catch {
    return undefined;
  } finally {
    await vscode.env.clipboard.writeText(saved);
  }
}

async function readIfLogFile(text: string): Promise<string> {
  if (text.includes('\n') || text.length > 4096) {
    return text;
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  const candidate = path.resolve(root, text);
  try {
    return await fs.readFile(candidate, 'utf8');
  } catch {
    return text;
  }
}
