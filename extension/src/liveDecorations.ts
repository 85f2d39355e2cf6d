import * as path from 'path';
import * as vscode from 'vscode';
import { Diagnosis } from './diagnosis';

interface Marker {
  file: string;
  line: number; // 0-based
  diagnosis: Diagnosis;
  sessionId?: string;
}

/** The live diagnosis written at the failing line while the debugger is paused there. */
export class LiveDecorations implements vscode.Disposable {
  private readonly type = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('inputValidation.errorBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorError.foreground'),
    overviewRulerLane: vscode.OverviewRulerLane.Full,
    after: {
      color: new vscode.ThemeColor('editorError.foreground'),
      margin: '0 0 0 2em',
      fontStyle: 'italic',
    },
  });
  private marker: Marker | undefined;
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    this.subscriptions = [vscode.window.onDidChangeVisibleTextEditors(() => this.apply())];
  }

  show(diagnosis: Diagnosis, fallback: { file: string; line: number } | undefined, sessionId?: string): void {
    const location = diagnosis.location ? { file: diagnosis.location.path, line: diagnosis.location.line - 1 } : fallback;
    if (!location) {
      return;
    }
    this.marker = { ...location, diagnosis, sessionId };
    this.apply();
  }

  clear(sessionId?: string): void {
    if (sessionId && this.marker?.sessionId !== sessionId) {
      return;
    }
    this.marker = undefined;
    this.apply();
  }

  private apply(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const marker = this.marker;
      if (!marker || path.resolve(editor.document.uri.fsPath) !== path.resolve(marker.file)) {
        editor.setDecorations(this.type, []);
        continue;
      }
      const line = Math.min(Math.max(marker.line, 0), editor.document.lineCount - 1);
      editor.setDecorations(this.type, [
        {
          range: editor.document.lineAt(line).range,
          hoverMessage: hover(marker.diagnosis),
          renderOptions: { after: { contentText: `  traindoctor: ${inlineText(marker.diagnosis)}` } },
        },
      ]);
    }
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    this.type.dispose();
  }
}

/** The title plus the first piece of evidence that names NaN/inf values, when there is one. */
function inlineText(d: Diagnosis): string {
  const striking = d.evidence?.find((e) => /\b(nan|inf)\b/i.test(e)) ?? d.evidence?.[0];
  return striking ? `${d.title} — ${striking}` : d.title;
}

function hover(d: Diagnosis): vscode.MarkdownString {
  const markdown = new vscode.MarkdownString(undefined, true);
  markdown.appendMarkdown(`**traindoctor: ${d.title}**\n\n`);
  markdown.appendText(d.root_cause);
  if (d.evidence?.length) {
    markdown.appendMarkdown('\n\n');
    for (const item of d.evidence) {
      markdown.appendMarkdown('- ');
      markdown.appendText(item);
      markdown.appendMarkdown('\n');
    }
  }
  if (d.fixes?.length) {
    markdown.appendMarkdown('\n**Fixes**\n\n');
    d.fixes.forEach((fix, index) => {
      markdown.appendMarkdown(`${index + 1}. `);
      markdown.appendText(fix.title);
      markdown.appendMarkdown('\n');
    });
  }
  return markdown;
}
