// "Watch this run" and "Overfit one batch" in a real VS Code (code-server) with the real Python
// server and real torch scripts. Run through scripts/e2e.sh, which builds the .vsix.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { mkdirSync } from 'fs';
import { join } from 'path';
import { Editor, ROOT, Workbench, quietSettings, scenarios } from './harness.mjs';

const FIXTURES = join(ROOT, 'extension', 'test', 'fixtures', 'monitor-workspace');
const ARTIFACTS = join(ROOT, '.e2e', 'artifacts');
const SCREENSHOTS = process.env.E2E_SCREENSHOTS ?? join(ARTIFACTS, 'screenshots');
const VSIX = process.env.E2E_VSIX;
const PYTHON = process.env.E2E_PYTHON ?? join(ROOT, '.venv', 'bin', 'python');

const editor = new Editor(join(ROOT, '.e2e', 'run-monitor'));
const SETTINGS = quietSettings(PYTHON, {
  'terminal.integrated.gpuAcceleration': 'off',
  // One torch thread per process: the machines running these tests have few cores.
  'terminal.integrated.env.linux': { OMP_NUM_THREADS: '1' },
});
let wb;

/** A test that keeps a screenshot and the logs' location when it fails. */
const scenario = scenarios(editor, () => wb, ARTIFACTS, 240_000);

before(async () => {
  assert.ok(VSIX, 'E2E_VSIX names the packaged extension (scripts/e2e.sh sets it)');
  mkdirSync(SCREENSHOTS, { recursive: true });
  editor.prepare({ vsix: VSIX, fixtures: FIXTURES, settings: SETTINGS });
  wb = new Workbench(await editor.start());
});

after(async () => {
  await editor.stop();
});

/** The status bar item shows a check or a warning count once the server runs (the workbench is then settled). */
function serverRunning(timeout = 90_000) {
  const item = wb.page.locator('.statusbar-item', { hasText: 'traindoctor' });
  return wb.until('the traindoctor server to run', () => item.locator('.codicon-check, .codicon-warning').count(), timeout);
}

scenario('"Watch this run" charts the run live and pauses at the NaN onset with the live diagnosis inline', async () => {
  await wb.openFile('train_lr_too_high.py');
  await serverRunning();
  await wb.command('traindoctor: Watch this run');
  await wb.webviewFrame('[data-testid="traindoctor-run-chart"]', 90_000);
  // lr=5: the loss is 7.1, 8.3e4, 1.9e19, then inf at optimizer step 4, where the monitor stops the run
  // under the debugger and the live diagnosis runs in the training frame.
  const panel = await wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="live"]', 150_000);
  assert.match(await panel.locator('body').innerText(), /optimizer step 4/);
  const decorated = await wb.until('the inline diagnosis at the paused line', () =>
    wb.page.evaluate(() => {
      for (const line of document.querySelectorAll('.monaco-editor .view-line')) {
        for (const element of line.querySelectorAll('span')) {
          if (getComputedStyle(element, '::after').content.includes('traindoctor')) {
            return { line: line.textContent, inline: getComputedStyle(element, '::after').content };
          }
        }
      }
      return undefined;
    }), 60_000);
  assert.ok(decorated.line.includes('optimizer.step()'), `decorated line: ${decorated.line}`);
  // VS Code's exception widget (its traceback: exceptionInfo's details.stackTrace), open at the user's
  // line, and the Call Stack show the user's and torch's frames, not the monitor's bootstrap that runs
  // the script, runpy or debugpy.
  const internal = /bootstrap\.py|runpy|debugpy|pydevd|<frozen traindoctor|traindoctor[\\/](?:monitor|live)[\\/]/;
  const widget = wb.page.locator('.exception-widget');
  await widget.waitFor({ timeout: 30_000 });
  const traceback = await widget.locator('.stack-trace').innerText();
  assert.match(traceback, /train_lr_too_high\.py", line \d+, in <module>/, `exception widget: ${traceback}`);
  assert.match(traceback, /torch[\\/]optim[\\/]optimizer\.py", line \d+, in wrapper/, `exception widget: ${traceback}`);
  assert.doesNotMatch(traceback, internal, `exception widget: ${traceback}`);
  await wb.quickInput('F1', 'Focus on Call Stack View');
  const frames = await wb.until('the Call Stack with the user frame', async () => {
    const rows = await wb.page.locator('.debug-call-stack .monaco-list-row').allInnerTexts();
    return rows.some((row) => row.includes('train_lr_too_high.py')) && rows;
  });
  assert.ok(!frames.some((row) => internal.test(row)), `Call Stack: ${JSON.stringify(frames)}`);
  await wb.command('View: Show Explorer');
  // The chart shares the editor group with the diagnosis: bring it to the front and read it.
  const chartTab = wb.page.locator('.tab', { hasText: '(live)' });
  let body;
  const nonfinite = await wb.until('the chart to mark the non-finite step', async () => {
    await chartTab.first().click().catch(() => undefined);
    const chart = await wb.webviewFrame('[data-testid="traindoctor-run-chart"]', 5_000).catch(() => undefined);
    body = chart?.locator('body');
    return (await body?.getAttribute('data-nonfinite-step').catch(() => null)) || undefined;
  }, 60_000);
  assert.equal(nonfinite, '4');
  assert.equal(await body.getAttribute('data-steps'), '4');
  assert.equal(await body.locator('.chart[data-series="loss"] polyline').count(), 1);
  assert.equal(await body.locator('.chart[data-series="loss"] line.broken').count(), 1);
  // The y axes carry values, and memory its unit: the loss axis spans the finite losses read
  // before the onset (7.1 ... 1.9e19, on a log scale), memory is in MiB and read from 0.
  const loss = body.locator('.chart[data-series="loss"]');
  assert.equal(await loss.locator('.axis .bottom').innerText(), '7.1');
  assert.match(await loss.locator('.axis .top').innerText(), /^1\.\d\de\+19$/);
  const memory = body.locator('.chart[data-series="memory"]');
  assert.equal(await memory.getAttribute('data-unit'), 'MiB');
  assert.match(await memory.locator('h2').innerText(), /^memory \(MiB\) step 4: [\d.]+ MiB$/);
  assert.equal(await memory.locator('.axis .bottom').innerText(), '0');
  assert.match(await memory.locator('.axis .top').innerText(), /^\d+(\.\d+)?$/);
  await wb.screenshot(join(SCREENSHOTS, 'watch-nan-onset.png'));
  await wb.page.keyboard.press('Shift+F5');
}, 300_000);

scenario('"Overfit one batch" shows the verdict and why it does not fit', async () => {
  await wb.openFile('fit_detached.py');
  await serverRunning();
  await wb.command('traindoctor: Overfit one batch');
  const toast = wb.page.locator('.notification-toast', { hasText: 'traindoctor overfit:' });
  await toast.waitFor({ timeout: 240_000 });
  assert.match(await toast.innerText(), /does not fit one batch: loss [\d.]+ → [\d.]+ in 200 steps/);
  const panel = await wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="monitor"]', 30_000);
  assert.equal(await panel.locator('body').getAttribute('data-kind'), 'does-not-fit');
  // the verdict names the line that cuts the graph (issue 30), not only the shape of the cause
  assert.match(await panel.locator('h1').innerText(), /most likely the `\.detach\(\)` at \S*fit_detached\.py:\d+ cuts the graph/);
  await wb.screenshot(join(SCREENSHOTS, 'overfit-verdict.png'));
}, 300_000);
