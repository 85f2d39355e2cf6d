// The diagnosis panel's links in a real VS Code (code-server) with the real Python server
// (issue 28, points 3 and 4): the references of the kind and the fixes, and the cause line
// (the accumulating `running += loss` of a CUDA OOM raised elsewhere), which opens the file there.
// Run through scripts/e2e.sh, which builds the .vsix.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { mkdirSync, readFileSync, writeFileSync } from 'fs';
import { basename, join } from 'path';
import { Editor, ROOT, Workbench, quietSettings, scenarios } from './harness.mjs';

const FIXTURES = join(ROOT, 'extension', 'test', 'fixtures');
const ARTIFACTS = join(ROOT, '.e2e', 'artifacts');
const SCREENSHOTS = process.env.E2E_SCREENSHOTS ?? join(ARTIFACTS, 'screenshots');
const VSIX = process.env.E2E_VSIX;
const PYTHON = process.env.E2E_PYTHON ?? join(ROOT, '.venv', 'bin', 'python');

const editor = new Editor(join(ROOT, '.e2e', 'run-links'));
const SETTINGS = quietSettings(PYTHON);
let wb;

/** A test that keeps a screenshot and the logs' location when it fails. */
const scenario = scenarios(editor, () => wb, ARTIFACTS, 180_000);

before(async () => {
  assert.ok(VSIX, 'E2E_VSIX names the packaged extension (scripts/e2e.sh sets it)');
  mkdirSync(SCREENSHOTS, { recursive: true });
  editor.prepare({ vsix: VSIX, fixtures: join(FIXTURES, 'workspace'), settings: SETTINGS });
  // The log names the workspace's own train_accumulate.py, as a log copied from that machine would.
  const log = readFileSync(join(FIXTURES, 'accumulate_oom.log.in'), 'utf8').replaceAll('{WORKSPACE}', editor.workspace);
  writeFileSync(join(editor.workspace, 'accumulate_oom.log'), log);
  wb = new Workbench(await editor.start());
});

after(async () => {
  await editor.stop();
});

/** 1-based line of the first line of `file` (in the workspace) that contains `text`. */
function lineOf(file, text) {
  const index = readFileSync(join(editor.workspace, file), 'utf8').split('\n').findIndex((line) => line.includes(text));
  assert.notEqual(index, -1, `${text} not in ${file}`);
  return index + 1;
}

async function diagnoseAccumulateLog() {
  await wb.openFile('accumulate_oom.log');
  await wb.page.locator('.editor-instance .monaco-editor .view-lines').first().click();
  await wb.page.keyboard.press('Control+A');
  await wb.command('traindoctor: Diagnose this traceback');
  return wb.webviewFrame('[data-testid="traindoctor-diagnosis"][data-origin="traceback"][data-kind="cuda-oom"]', 90_000);
}

scenario('the diagnosis panel links the references of the kind and of its fixes', async () => {
  const panel = await diagnoseAccumulateLog();
  const links = panel.locator('ul.references a.reference');
  await links.first().waitFor();
  const references = await links.evaluateAll((elements) => elements.map((a) => ({ text: a.textContent, url: a.dataset.url })));
  assert.ok(references.length >= 2, JSON.stringify(references));
  for (const { text, url } of references) {
    assert.ok(text.trim(), JSON.stringify(references));
    assert.match(url, /^https:\/\/\S+$/);
  }
  // the kind's page (rules/references/kinds.yaml: cuda-oom cites CUDA semantics' memory management)
  assert.ok(references.some((r) => r.url.includes('notes/cuda.html')), JSON.stringify(references));
  // A click asks VS Code to open the page: code-server either asks to confirm the external site or opens it.
  const opened = wb.page.context().waitForEvent('page', { timeout: 15_000 }).then(() => 'page').catch(() => undefined);
  await links.first().click();
  const host = new URL(references[0].url).host;
  const outcome = await wb.until('the reference to be opened', async () => {
    if (await wb.page.locator('.monaco-dialog-box', { hasText: host }).count()) {
      return 'dialog';
    }
    return Promise.race([opened, new Promise((r) => setTimeout(() => r(undefined), 200))]);
  }, 20_000);
  if (outcome === 'dialog') {
    await wb.page.keyboard.press('Escape');
  }
  await wb.screenshot(join(SCREENSHOTS, 'diagnosis-references.png'));
});

scenario('the cause line is a link that opens the file at that line; the fix names the same line', async () => {
  await wb.command('View: Close All Editors');
  const file = 'train_accumulate.py';
  const line = lineOf(file, '        running += loss');
  const panel = await diagnoseAccumulateLog();
  const failing = panel.locator('p.location a.frame');
  assert.notEqual(Number(await failing.getAttribute('data-line')), line); // raised at torch.randn, not the cause
  const cause = panel.locator('p.cause-location a.frame');
  await cause.waitFor();
  assert.equal(await cause.innerText(), `${file}:${line}`);
  assert.equal(basename(await cause.getAttribute('data-path')), file);
  assert.match(await panel.locator('p.cause-location').innerText(), /running \+= loss.*TRN101/s);
  // the lint fix that edits that line names it the same way
  const fixLink = panel.locator('.fixes .fix-location a.frame').first();
  assert.equal(await fixLink.innerText(), `${file}:${line}`);
  await cause.click();
  await wb.page.locator(`.tabs-container .tab.active[aria-label*="${file}"]`).waitFor({ timeout: 30_000 });
  // The editor's own line number marks the cursor's line. (The status bar's "Ln, Col" item is not a
  // witness: it is hidden while the webview group keeps the focus, which the click can leave it with.)
  const activeLine = wb.page.locator('.editor-instance .monaco-editor .line-numbers.active-line-number');
  let shown = '';
  await wb.until(`the cursor at line ${line}`, async () => {
    shown = (await activeLine.allInnerTexts().catch(() => [])).join(',');
    return shown.trim() === String(line);
  }).catch((error) => { throw new Error(`${error.message}; the active line number was ${JSON.stringify(shown)}`); });
  const current = wb.page.locator('.editor-instance .monaco-editor .view-overlays .current-line');
  assert.ok(await current.count() >= 1);
  await wb.screenshot(join(SCREENSHOTS, 'diagnosis-cause-link.png'));
});
