import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';
import { Diagnosis, DiagnosisFrame } from './diagnosis';

export type DiagnosisOrigin = 'traceback' | 'live' | 'monitor';

export interface PanelOptions {
  /** Offer "Re-run with anomaly detection" (a live diagnosis that wants the forward line). */
  anomalyRerun?: boolean;
  /** The diagnosed run had autograd's anomaly detection on (launched by that re-run). */
  anomalyDetection?: boolean;
  /** Every finding of a monitored run (each with its rank and step): listed, and one click shows it. */
  findings?: (Diagnosis & { step?: number | null })[];
}

/** One webview panel that shows the latest Diagnosis; frames are links into the editor. */
export class DiagnosisPanel implements vscode.Disposable {
  static readonly viewType = 'traindoctor.diagnosis';
  private panel: vscode.WebviewPanel | undefined;
  private shown: { origin: DiagnosisOrigin; options: PanelOptions } | undefined;

  show(diagnosis: Diagnosis, origin: DiagnosisOrigin, options: PanelOptions = {}): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        DiagnosisPanel.viewType,
        'traindoctor: diagnosis',
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: true, enableFindWidget: true, localResourceRoots: [] },
      );
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((message: { type?: string; path?: string; line?: number; code?: string; fix?: string; url?: string; index?: number }) => {
        const other = message.type === 'showFinding' ? this.shown?.options.findings?.[Number(message.index)] : undefined;
        if (other && this.shown) {
          this.show(other, this.shown.origin, this.shown.options);
        } else if (message.type === 'open' && typeof message.path === 'string') {
          void openFrame(message.path, message.line ?? 1);
        } else if (message.type === 'estimateMemory' && typeof message.path === 'string') {
          void vscode.commands.executeCommand('traindoctor.estimateMemory', vscode.Uri.file(message.path));
        } else if (message.type === 'openReference' && typeof message.url === 'string' && /^https:\/\//.test(message.url)) {
          void vscode.env.openExternal(vscode.Uri.parse(message.url));
        } else if (message.type === 'rerunWithAnomalyDetection') {
          void vscode.commands.executeCommand('traindoctor.rerunWithAnomalyDetection');
        } else if (message.type === 'applyFix' && typeof message.path === 'string' && typeof message.code === 'string') {
          void applyLintFix(message.path, message.line ?? 1, message.code, message.fix).then((applied) =>
            this.panel?.webview.postMessage({ type: 'fixApplied', applied }),
          );
        }
      });
    }
    this.shown = { origin, options };
    this.panel.title = `traindoctor: ${diagnosis.title}`;
    this.panel.webview.html = render(diagnosis, origin, options);
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }

  close(): void {
    this.panel?.dispose();
  }

  dispose(): void {
    this.close();
  }
}

async function openFrame(file: string, line: number): Promise<void> {
  const uri = path.isAbsolute(file) || !vscode.workspace.workspaceFolders?.length
    ? vscode.Uri.file(file)
    : vscode.Uri.joinPath(vscode.workspace.workspaceFolders[0].uri, file);
  const position = new vscode.Position(Math.max(line - 1, 0), 0);
  try {
    await vscode.window.showTextDocument(uri, { selection: new vscode.Range(position, position), viewColumn: vscode.ViewColumn.One });
  } catch {
    void vscode.window.showWarningMessage(`traindoctor: ${file} is not available on this machine.`);
  }
}

/** The diagnosis correlated with a lint finding that has a fix: apply that rule's code action
 * (the same quick fix the editor offers) to the file and save it. */
