// Workspace trust: in Restricted Mode the extension starts no process; once trusted, it starts.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { execFileSync } from 'child_process';
import { mkdirSync, writeFileSync } from 'fs';
import { join } from 'path';
import { Editor, ROOT, Workbench } from './harness.mjs';

const PYTHON = process.env.E2E_PYTHON ?? join(ROOT, '.venv', 'bin', 'python');
const editor = new Editor(join(ROOT, '.e2e', 'run-untrusted'));

/** Processes whose command line names `needle` (ours: a link no other run uses). */
function processesNaming(needle) {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(needle));
}

after(() => editor.stop());

test('an untrusted workspace starts no traindoctor process until it is trusted; then Lint workspace works', { timeout: 120_000 }, async () => {
  assert.ok(process.env.E2E_VSIX, 'E2E_VSIX names the packaged extension (scripts/e2e.sh sets it)');
  // A private wrapper around the interpreter (not exec'd, so it stays in `ps`): it tells this
  // editor's server from any other traindoctor process on the machine.
  const link = join(editor.dir, 'untrusted-python');
  editor.prepare({
    vsix: process.env.E2E_VSIX,
    fixtures: join(ROOT, 'extension', 'test', 'fixtures', 'workspace'),
    settings: {
      'traindoctor.interpreter': link,
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'always',
      'workbench.startupEditor': 'none',
      'chat.disableAIFeatures': true,
      'git.enabled': false,
      'files.hotExit': 'off',
    },
  });
  mkdirSync(editor.dir, { recursive: true });
  writeFileSync(link, `#!/bin/sh\n"${PYTHON}" "$@"\n`, { mode: 0o755 });
  const wb = new Workbench(await editor.start({ trust: true }));
  await wb.page.getByText('Restricted Mode').first().waitFor();
  await wb.openFile('train_four_bugs.py');
  // A trusted workspace has its server within ~2 s of opening a Python file; give it far longer.
  await wb.page.waitForTimeout(8_000);
  assert.deepEqual(processesNaming(link), []);
  assert.equal(await wb.page.locator('.statusbar-item', { hasText: 'traindoctor' }).count(), 0);

  await wb.command('Workspaces: Manage Workspace Trust');
  await wb.page.getByRole('button', { name: /^Trust$/ }).first().click();
  await wb.until('the server to start once trusted', () => processesNaming(link).length > 0, 60_000);
  await wb.until('the traindoctor status item', () =>
    wb.page.locator('.statusbar-item', { hasText: 'traindoctor' }).locator('.codicon-check, .codicon-warning').count(),
  );

  // Lint workspace reaches files that were never opened.
  await wb.command('View: Close All Editors'); // the Workspace Trust editor is modal
  await wb.command('traindoctor: Lint workspace');
  await wb.showProblems('train_nan.py');
  await wb.until('findings in the unopened train_nan.py', async () => (await wb.problems()).some((p) => p.file === 'train_nan.py' && /^TRN/.test(p.code)));
});
