// "Estimate memory of this training script" in a real VS Code (code-server) with the real Python
// server and a real torch script written for a GPU (this machine has none). Run through scripts/e2e.sh.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mkdirSync } from 'fs';
import { join } from 'path';
import { Editor, ROOT, Workbench, quietSettings } from './harness.mjs';

const FIXTURES = join(ROOT, 'extension', 'test', 'fixtures', 'budget-workspace');
const ARTIFACTS = join(ROOT, '.e2e', 'artifacts');
const SCREENSHOTS = process.env.E2E_SCREENSHOTS ?? join(ARTIFACTS, 'screenshots');
const VSIX = process.env.E2E_VSIX;
const PYTHON = process.env.E2E_PYTHON ?? join(ROOT, '.venv', 'bin', 'python');

const editor = new Editor(join(ROOT, '.e2e', 'run-budget'));
const SETTINGS = quietSettings(PYTHON);
let wb;

before(async () => {
  assert.ok(VSIX, 'E2E_VSIX names the packaged extension (scripts/e2e.sh sets it)');
  mkdirSync(SCREENSHOTS, { recursive: true });
  editor.prepare({ vsix: VSIX, fixtures: FIXTURES, settings: SETTINGS });
  wb = new Workbench(await editor.start());
});

after(async () => {
  await editor.stop();
});

test('"Estimate memory of this training script" shows the budget of a CUDA script on a CPU-only machine', { timeout: 300_000 }, async () => {
  try {
    await wb.openFile('train_gpt.py');
    const item = wb.page.locator('.statusbar-item', { hasText: 'traindoctor' });
    await wb.until('the traindoctor server to run', () => item.locator('.codicon-check, .codicon-warning').count(), 90_000);
    await wb.command('traindoctor: Estimate memory of this training script');
    const panel = await wb.webviewFrame('[data-testid="traindoctor-budget"]', 240_000);
    const body = panel.locator('body');
    assert.equal(await body.getAttribute('data-fits'), 'true');
    const text = await body.innerText();
    assert.match(text, /One training step of train_gpt\.py: fits/);
    assert.match(text, /Largest batch that fits: \d+ \(now 16\)/);
    assert.match(text, /activation checkpointing of the largest repeated blocks .*: peak/);
    assert.equal(await panel.locator('svg[data-testid="budget-chart"] polygon').count(), 6);
    await wb.screenshot(join(SCREENSHOTS, 'budget-panel.png'));
  } catch (error) {
    mkdirSync(ARTIFACTS, { recursive: true });
    await wb?.screenshot(join(ARTIFACTS, 'failed-budget.png')).catch(() => undefined);
    console.error(`logs: ${editor.logs} and ${editor.userData}/logs`);
    throw error;
  }
});
