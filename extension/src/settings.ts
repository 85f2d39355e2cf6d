import * as path from 'path';
import * as vscode from 'vscode';

export const SECTION = 'traindoctor';

/** The settings the server reads through workspace/configuration (section "traindoctor"). */
export interface ServerSettings {
  select: string[];
  ignore: string[];
  severity: Record<string, string>;
  lintOnChange: boolean;
  indexWorkspace: boolean;
}

export function serverSettings(scope?: vscode.ConfigurationScope): ServerSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return {
    select: config.get<string[]>('select', []),
    ignore: config.get<string[]>('ignore', []),
    severity: config.get<Record<string, string>>('severity', {}),
    lintOnChange: config.get<boolean>('lintOnChange', true),
    indexWorkspace: config.get<boolean>('indexWorkspace', true),
  };
}

/** `traindoctor.interpreter`, with ${workspaceFolder} and ~ expanded; undefined when unset. */
export function interpreterSetting(folder?: vscode.WorkspaceFolder): string | undefined {
  const raw = vscode.workspace.getConfiguration(SECTION, folder?.uri).get<string>('interpreter', '').trim();
  if (!raw) {
    return undefined;
  }
  const root = folder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  let value = raw.replace(/\$\{workspaceFolder\}/g, root);
  if (value.startsWith('~/')) {
    value = path.join(process.env.HOME ?? '', value.slice(2));
  }
  // A relative path with a separator is relative to the workspace; a bare name is looked up on PATH.
  if (!path.isAbsolute(value) && value.includes('/') && root) {
    value = path.join(root, value);
  }
  return value;
}

export function affectsInterpreter(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}
