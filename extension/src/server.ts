import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { checkInterpreter, describe, Interpreter, resolveInterpreter } from './interpreter';
import { log } from './logging';
import { SECTION, serverSettings } from './settings';

export type ServerState =
  | { kind: 'stopped' }
  | { kind: 'untrusted' }
  | { kind: 'starting'; interpreter: Interpreter }
  | { kind: 'running'; interpreter: Interpreter; version: string }
  | { kind: 'failed'; message: string };

/** Starts `<interpreter> -m traindoctor serve` over stdio and keeps one language client alive. */
export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private current: ServerState = { kind: 'stopped' };
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  // Serialises start/stop/restart: a settings change during a start must not spawn two servers.
  private queue: Promise<void> = Promise.resolve();
  private probeExpressionsCache: Promise<ProbeExpression[]> | undefined;

  get state(): ServerState {
    return this.current;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /** workspace/executeCommand on the server; a clear error when it is not running. */
  async executeCommand<T>(command: string, args: unknown[] = []): Promise<T> {
    await this.queue;
    const client = this.client;
    if (!client || this.current.kind !== 'running') {
      throw new Error(this.notRunningMessage());
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
  }

  probeExpressions(): Promise<ProbeExpression[]> {
    this.probeExpressionsCache ??= this.executeCommand<ProbeExpression[]>('traindoctor.probeExpressions').catch((error) => {
      this.probeExpressionsCache = undefined;
      throw error;
    });
    return this.probeExpressionsCache;
  }

  isRunning(): boolean {
    return this.current.kind === 'running';
  }

  /** True once a pending start has finished and the server runs (commands can arrive during activation). */
  async ready(): Promise<boolean> {
    await this.queue;
    return this.isRunning();
  }

  notRunningMessage(): string {
    switch (this.current.kind) {
      case 'untrusted':
        return 'traindoctor is disabled in untrusted workspaces: it would run Python from this workspace.';
      case 'failed':
        return `traindoctor server is not running: ${this.current.message}`;
      case 'starting':
        return 'traindoctor server is still starting.';
      default:
        return 'traindoctor server is not running (traindoctor: Restart server).';
    }
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const run = this.queue.then(step);
    // The queue itself never rejects, so one failed step does not block the next.
    this.queue = run.catch((error) => log().error(`Server lifecycle: ${error instanceof Error ? error.message : String(error)}`));
    return run;
  }

  private setState(state: ServerState): void {
    this.current = state;
    this.stateEmitter.fire(state);
  }

  private async doStart(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      // Never spawn a process for an untrusted workspace: its settings could name any executable.
      this.setState({ kind: 'untrusted' });
      return;
    }
    const interpreter = await resolveInterpreter();
    this.setState({ kind: 'starting', interpreter });
    log().info(`Interpreter: ${describe(interpreter)}`);
    const check = await checkInterpreter(interpreter);
    if (!check.ok) {
      this.setState({ kind: 'failed', message: check.detail });
      void reportBadInterpreter(interpreter, check.reason, check.detail);
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    const serverOptions: ServerOptions = {
      command: interpreter.path,
      args: ['-m', 'traindoctor', 'serve'],
      options: { cwd: folder?.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        // Python cells of Jupyter notebooks (synced through LSP notebook document sync).
        { notebook: 'jupyter-notebook', language: 'python' },
      ],
      synchronize: { configurationSection: SECTION },
      initializationOptions: { settings: serverSettings(folder) },
      outputChannel: log(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      diagnosticCollectionName: 'traindoctor',
    };
    const client = new LanguageClient('traindoctor', 'traindoctor', serverOptions, clientOptions);
    skipServerCommandRegistration(client);
    // The client restarts a crashed server a few times by itself; mirror that in the status bar.
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return;
      }
      if (event.newState === State.Stopped && this.current.kind === 'running') {
        this.setState({ kind: 'failed', message: 'the server stopped; see traindoctor: Show logs' });
      } else if (event.newState === State.Running && this.current.kind === 'failed') {
        this.setState({ kind: 'running', interpreter, version: check.version });
      }
    });
    this.client = client;
    try {
      await client.start();
      this.setState({ kind: 'running', interpreter, version: check.version });
      log().info(`traindoctor ${check.version} server running`);
    } catch (error) {
      this.client = undefined;
      const message = error instanceof Error ? error.message : String(error);
      this.setState({ kind: 'failed', message });
      log().error(`Server failed to start: ${message}`);
      void vscode.window.showErrorMessage(`traindoctor server failed to start: ${message}`, 'Show logs').then((choice) => {
        if (choice) {
          log().show();
        }
      });
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.probeExpressionsCache = undefined;
    if (client) {
      try {
        await client.stop(5_000);
      } catch (error) {
        log().warn(`Server did not stop cleanly: ${String(error)}`);
      }
    }
    if (this.current.kind !== 'untrusted') {
      this.setState({ kind: 'stopped' });
    }
  }
}

export interface ProbeExpression {
  name: string;
  expression: string;
}

/**
 * The client would register every command the server advertises as a VS Code command, but the
 * extension contributes the user-facing ones itself (with editor/terminal UI around them) and
 * sends executeCommand requests directly; registering twice would fail the start.
 */
function skipServerCommandRegistration(client: LanguageClient): void {
  const feature = client.getFeature(ExecuteCommandRequest.method as never) as unknown as
    | { initialize: (...args: unknown[]) => void }
    | undefined;
  if (feature) {
    feature.initialize = () => undefined;
  }
}

async function reportBadInterpreter(interpreter: Interpreter, reason: string, detail: string): Promise<void> {
  const openSettings = 'Set interpreter';
  const copyInstall = 'Copy install command';
  // traindoctor is not on PyPI: it installs from a clone of its repository (README, "Install").
  const install = `${interpreter.path} -m pip install /path/to/traindoctor`;
  const message =
    reason === 'no-traindoctor'
      ? `traindoctor is not installed in ${describe(interpreter)}. Install it from a clone of the traindoctor ` +
        `repository: \`${install}\`, or set traindoctor.interpreter to a Python that has it.`
      : reason === 'not-found'
        ? `traindoctor could not find a Python interpreter: ${detail}. Set traindoctor.interpreter to a Python that has traindoctor installed.`
        : `traindoctor could not use ${describe(interpreter)}: ${detail}`;
  log().error(message);
  const choice = await vscode.window.showErrorMessage(message, openSettings, copyInstall);
  if (choice === openSettings) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'traindoctor.interpreter');
  } else if (choice === copyInstall) {
    await vscode.env.clipboard.writeText(install);
  }
}
