import * as vscode from 'vscode';
import { AnomalyRerun } from './anomalyRerun';
import { registerBudgetCommand } from './budgetPanel';
import { DEBUG_TYPE, DebugpyAdapterFactory, LibraryFramesTrackerFactory, runWithDiagnosis, TraindoctorConfigurationProvider } from './debugAdapter';
import { LiveDiagnosisTrackerFactory } from './debugTracker';
import { DiagnosisPanel } from './diagnosisPanel';
import { onPythonInterpreterChanged } from './interpreter';
import { LiveDecorations } from './liveDecorations';
import { registerMonitorCommands } from './monitorCommands';
import { createLogger, log } from './logging';
import { ServerManager } from './server';
import { affectsInterpreter } from './settings';
import { StatusBar } from './statusBar';
import { diagnoseTraceback } from './tracebackCommand';

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(createLogger());
  server = new ServerManager();
  const panel = new DiagnosisPanel();
  const decorations = new LiveDecorations();
  const anomalyRerun = new AnomalyRerun(server);
  context.subscriptions.push(server, panel, decorations, new StatusBar(server));

  const requireServer = <T>(run: (s: ServerManager) => Promise<T>) => async (): Promise<T | undefined> => {
    if (!(await server!.ready())) {
      void vscode.window.showErrorMessage(server!.notRunningMessage());
      return undefined;
    }
    try {
      return await run(server!);
    } catch (error) {
      void vscode.window.showErrorMessage(`traindoctor: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('traindoctor.diagnoseTraceback', (target?: unknown) =>
      diagnoseTraceback(server!, panel, target),
    ),
    vscode.commands.registerCommand('traindoctor.runWithDiagnosis', (resource?: vscode.Uri) => {
      if (!vscode.workspace.isTrusted) {
        void vscode.window.showErrorMessage(server!.notRunningMessage());
        return false;
      }
      return runWithDiagnosis(resource);
    }),
    vscode.commands.registerCommand('traindoctor.rerunWithAnomalyDetection', () => anomalyRerun.rerun()),
    ...registerMonitorCommands(panel),
    ...registerBudgetCommand(),
    vscode.commands.registerCommand('traindoctor.lintWorkspace', requireServer((s) => s.executeCommand('traindoctor.lintWorkspace'))),
    vscode.commands.registerCommand('traindoctor.clearDiagnosis', async () => {
      decorations.clear();
      anomalyRerun.clear();
      panel.close();
      if (await server!.ready()) {
        await server!.executeCommand('traindoctor.clearDiagnosis');
      }
    }),
    vscode.commands.registerCommand('traindoctor.restartServer', () => server!.restart()),
    vscode.commands.registerCommand('traindoctor.showLogs', () => log().show()),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new DebugpyAdapterFactory()),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new TraindoctorConfigurationProvider(server)),
    vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, new LibraryFramesTrackerFactory()),
    vscode.debug.registerDebugAdapterTrackerFactory('*', new LiveDiagnosisTrackerFactory(server, panel, decorations, anomalyRerun)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // Rule settings reach the running server through didChangeConfiguration; a new interpreter needs a new process.
      if (affectsInterpreter(event)) {
        log().info('traindoctor.interpreter changed: restarting the server');
        void server!.restart();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server!.restart()),
    await onPythonInterpreterChanged(() => {
      if (!vscode.workspace.getConfiguration('traindoctor').get<string>('interpreter')) {
        log().info("The Python extension's interpreter changed: restarting the server");
        void server!.restart();
      }
    }),
  );

  // Start in the background: activation must not wait for Python to import torch-free traindoctor.
  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
