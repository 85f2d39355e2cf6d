import * as path from 'path';
import * as vscode from 'vscode';
import { resolveInterpreter } from './interpreter';
import { log } from './logging';
import { ServerManager } from './server';

export const DEBUG_TYPE = 'traindoctor';

/**
 * The `traindoctor` debug type runs debugpy's own adapter (`python -m debugpy.adapter`) with the
 * traindoctor interpreter, so diagnosis on failure works without Microsoft's Python extensions.
 */
export class DebugpyAdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    if (!vscode.workspace.isTrusted) {
      throw new Error('traindoctor does not run Python in an untrusted workspace.');
    }
    const interpreter = await resolveInterpreter(session.workspaceFolder);
    log().info(`Debug session "${session.name}": ${interpreter.path} -m debugpy.adapter`);
    return new vscode.DebugAdapterExecutable(interpreter.path, ['-m', 'debugpy.adapter']);
  }
}

/** Fills a launch configuration for debugpy: the current file, the interpreter, stop on uncaught exceptions. */
export class TraindoctorConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(private readonly server: ServerManager) {}

  resolveDebugConfiguration(_folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): vscode.DebugConfiguration | undefined {
    if (!config.type && !config.request && !config.name) {
      const document = vscode.window.activeTextEditor?.document;
      if (document?.languageId !== 'python') {
        void vscode.window.showErrorMessage('traindoctor: open a Python file to run it with diagnosis.');
        return undefined;
      }
      config = { type: DEBUG_TYPE, request: 'launch', name: 'traindoctor: current file', program: document.uri.fsPath };
    }
    if (config.request !== 'launch' || !config.program) {
      void vscode.window.showErrorMessage('traindoctor: a launch configuration needs "program".');
      return undefined;
    }
    return config;
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration> {
    const interpreter = await resolveInterpreter(folder);
    return {
      ...config,
      python: config.python ?? interpreter.path,
      cwd: config.cwd ?? folder?.uri.fsPath ?? path.dirname(config.program),
      console: config.console ?? 'integratedTerminal',
      // Library frames (torch's) stay in the Call Stack and the exception widget; ours go (rules).
      justMyCode: config.justMyCode ?? false,
      rules: withRules(config.rules, await this.debuggerRules()),
    };
  }

  /** debugpy `rules` that leave traindoctor's bootstrap and hooks and runpy out of the Call Stack and
   * the exception widget (the server's internal_frames.py); none when the server is not running. */
  private async debuggerRules(): Promise<unknown[]> {
    if (!(await this.server.ready())) {
      return [];
    }
    return this.server.executeCommand<unknown[]>('traindoctor.debuggerRules').catch((error: unknown) => {
      log().warn(`No debugger rules from the server: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    });
  }
}

/** The launch's own `rules`, then ours that it lacks (a re-run repeats a configuration that has them):
 * pydevd applies the first rule that matches, and keeps glob rules in this order. */
function withRules(own: unknown, ours: unknown[]): unknown[] {
  const rules = Array.isArray(own) ? own : [];
  const seen = new Set(rules.map((rule) => JSON.stringify(rule)));
  return [...rules, ...ours.filter((rule) => !seen.has(JSON.stringify(rule)))];
}

/**
 * The user's frame in front: debugpy marks a library frame `subtle`, but VS Code opens (and shows
 * the exception widget at) the first frame whose source is not `deemphasize`, so without
 * `justMyCode` it would open torch's file. The stackTrace answer is marked before VS Code reads it
 * (a tracker sees each message before the editor does); the frames all stay in the Call Stack.
 */
export class LibraryFramesTrackerFactory implements vscode.DebugAdapterTrackerFactory {
  createDebugAdapterTracker(): vscode.DebugAdapterTracker {
    return {
      onDidSendMessage: (message: { type?: string; command?: string; body?: { stackFrames?: DapFrame[] } }) => {
        if (message.type === 'response' && message.command === 'stackTrace') {
          for (const frame of message.body?.stackFrames ?? []) {
            if (frame.presentationHint === 'subtle' && frame.source) {
              frame.source.presentationHint = 'deemphasize';
            }
          }
        }
      },
    };
  }
}

interface DapFrame {
  presentationHint?: string;
  source?: { presentationHint?: string };
}

/** traindoctor.runWithDiagnosis: debug the current (or given) file under debugpy. */
export async function runWithDiagnosis(resource?: vscode.Uri): Promise<boolean> {
  const uri = resource instanceof vscode.Uri ? resource : vscode.window.activeTextEditor?.document.uri;
  if (!uri || uri.scheme !== 'file') {
    void vscode.window.showErrorMessage('traindoctor: open a Python file on disk to run it with diagnosis.');
    return false;
  }
  const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (document?.isDirty) {
    await document.save();
  }
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  return vscode.debug.startDebugging(folder, {
    type: DEBUG_TYPE,
    request: 'launch',
    name: `traindoctor: ${path.basename(uri.fsPath)}`,
    program: uri.fsPath,
    console: 'integratedTerminal',
  });
}