async function applyLintFix(file: string, line: number, code: string, fixTitle?: string): Promise<boolean> {
  const uri = vscode.Uri.file(file);
  try {
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.One, preserveFocus: false });
    const matches = (d: vscode.Diagnostic) =>
      (typeof d.code === 'object' ? String(d.code.value) : String(d.code)) === code && d.range.start.line === line - 1;
    // The server lints the file once it is open: wait for its diagnostic (bounded).
    let diagnostic: vscode.Diagnostic | undefined;
    for (let tries = 0; tries < 50 && !diagnostic; tries++) {
      diagnostic = vscode.languages.getDiagnostics(uri).find(matches);
      if (!diagnostic) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    if (!diagnostic) {
      void vscode.window.showWarningMessage(`traindoctor: ${code} is no longer reported at ${path.basename(file)}:${line}.`);
      return false;
    }
    // The server resolves edits lazily (codeAction/resolve): ask VS Code to resolve the actions it returns.
    const actions = (await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider', uri, diagnostic.range, vscode.CodeActionKind.QuickFix.value, 10)) ?? [];
    const fixes = actions.filter((a) => a.edit && !/^Ignore /.test(a.title));
    const action = fixes.find((a) => (a.diagnostics ?? []).some(matches) && (!fixTitle || a.title === fixTitle))
      ?? fixes.find((a) => a.title === fixTitle) ?? fixes.find((a) => (a.diagnostics ?? []).some(matches));
    if (!action?.edit || !(await vscode.workspace.applyEdit(action.edit))) {
      void vscode.window.showWarningMessage(`traindoctor: no fix to apply for ${code} at ${path.basename(file)}:${line}.`);
      return false;
    }
    await document.save();
    void vscode.window.showInformationMessage(`traindoctor: applied "${action.title}".`);
    return true;
  } catch (error) {
    void vscode.window.showWarningMessage(`traindoctor: could not apply the fix: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

function applyFixButton(details: Record<string, unknown> | undefined): string {
  const target = details?.line_to_change as { path?: string; line?: number; code?: string; fix?: string | null } | undefined;
  if (!target?.path || !target.code || !target.fix) {
    return '';
  }
  return `<p><button class="apply-fix" data-path="${escape(target.path)}" data-line="${escape(target.line ?? 1)}" data-code="${escape(target.code)}" data-fix="${escape(target.fix)}">` +
    `Apply fix: ${escape(target.fix)} (${escape(target.code)}, ${escape(path.basename(target.path))}:${escape(target.line ?? 1)})</button></p>`;
}

function hiddenFrames(details: Record<string, unknown> | undefined): string {
  const hidden = Number(details?.hidden_frames ?? 0);
  return hidden > 0 ? `<p class="hidden-frames">${hidden} frame${hidden === 1 ? '' : 's'} of traindoctor, the debugger or runpy hidden</p>` : '';
}

function escape(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function frameLink(frame: DiagnosisFrame, label?: string): string {
  const text = label ?? `${path.basename(frame.path)}:${frame.line} in ${frame.function}`;
  return `<a href="#" class="frame" data-path="${escape(frame.path)}" data-line="${escape(frame.line)}" title="${escape(frame.path)}">${escape(text)}</a>`;
}

function tensorsTable(details: Record<string, unknown> | undefined): string {
  // The server writes what the live probes read under details.probes (live/enrich.py probes_json).
  const probes = details?.probes as Record<string, unknown> | undefined;
  const tensors = probes?.tensors;
  if (!Array.isArray(tensors) || tensors.length === 0) {
    return '';
  }
  const rows = tensors
    .map((t: Record<string, unknown>) => {
      const bad = Number(t.nan_count ?? 0) > 0 || Number(t.inf_count ?? 0) > 0;
      const shape = Array.isArray(t.shape) ? `(${(t.shape as unknown[]).join(', ')})` : escape(t.shape);
      return `<tr class="${bad ? 'bad' : ''}"><td><code>${escape(t.name)}</code></td><td>${shape}</td><td>${escape(t.dtype)}</td>` +
        `<td>${escape(t.device)}</td><td>${escape(t.nan_count ?? '')}</td><td>${escape(t.inf_count ?? '')}</td></tr>`;
    })
    .join('');
  return `<h2>Tensors in the failing frame</h2><table class="tensors"><tr><th>name</th><th>shape</th><th>dtype</th><th>device</th><th>NaN</th><th>inf</th></tr>${rows}</table>`;
}

/** An out-of-memory diagnosis of a script in the workspace: run `traindoctor budget` on it (on click only). */
function estimateButton(details: Record<string, unknown> | undefined): string {
  const budget = details?.budget as { script?: string } | undefined;
  if (!budget?.script) {
    return '';
  }
  return `<p class="estimate-offer"><button class="estimate-memory" data-path="${escape(budget.script)}">Estimate what fits</button> ` +
    'one training step of this script with fake tensors: the largest batch that fits and the levers, re-estimated.</p>';
}

function anomalyRerunButton(options: PanelOptions): string {
  if (!options.anomalyRerun) {
    return '';
  }
  return '<p class="anomaly-rerun-offer">torch names the autograd node, not the forward line that created it; ' +
    'autograd\'s anomaly detection records that line. ' +
    '<button class="anomaly-rerun">Re-run with anomaly detection</button></p>';
}

/** The run's findings, the one shown marked: `rank R, step S: title`. */
function findingsList(shown: Diagnosis, options: PanelOptions): string {
  const findings = options.findings ?? [];
  if (findings.length < 2) {
    return '';
  }
  const items = findings.map((f, index) => {
    const where = [f.rank != null ? `rank ${f.rank}` : '', f.step != null ? `step ${f.step}` : ''].filter(Boolean).join(', ');
    const label = `${where ? `${where}: ` : ''}${f.title}`;
    return f === shown
      ? `<li class="finding shown" data-rank="${escape(f.rank ?? '')}"><strong>${escape(label)}</strong></li>`
      : `<li class="finding" data-rank="${escape(f.rank ?? '')}"><a href="#" class="finding" data-index="${index}">${escape(label)}</a></li>`;
  }).join('');
  return `<h2>Findings of this run</h2><ul class="findings">${items}</ul>`;
}

function render(d: Diagnosis, origin: DiagnosisOrigin, options: PanelOptions): string {
  const nonce = crypto.randomBytes(16).toString('base64');
  const confidence = Math.round((d.confidence ?? 0) * 100);
  const exception = d.exception ? `<p class="exception"><code>${escape(d.exception.type)}: ${escape(d.exception.message)}</code></p>` : '';
  const location = d.location ? `<p class="location">At ${frameLink(d.location)}${d.location.code ? `: <code>${escape(d.location.code)}</code>` : ''}</p>` : '';
  const cause = d.cause_location
    ? `<p class="cause-location">Cause at ${frameLink({ path: d.cause_location.path, line: d.cause_location.line, function: '' }, `${path.basename(d.cause_location.path)}:${d.cause_location.line}`)}` +
      `${d.cause_location.code ? `: <code>${escape(d.cause_location.code)}</code>` : ''}${d.cause_location.why ? ` (${escape(d.cause_location.why)})` : ''}</p>`
    : '';
  const references = (d.references ?? [])
    .map((r) => `<li><a href="#" class="reference" data-url="${escape(r.url)}" title="${escape(r.url)}">${escape(r.title)}</a>` +
      `${r.for && r.for !== 'kind' ? ` <em>(${escape(r.for)})</em>` : ''}${r.states ? `<br>${escape(r.states)}` : ''}</li>`)
    .join('');
  const evidence = (d.evidence ?? []).map((e) => `<li>${escape(e)}</li>`).join('');
  const fixes = (d.fixes ?? [])
    .map((f) => `<li><strong>${escape(f.title)}</strong>${f.location ? ` <span class="fix-location">at ${frameLink(
      { path: f.location.path, line: f.location.line, function: '' }, `${path.basename(f.location.path)}:${f.location.line}`)}</span>` : ''}` +
      `${f.detail ? `<pre>${escape(f.detail)}</pre>` : ''}</li>`)
    .join('');
  const frames = (d.frames ?? [])
    .map((f) => `<li class="${f.is_user ? 'user' : 'library'}">${frameLink(f)}${f.code ? `<br><code>${escape(f.code)}</code>` : ''}</li>`)
    .join('');
  const related = (d.related_findings ?? [])
    .map((f) => {
      const where = f.path ? ` ${frameLink({ path: f.path, line: Number(f.line ?? 1), function: '' }, `${path.basename(f.path)}:${f.line ?? 1}`)}` : '';
      return `<li><code>${escape(f.code)}</code> ${escape(f.message)}${where}</li>`;
    })
    .join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<style nonce="${nonce}">
 body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1.2em 2em; line-height: 1.45; }
 h1 { font-size: 1.35em; margin-bottom: .2em; }
 h2 { font-size: 1.05em; margin-top: 1.4em; border-bottom: 1px solid var(--vscode-panel-border); }
 .meta span { display: inline-block; margin-right: .6em; padding: 0 .5em; border-radius: 3px; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
 .exception code { color: var(--vscode-errorForeground); }
 pre { background: var(--vscode-textCodeBlock-background); padding: .4em .6em; white-space: pre-wrap; }
 li { margin: .25em 0; }
 li.library { opacity: .65; }
 li.user a { font-weight: bold; }
 a { color: var(--vscode-textLink-foreground); }
 table.tensors { border-collapse: collapse; } table.tensors td, table.tensors th { padding: .1em .6em; text-align: left; }
 tr.bad { color: var(--vscode-errorForeground); font-weight: bold; }
</style></head>
<body data-testid="traindoctor-diagnosis" data-kind="${escape(d.kind)}" data-origin="${origin}" data-rank="${escape(d.rank ?? '')}" data-anomaly-detection="${options.anomalyDetection ? 'on' : 'off'}">
<h1>${escape(d.title)}</h1>
<p class="meta"><span>${escape(d.kind)}</span><span>${escape(d.mode)}</span><span>confidence ${confidence}%</span>${origin === 'live' ? '<span>live</span>' : ''}${options.anomalyDetection ? '<span>anomaly detection</span>' : ''}${d.rank != null ? `<span>rank ${escape(d.rank)}</span>` : ''}</p>
${exception}${location}${cause}
${findingsList(d, options)}
${anomalyRerunButton(options)}
<h2>Root cause</h2><p class="root-cause">${escape(d.root_cause)}</p>
${evidence ? `<h2>Evidence</h2><ul class="evidence">${evidence}</ul>` : ''}
${tensorsTable(d.details)}
${fixes ? `<h2>Fixes</h2>${applyFixButton(d.details)}${estimateButton(d.details)}<ol class="fixes">${fixes}</ol>` : ''}
${related ? `<h2>Related findings</h2><ul>${related}</ul>` : ''}
${references ? `<h2>References</h2><ul class="references">${references}</ul>` : ''}
${frames ? `<h2>Frames</h2>${hiddenFrames(d.details)}<ol class="frames">${frames}</ol>` : ''}
<script nonce="${nonce}">
 const vscode = acquireVsCodeApi();
 for (const button of document.querySelectorAll('button.anomaly-rerun')) {
   button.addEventListener('click', () => {
     button.disabled = true;
     vscode.postMessage({ type: 'rerunWithAnomalyDetection' });
   });
 }
 for (const button of document.querySelectorAll('button.estimate-memory')) {
   button.addEventListener('click', () => {
     button.disabled = true;
     vscode.postMessage({ type: 'estimateMemory', path: button.dataset.path });
   });
 }
 for (const button of document.querySelectorAll('button.apply-fix')) {
   button.addEventListener('click', () => {
     button.disabled = true;
     vscode.postMessage({ type: 'applyFix', path: button.dataset.path, line: Number(button.dataset.line), code: button.dataset.code, fix: button.dataset.fix });
   });
 }
 window.addEventListener('message', (event) => {
   if (event.data && event.data.type === 'fixApplied') {
     document.body.dataset.fixApplied = String(event.data.applied);
     for (const button of document.querySelectorAll('button.apply-fix')) {
       button.disabled = event.data.applied;
       if (event.data.applied) { button.textContent = 'Fix applied'; }
     }
   }
 });
 for (const link of document.querySelectorAll('a.reference')) {
   link.addEventListener('click', (event) => {
     event.preventDefault();
     vscode.postMessage({ type: 'openReference', url: link.dataset.url });
   });
 }
 for (const link of document.querySelectorAll('a.finding')) {
   link.addEventListener('click', (event) => {
     event.preventDefault();
     vscode.postMessage({ type: 'showFinding', index: Number(link.dataset.index) });
   });
 }
 for (const link of document.querySelectorAll('a.frame')) {
   link.addEventListener('click', (event) => {
     event.preventDefault();
     vscode.postMessage({ type: 'open', path: link.dataset.path, line: Number(link.dataset.line) });
   });
 }
</script>
</body></html>`;
}
