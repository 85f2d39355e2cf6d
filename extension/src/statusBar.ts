import * as vscode from 'vscode';
import { ServerManager, ServerState } from './server';

/** Server state and the number of traindoctor findings, bottom right; click for the logs. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('traindoctor.status', vscode.StatusBarAlignment.Right, 100);
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly server: ServerManager) {
    this.item.name = 'traindoctor';
    this.item.command = 'traindoctor.showLogs';
    this.subscriptions.push(
      server.onDidChangeState(() => this.render()),
      vscode.languages.onDidChangeDiagnostics(() => this.render()),
    );
    this.render();
    this.item.show();
  }

  private render(): void {
    const state: ServerState = this.server.state;
    this.item.backgroundColor = undefined;
    switch (state.kind) {
      case 'starting':
        this.item.text = '$(loading~spin) traindoctor';
        this.item.tooltip = `Starting the traindoctor server with ${state.interpreter.path}`;
        break;
      case 'running': {
        const count = countFindings();
        this.item.text = count ? `$(warning) traindoctor ${count}` : '$(check) traindoctor';
        this.item.tooltip = `traindoctor ${state.version} (${state.interpreter.path}): ${count} finding(s). Click for logs.`;
        break;
      }
      case 'failed':
        this.item.text = '$(error) traindoctor';
        this.item.tooltip = `traindoctor is not running: ${state.message}`;
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        break;
      case 'untrusted':
        this.item.text = '$(shield) traindoctor';
        this.item.tooltip = 'traindoctor is disabled in untrusted workspaces';
        break;
      default:
        this.item.text = '$(circle-slash) traindoctor';
        this.item.tooltip = 'traindoctor server stopped';
    }
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    this.item.dispose();
  }
}

function countFindings(): number {
  let count = 0;
  for (const [, diagnostics] of vscode.languages.getDiagnostics()) {
    count += diagnostics.filter((d) => d.source === 'traindoctor').length;
  }
  return count;
}
