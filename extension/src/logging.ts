import * as vscode from 'vscode';

// One LogOutputChannel for the extension and the language client: users see
// the server's stderr, the LSP trace and our own decisions in one place.
let channel: vscode.LogOutputChannel | undefined;

export function createLogger(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel('traindoctor', { log: true });
  return channel;
}

export function log(): vscode.LogOutputChannel {
  return createLogger();
}
