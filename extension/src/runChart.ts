import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

/** One step as the chart draws it, read from the monitor's steps.jsonl. */
interface Point {
  step: number;
  loss: Value;
  grad_norm: Value;
  memory: Value;
}

// Messages to a webview travel as JSON, which has no NaN: a non-finite value travels as "nan".
type Value = number | 'nan' | null;

const POLL_MS = 500;

/** A live chart of loss, gradient norm and memory, following `<run_dir>/steps.jsonl` while the run goes on. */
export class RunChart implements vscode.Disposable {
  static readonly viewType = 'traindoctor.runChart';
  private panel: vscode.WebviewPanel | undefined;
  private timer: NodeJS.Timeout | undefined;
  private offset = 0;
  private partial = '';

  follow(runDir: string, title: string): void {
    this.stop();
    this.offset = 0;
    this.partial = '';
    if (!this.panel) {
      // Column three: the diagnosis panel opens beside the editor when the run stops, and the chart stays in view.
      this.panel = vscode.window.createWebviewPanel(RunChart.viewType, title, { viewColumn: vscode.ViewColumn.Three, preserveFocus: true },
        { enableScripts: true, localResourceRoots: [], retainContextWhenHidden: true });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.stop();
      });
    }
    this.panel.title = title;
    this.panel.webview.html = html(runDir);
    const file = path.join(runDir, 'steps.jsonl');
    this.timer = setInterval(() => this.poll(file), POLL_MS);
  }

  /** Reads what the run appended since the last poll and sends the new points to the webview. */
  poll(file: string): void {
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch {
      return; // not written yet
    }
    if (size <= this.offset) {
      return;
    }
    const handle = fs.openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(size - this.offset);
      fs.readSync(handle, buffer, 0, buffer.length, this.offset);
      this.offset = size;
      const text = this.partial + buffer.toString('utf8');
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      const points = lines.map(parse).filter((p): p is Point => p !== undefined);
      if (points.length) {
        void this.panel?.webview.postMessage({ type: 'points', points });
      }
    } finally {
      fs.closeSync(handle);
    }
  }

  /** Stops following (the run ended); reads the last records once more. */
  finish(runDir: string): void {
    this.poll(path.join(runDir, 'steps.jsonl'));
    this.stop();
  }

  private stop(): void {
    if (this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  dispose(): void {
    this.stop();
    this.panel?.dispose();
  }
}

function number(value: unknown): Value {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : 'nan';
  }
  if (value === 'nan' || value === 'inf' || value === '-inf') {
    return 'nan'; // drawn as a marker: the step where it broke
  }
  return null;
}

function parse(line: string): Point | undefined {
  try {
    const record = JSON.parse(line) as Record<string, unknown>;
    if (typeof record.step !== 'number') {
      return undefined;
    }
    return {
      step: record.step,
      loss: number(record.loss),
      grad_norm: number(record.grad_norm),
      memory: number(record.cuda_allocated ?? record.rss),
    };
  } catch {
    return undefined;
  }
}

