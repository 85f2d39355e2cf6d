import { spawn } from 'child_process';
import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';
import { resolveInterpreter } from './interpreter';
import { log } from './logging';
import { currentScript } from './monitorCommands';

/** The last stdout line of `traindoctor budget --format json` (the keys the panel reads). */
export interface BudgetReport {
  peak_bytes: number;
  by_category: Record<string, number>;
  peak_phase: string;
  peak_module: string | null;
  by_module: { name: string; class: string; parameters: number; activations: number }[];
  flops: number;
  step_time_s: number | null;
  gpu: { name: string; memory_bytes: number };
  gpu_memory_bytes: number;
  reserve_bytes: number;
  fits: boolean;
  headroom_bytes: number;
  batch_size: number | null;
  max_batch: number | null;
  batch_line: { reason?: string; note?: string };
  levers: { name: string; title: string; peak_bytes: number | null; fits?: boolean; how: string; skipped?: string }[];
  unaccounted: { kind: string; what: string; detail: string }[];
  timeline: { phases: string[]; categories: string[]; points: number[][] };
  world_size: number;
}

const BUDGET_TIMEOUT_MS = 15 * 60_000;
const COLORS: Record<string, string> = {
  parameters: '#4c72b0', buffers: '#8172b3', gradients: '#dd8452', optimizer_state: '#55a868',
  activations: '#c44e52', temporaries: '#937860',
};

/** "Estimate memory of this training script": `traindoctor budget` on the file, then the report in a panel.
 * It runs the user's script (with fake tensors), so only on this request and only in a trusted workspace. */
export function registerBudgetCommand(): vscode.Disposable[] {
  const panel = new BudgetPanel();
  return [
    panel,
    vscode.commands.registerCommand('traindoctor.estimateMemory', (resource?: vscode.Uri) => estimate(panel, resource)),
  ];
}

async function estimate(panel: BudgetPanel, resource?: vscode.Uri): Promise<BudgetReport | undefined> {
  const script = await currentScript(resource);  // refuses in an untrusted workspace
  if (!script) {
    return undefined;
  }
  const interpreter = await resolveInterpreter(script.folder);
  const cwd = script.folder?.uri.fsPath ?? path.dirname(script.file);
  const args = ['-m', 'traindoctor', 'budget', '--format', 'json', '--', interpreter.path, script.file];
  log().info(`${interpreter.path} ${args.join(' ')}`);
  const report = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `traindoctor: estimating memory (${path.basename(script.file)})`, cancellable: true },
    (progress, token) => new Promise<BudgetReport | string>((resolve) => {
      const child = spawn(interpreter.path, args, { cwd, env: process.env });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => child.kill(), BUDGET_TIMEOUT_MS);
      token.onCancellationRequested(() => child.kill());
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        const text = String(chunk).trimEnd();
        log().info(text);
        const step = text.split('\n').filter((line) => line.startsWith('traindoctor budget [')).pop();
        if (step) {
          progress.report({ message: step.replace(/^traindoctor budget \[[^\]]*\]: /, '') });
        }
      });
      child.on('error', (error) => resolve(`cannot start ${interpreter.path}: ${error.message}`));
      child.on('close', (code) => {
        clearTimeout(timer);
        const last = stdout.trim().split('\n').pop() ?? '';
        try {
          resolve(JSON.parse(last) as BudgetReport);
        } catch {
          const reason = stderr.trim().split('\n').filter((l) => l.startsWith('traindoctor:')).pop();
          resolve(token.isCancellationRequested ? 'cancelled' : reason ?? `budget exited with code ${code}`);
        }
      });
    }),
  );
  if (typeof report === 'string') {
    void vscode.window.showErrorMessage(`traindoctor budget: ${report.replace(/^traindoctor: /, '')}`);
    return undefined;
  }
  panel.show(report, script.file);
  return report;
}

/** One webview panel with the latest budget report; the step's memory as an SVG chart. */
class BudgetPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  show(report: BudgetReport, file: string): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('traindoctor.budget', 'traindoctor: memory budget',
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, enableFindWidget: true, localResourceRoots: [] });
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = `traindoctor: memory of ${path.basename(file)}`;
    this.panel.webview.html = render(report, file);
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

function size(bytes: number | null | undefined): string {
  if (bytes == null) {
    return '?';
  }
  const sign = bytes < 0 ? '-' : '';
  const value = Math.abs(bytes);
  if (value >= 2 ** 30) {
    return `${sign}${(value / 2 ** 30).toFixed(2)} GiB`;
  }
  return value >= 2 ** 20 ? `${sign}${(value / 2 ** 20).toFixed(1)} MiB` : `${sign}${(value / 1024).toFixed(1)} KiB`;
}

function escape(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c] as string));
}

