import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { log } from './logging';
import { interpreterSetting } from './settings';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

export type InterpreterCheck =
  | { ok: true; version: string }
  | { ok: false; reason: 'not-found' | 'no-traindoctor' | 'broken'; detail: string };

// The parts of the Python extension's public API that we use; it is optional.
interface PythonEnvironmentsApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonEnvironmentsApi>('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch (error) {
    log().warn(`Python extension present but its API failed: ${String(error)}`);
    return undefined;
  }
}

async function fromPythonExtension(resource?: vscode.Uri): Promise<string | undefined> {
  const environments = (await pythonExtensionApi())?.environments;
  if (!environments) {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    if (!active) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch (error) {
    log().warn(`Could not read the Python extension's interpreter: ${String(error)}`);
    return undefined;
  }
}

/** `traindoctor.interpreter`, else the Python extension's interpreter, else python3 on PATH. */
export async function resolveInterpreter(folder?: vscode.WorkspaceFolder): Promise<Interpreter> {
  folder ??= vscode.workspace.workspaceFolders?.[0];
  const configured = interpreterSetting(folder);
  if (configured) {
    return { path: configured, source: 'setting' };
  }
  const selected = await fromPythonExtension(folder?.uri);
  if (selected) {
    return { path: selected, source: 'python-extension' };
  }
  return { path: 'python3', source: 'path' };
}

/** Fires when the Python extension's selected interpreter changes (never, without it). */
export async function onPythonInterpreterChanged(listener: () => void): Promise<vscode.Disposable> {
  const environments = (await pythonExtensionApi())?.environments;
  return environments ? environments.onDidChangeActiveEnvironmentPath(listener) : new vscode.Disposable(() => undefined);
}

/** Runs `python -c "import traindoctor"` so that a missing package is a clear message, not a dead server. */
export function checkInterpreter(interpreter: Interpreter): Promise<InterpreterCheck> {
  const probe = 'import traindoctor, sys; sys.stdout.write(traindoctor.__version__)';
  return new Promise((resolve) => {
    execFile(interpreter.path, ['-c', probe], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (!error) {
        resolve({ ok: true, version: stdout.trim() });
      } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        resolve({ ok: false, reason: 'not-found', detail: `${interpreter.path} was not found` });
      } else if (/No module named ['"]?traindoctor/.test(stderr)) {
        resolve({ ok: false, reason: 'no-traindoctor', detail: stderr.trim().split('\n').pop() ?? '' });
      } else {
        resolve({ ok: false, reason: 'broken', detail: (stderr || error.message).trim().split('\n').pop() ?? '' });
      }
    });
  });
}

export function describe(interpreter: Interpreter): string {
  const origin = {
    setting: 'from the traindoctor.interpreter setting',
    'python-extension': "the Python extension's selected interpreter",
    path: 'python3 on PATH',
  }[interpreter.source];
  return `${interpreter.path} (${origin})`;
}