function html(runDir: string): string {
  const nonce = crypto.randomBytes(16).toString('base64');
  const escaped = runDir.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<style nonce="${nonce}">
 body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1em; }
 .chart { margin: .6em 0 1.2em; } .chart h2 { font-size: 1em; margin: 0 0 .2em; }
 .plot { display: flex; align-items: stretch; }
 .axis { flex: 0 0 5.5em; height: 120px; display: flex; flex-direction: column; justify-content: space-between; text-align: right; padding-right: .4em; font-size: .8em; opacity: .85; font-variant-numeric: tabular-nums; }
 svg { flex: 1 1 auto; width: 100%; height: 120px; background: var(--vscode-editor-background); border: 1px solid var(--vscode-panel-border); }
 polyline { fill: none; stroke: var(--vscode-charts-blue, #3794ff); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
 line.broken { stroke: var(--vscode-errorForeground, red); stroke-width: 1; stroke-dasharray: 3 2; vector-effect: non-scaling-stroke; }
 .value { opacity: .8; font-size: .9em; } .value.bad { color: var(--vscode-errorForeground); font-weight: bold; }
</style></head>
<body data-testid="traindoctor-run-chart" data-steps="0" data-nonfinite-step="">
<p class="run">Run records: <code>${escaped}</code> · <span id="steps">0</span> optimizer steps</p>
<div class="chart" data-series="loss"><h2>loss<span class="unit"></span> <span class="value"></span></h2><div class="plot"><div class="axis"><span class="top"></span><span class="mid"></span><span class="bottom"></span></div><svg viewBox="0 0 1000 100" preserveAspectRatio="none"></svg></div></div>
<div class="chart" data-series="grad_norm"><h2>gradient norm<span class="unit"></span> <span class="value"></span></h2><div class="plot"><div class="axis"><span class="top"></span><span class="mid"></span><span class="bottom"></span></div><svg viewBox="0 0 1000 100" preserveAspectRatio="none"></svg></div></div>
<div class="chart" data-series="memory"><h2>memory<span class="unit"></span> <span class="value"></span></h2><div class="plot"><div class="axis"><span class="top"></span><span class="mid"></span><span class="bottom"></span></div><svg viewBox="0 0 1000 100" preserveAspectRatio="none"></svg></div></div>
<script nonce="${nonce}">
 const points = [];
 const NS = 'http://www.w3.org/2000/svg';
 // Memory in binary units (the monitor records bytes); the other series as they are.
 function unitOf(name, largest) {
   if (name !== 'memory') return [1, ''];
   for (const [size, unit] of [[1024 ** 3, 'GiB'], [1024 ** 2, 'MiB'], [1024, 'KiB']]) if (largest >= size) return [size, unit];
   return [1, 'bytes'];
 }
 const tick = (v) => (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0) ? v.toExponential(2) : String(Number(v.toPrecision(4))));
 function draw(name) {
   const chart = document.querySelector('.chart[data-series="' + name + '"]');
   const svg = chart.querySelector('svg');
   svg.replaceChildren();
   const values = points.filter((p) => p[name] !== null);
   const finite = values.filter((p) => Number.isFinite(p[name]));
   const [divisor, unit] = unitOf(name, Math.max(0, ...finite.map((p) => Math.abs(p[name]))));
   chart.querySelector('.unit').textContent = unit ? ' (' + unit + ')' : '';
   chart.dataset.unit = unit;
   const label = chart.querySelector('.value');
   const last = values[values.length - 1];
   label.textContent = last ? 'step ' + last.step + ': ' + (Number.isFinite(last[name]) ? tick(last[name] / divisor) + (unit ? ' ' + unit : '') : 'nan/inf') : '';
   label.classList.toggle('bad', !!last && !Number.isFinite(last[name]));
   for (const place of ['top', 'mid', 'bottom']) chart.querySelector('.axis .' + place).textContent = '';
   if (!values.length) return;
   const first = points[0].step, end = Math.max(points[points.length - 1].step, first + 1);
   const log = finite.length > 1 && finite.every((p) => p[name] > 0) && Math.max(...finite.map((p) => p[name])) / Math.min(...finite.map((p) => p[name])) > 1e3;
   const y = (v) => (log ? Math.log10(v) : v);
   const ys = finite.map((p) => y(p[name]));
   // Memory is read against 0: a change of a few MiB must not fill the chart like a leak.
   const low = name === 'memory' && !log ? Math.min(0, ...ys) : Math.min(...ys), high = Math.max(...ys), span = high - low || 1;
   if (finite.length) {
     const back = (v) => (log ? 10 ** v : v) / divisor;
     const axis = { top: back(high), mid: back(low + span / 2), bottom: back(low) };
     for (const [place, v] of Object.entries(axis)) chart.querySelector('.axis .' + place).textContent = tick(v);
     chart.dataset.yTop = tick(axis.top);
     chart.dataset.yBottom = tick(axis.bottom);
   }
   const x = (step) => ((step - first) / (end - first)) * 1000;
   const line = document.createElementNS(NS, 'polyline');
   line.setAttribute('points', finite.map((p) => x(p.step) + ',' + (95 - ((y(p[name]) - low) / span) * 90)).join(' '));
   svg.appendChild(line);
   const broken = values.find((p) => !Number.isFinite(p[name]));
   if (broken) {
     const mark = document.createElementNS(NS, 'line');
     mark.setAttribute('class', 'broken');
     for (const [k, v] of [['x1', x(broken.step)], ['x2', x(broken.step)], ['y1', 0], ['y2', 100]]) mark.setAttribute(k, v);
     svg.appendChild(mark);
   }
 }
 window.addEventListener('message', (event) => {
   const message = event.data;
   if (!message || message.type !== 'points') return;
   const value = (v) => (v === 'nan' ? NaN : v);
   points.push(...message.points.map((p) => ({ step: p.step, loss: value(p.loss), grad_norm: value(p.grad_norm), memory: value(p.memory) })));
   document.body.dataset.steps = String(points.length);
   document.getElementById('steps').textContent = String(points.length);
   const broken = points.find((p) => (p.loss !== null && !Number.isFinite(p.loss)) || (p.grad_norm !== null && !Number.isFinite(p.grad_norm)));
   document.body.dataset.nonfiniteStep = broken ? String(broken.step) : '';
   for (const name of ['loss', 'grad_norm', 'memory']) draw(name);
 });
</script>
</body></html>`;
}