/** Memory over the step's ops, stacked by category, as SVG polygons (no script, no remote content). */
function chart(report: BudgetReport): string {
  const { points, categories } = report.timeline;
  if (!points.length) {
    return '';
  }
  const width = 720;
  const height = 240;
  const top = Math.max(...points.map((p) => p.slice(1).reduce((a, b) => a + b, 0)), 1);
  const x = (i: number) => (points.length === 1 ? 0 : (i / (points.length - 1)) * width);
  const y = (v: number) => height - (v / top) * (height - 10);
  const below = points.map(() => 0);
  const layers = categories.map((category, c) => {
    const upper = points.map((p, i) => below[i] + p[1 + c]);
    const outline = [...upper.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`),
      ...below.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).reverse()].join(' ');
    upper.forEach((v, i) => (below[i] = v));
    return `<polygon points="${outline}" fill="${COLORS[category] ?? '#888'}"><title>${escape(category)}</title></polygon>`;
  });
  const legend = categories
    .map((c) => `<svg class="key" viewBox="0 0 10 10"><rect width="10" height="10" fill="${COLORS[c] ?? '#888'}"/></svg>${escape(c.replace('_', ' '))}`)
    .join(' ');
  return `<h2>Memory over one step (peak ${size(top)})</h2>
<svg data-testid="budget-chart" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="none">${layers.join('')}</svg>
<p class="legend">${legend}</p>`;
}

function render(r: BudgetReport, file: string): string {
  const nonce = crypto.randomBytes(16).toString('base64');
  const verdict = r.fits ? 'fits' : 'does not fit';
  const categories = Object.entries(r.by_category)
    .map(([name, bytes]) => `<tr><td>${escape(name.replace('_', ' '))}</td><td>${size(bytes)}</td></tr>`).join('');
  const modules = r.by_module
    .map((m) => `<tr><td><code>${escape(m.name)}</code></td><td>${escape(m.class)}</td><td>${size(m.parameters)}</td><td>${size(m.activations)}</td></tr>`).join('');
  const levers = r.levers
    .map((l) => l.skipped
      ? `<li><strong>${escape(l.title)}</strong>: not applied (${escape(l.skipped)})</li>`
      : `<li><strong>${escape(l.title)}</strong>: peak ${size(l.peak_bytes)} (${l.fits ? 'fits' : 'does not fit'}); ${escape(l.how)}</li>`)
    .join('');
  const unaccounted = r.unaccounted.map((u) => `<li><strong>${escape(u.kind)}</strong> ${escape(u.what)}: ${escape(u.detail)}</li>`).join('');
  const batch = r.max_batch != null
    ? `<p class="max-batch">Largest batch that fits: <strong>${r.max_batch}</strong>${r.batch_size ? ` (now ${r.batch_size})` : ''}. ${escape(r.batch_line.note ?? '')}</p>`
    : `<p class="max-batch">Largest batch: unknown (${escape(r.batch_line.reason ?? 'not measured')}).</p>`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}';">
<style nonce="${nonce}">
 body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1.2em 2em; line-height: 1.45; }
 h1 { font-size: 1.35em; } h2 { font-size: 1.05em; margin-top: 1.4em; border-bottom: 1px solid var(--vscode-panel-border); }
 td, th { padding: .1em .8em .1em 0; text-align: left; }
 .verdict.fits { color: var(--vscode-testing-iconPassed); } .verdict.nofit { color: var(--vscode-errorForeground); }
 .key { display: inline-block; width: .9em; height: .9em; margin: 0 .3em 0 .8em; vertical-align: middle; }
</style></head>
<body data-testid="traindoctor-budget" data-fits="${r.fits}">
<h1>One training step of ${escape(path.basename(file))}: <span class="verdict ${r.fits ? 'fits' : 'nofit'}">${verdict}</span></h1>
<p class="summary">Peak <strong>${size(r.peak_bytes)}</strong> in the ${escape(r.peak_phase)} phase${r.peak_module ? ` (${escape(r.peak_module)})` : ''} on ${escape(r.gpu.name)}
(${size(r.gpu_memory_bytes)}, ${size(r.reserve_bytes)} kept for the CUDA context): headroom ${size(r.headroom_bytes)}${r.world_size > 1 ? `, per rank of ${r.world_size}` : ''}.
${(r.flops / 1e12).toFixed(3)} TFLOP per step${r.step_time_s != null ? `, at least ${(r.step_time_s * 1000).toFixed(1)} ms on this GPU` : ''}.</p>
${batch}
${chart(r)}
<h2>Memory at the peak</h2><table class="categories">${categories}</table>
${levers ? `<h2>Levers, each re-estimated</h2><ul class="levers">${levers}</ul>` : ''}
${modules ? `<h2>Largest modules</h2><table><tr><th>module</th><th>class</th><th>parameters</th><th>activations</th></tr>${modules}</table>` : ''}
${unaccounted ? `<h2>Not counted</h2><ul class="unaccounted">${unaccounted}</ul>` : ''}
</body></html>`;
}
