// "Watch this run" on a torchrun launch configuration in a real VS Code (code-server) with the real
// Python server (issue 31, point 3): a 2-rank gloo DDP job on CPU whose rank 1 reads a NaN batch;
// the finding reaches the panel with its rank. Run through scripts/e2e.sh, which builds the .vsix.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { execFileSync } from 'child_process';
import { mkdirSync } from 'fs';
import { dirname, join } from 'path';
import { Editor, ROOT, Workbench, quietSettings, scenarios } from './harness.mjs';

const FIXTURES = join(ROOT, 'extension', 'test', 'fixtures', 'distributed-workspace');
const ARTIFACTS = join(ROOT, '.e2e', 'artifacts');
const SCREENSHOTS = process.env.E2E_SCREENSHOTS ?? join(ARTIFACTS, 'screenshots');
const VSIX = process.env.E2E_VSIX;
const PYTHON = process.env.E2E_PYTHON ?? join(ROOT, '.venv', 'bin', 'python');

const editor = new Editor(join(ROOT, '.e2e', 'run-distributed'));
const SETTINGS = quietSettings(PYTHON);
let wb;

/** A test that keeps a screenshot and the logs' location when it fails. */
const scenario = scenarios(editor, () => wb, ARTIFACTS, 300_000);

before(async () => {
  assert.ok(VSIX, 'E2E_VSIX names the packaged extension (scripts/e2e.sh sets it)');
  mkdirSync(SCREENSHOTS, { recursive: true });
  editor.prepare({ vsix: VSIX, fixtures: FIXTURES, settings: SETTINGS });
  // The second launch configuration's `program`: the torchrun script of the test's environment.
  process.env.E2E_TORCHRUN = join(dirname(PYTHON), 'torchrun');
  wb = new Workbench(await editor.start());
});

after(async () => {
  await editor.stop();
});

/** "Watch this run" on the open ddp_nan.py, picking the launch configuration `name`. */
async function watchWith(name) {
  await wb.command('traindoctor: Watch this run', { waitHidden: false });
  const widget = wb.page.locator('.quick-input-widget');
  await widget.locator('.monaco-list-row', { hasText: 'torchrun (program)' }).waitFor({ timeout: 30_000 });
  assert.equal(await widget.locator('.monaco-list-row').count(), 2);
  await widget.locator('.monaco-list-row', { hasText: name }).first().click();
  await widget.waitFor({ state: 'hidden' });
  await wb.page.locator('.notification-toast', { hasText: `watching "${name}" on every rank` }).waitFor({ timeout: 30_000 });
}

/** Processes still running the job's script (`ps`). */
function leftOver() {
  const listing = execFileSync('ps', ['-ww', '-eo', 'pid,args'], { encoding: 'utf8' });
  return listing.split('\n').filter((line) => line.includes(join(editor.workspace, 'ddp_nan.py')));
}

scenario('"Watch this run" on a torchrun launch configuration lists each rank\'s findings; a one-rank NaN names its rank', async () => {
  await wb.openFile('ddp_nan.py');
  const item = wb.page.locator('.statusbar-item', { hasText: 'traindoctor' });
  await wb.until('the traindoctor server to run', () => item.locator('.codicon-check, .codicon-warning').count(), 90_000);
  // .vscode/launch.json runs this file twice: as `module: torch.distributed.run` and as `program: torchrun`.
  await watchWith('torchrun: ddp_nan.py on 2 ranks');
  const toast = wb.page.locator('.notification-toast', { hasText: 'traindoctor watch:' });
  await toast.waitFor({ timeout: 240_000 });
  assert.match(await toast.innerText(), /on each of 2 ranks: 3 problem\(s\)/);
  // The panel lists the run's findings with their ranks: rank 0's slow loader (data-starved, straggler)
  // and rank 1's NaN; it shows the first, and one click shows another.
  const first = await wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="monitor"]', 30_000);
  const items = await first.locator('ul.findings li').allInnerTexts();
  assert.deepEqual(items.map((t) => t.replace(/:.*/s, '')), ['rank 0, step 2', 'rank 1, step 6', 'rank 0'], JSON.stringify(items));
  assert.equal(await first.locator('body').getAttribute('data-rank'), '0');
  await first.locator('ul.findings a.finding', { hasText: 'rank 1, step 6' }).click();
  const panel = await wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="monitor"][data-kind="nan-onset"]', 30_000);
  const body = panel.locator('body');
  assert.equal(await body.getAttribute('data-rank'), '1');
  assert.ok((await panel.locator('.meta span').allInnerTexts()).includes('rank 1'));
  assert.match(await panel.locator('h1').innerText(), /step 6/);
  assert.match(await panel.locator('ul.findings li.shown').innerText(), /^rank 1, step 6: loss became nan/);
  assert.deepEqual(leftOver(), []);
  await wb.screenshot(join(SCREENSHOTS, 'watch-torchrun-rank.png'));
});

scenario('"Watch this run" on a launch configuration whose program is torchrun', async () => {
  await wb.command('View: Close All Editors'); // the diagnosis panel too
  await wb.command('Notifications: Clear All Notifications');
  await wb.openFile('ddp_nan.py');
  await watchWith('torchrun (program): ddp_nan.py on 2 ranks');
  const toast = wb.page.locator('.notification-toast', { hasText: 'traindoctor watch:' });
  await toast.waitFor({ timeout: 240_000 });
  assert.match(await toast.innerText(), /on each of 2 ranks: 3 problem\(s\)/);
  const panel = await wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="monitor"]', 30_000);
  assert.ok((await panel.locator('ul.findings li').allInnerTexts()).some((t) => t.startsWith('rank 1, step 6: loss became nan')));
  assert.deepEqual(leftOver(), []);
});

scenario('cancelling the watch of a torchrun job stops every rank', async () => {
  await wb.command('View: Close All Editors');
  await wb.command('Notifications: Clear All Notifications');
  await wb.openFile('ddp_nan.py');
  await watchWith('torchrun: ddp_nan.py on 2 ranks');
  // Both ranks started (they import torch and meet for a few seconds before the first step): cancel then.
  const ranks = () => leftOver().filter((line) => line.includes('bootstrap.py') && !line.includes('torch.distributed.run'));
  await wb.until('both ranks to run', () => ranks().length === 2, 60_000);
  const progress = wb.page.locator('.notification-toast', { hasText: 'watching "torchrun: ddp_nan.py on 2 ranks"' });
  await progress.hover();
  await progress.getByRole('button', { name: 'Cancel' }).click();
  await wb.page.locator('.notification-toast', { hasText: 'traindoctor watch: "torchrun: ddp_nan.py on 2 ranks" stopped.' })
    .waitFor({ timeout: 60_000 });
  assert.deepEqual(leftOver(), []);
});
