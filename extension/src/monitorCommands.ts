import { execFile, spawn } from 'child_process';
import * as path from 'path';
import * as vscode from 'vscode';
import { DEBUG_TYPE } from './debugAdapter';
import { Diagnosis, isDiagnosis } from './diagnosis';
import { DiagnosisPanel } from './diagnosisPanel';
import { resolveInterpreter } from './interpreter';
import { log } from './logging';
import { RunChart } from './runChart';
import { TorchrunConfig, torchrunConfigsFor, watchTorchrun } from './torchrunWatch';

/** The last stdout line of `traindoctor overfit|repro --format json`. */
interface MonitorReport {
  command: string;
  verdict: string;
  summary?: string;
  findings: (Diagnosis & { step?: number | null })[];
  steps: number | null;
  run_dir: string | null;
}

const CHECK_TIMEOUT_MS = 15 * 60_000;

/** "Watch this run", "Overfit one batch" and "Check reproducibility". */
export function registerMonitorCommands(panel: DiagnosisPanel): vscode.Disposable[] {
  const chart = new RunChart();
  return [
    chart,
    vscode.commands.registerCommand('traindoctor.watchRun', (resource?: vscode.Uri) => watchRun(chart, panel, resource)),
    vscode.commands.registerCommand('traindoctor.overfitOneBatch', (resource?: vscode.Uri) =>
      runCheck('overfit', 'Overfitting one batch', panel, resource)),
    vscode.commands.registerCommand('traindoctor.checkReproducibility', (resource?: vscode.Uri) =>
      runCheck('repro', 'Running twice to compare', panel, resource)),
  ];
}

export async function currentScript(resource?: vscode.Uri): Promise<{ file: string; folder?: vscode.WorkspaceFolder } | undefined> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showErrorMessage('traindoctor does not run Python in an untrusted workspace.');
    return undefined;
  }
  const uri = resource instanceof vscode.Uri ? resource : vscode.window.activeTextEditor?.document.uri;
  if (!uri || uri.scheme !== 'file' || !uri.fsPath.endsWith('.py')) {
    void vscode.window.showErrorMessage('traindoctor: open a Python training script on disk first.');
    return undefined;
  }
  const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (document?.isDirty) {
    await document.save();
  }
  return { file: uri.fsPath, folder: vscode.workspace.getWorkspaceFolder(uri) };
}

/** Where the monitor's bootstrap lives for this interpreter (the one traindoctor is installed in). */
function monitorBootstrap(python: string): Promise<string> {
  const code = 'from traindoctor.monitor.runner import BOOTSTRAP; print(BOOTSTRAP)';
  return new Promise((resolve, reject) => {
    execFile(python, ['-c', code], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${python} cannot load traindoctor's monitor: ${(stderr || error.message).trim().split('\n').pop()}`));
      } else {
        resolve(stdout.trim());
      }
    });
  });
}

function runDirFor(file: string, folder?: vscode.WorkspaceFolder): string {
  const base = folder?.uri.fsPath ?? path.dirname(file);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return path.join(base, '.traindoctor', 'runs', `${stamp}-${path.basename(file, '.py')}-vscode`);
}

/** The torchrun launch configuration that runs `file` (the user picks when several do); null: dismissed. */
async function torchrunConfigFor(file: string, folder?: vscode.WorkspaceFolder): Promise<TorchrunConfig | undefined | null> {
  const configs = torchrunConfigsFor(file, folder);
  if (configs.length <= 1) {
    return configs[0];
  }
  const picked = await vscode.window.showQuickPick(configs.map((c) => ({ label: c.name, config: c })),
    { placeHolder: `Launch configurations that run ${path.basename(file)} under torchrun` });
  return picked ? picked.config : null;
}

/** traindoctor.watchRun: the file under the debugger with the step monitor; a NaN stops at its step.
 * A file that a torchrun launch configuration runs is watched as that job, every rank monitored. */
async function watchRun(chart: RunChart, panel: DiagnosisPanel, resource?: vscode.Uri): Promise<boolean> {
  const script = await currentScript(resource);
  if (!script) {
    return false;
  }
  const torchrun = await torchrunConfigFor(script.file, script.folder);
  if (torchrun !== undefined) {
    return torchrun !== null && (await watchTorchrun(torchrun, script.folder, script.file, panel)) !== undefined;
  }
  const interpreter = await resolveInterpreter(script.folder);
  let bootstrap: string;
  try {
    bootstrap = await monitorBootstrap(interpreter.path);
  } catch (error) {
    void vscode.window.showErrorMessage(`traindoctor: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
  const runDir = runDirFor(script.file, script.folder);
  const name = `traindoctor: watch ${path.basename(script.file)}`;
  log().info(`${name}: records in ${runDir}`);
  chart.follow(runDir, `traindoctor: ${path.basename(script.file)} (live)`);
  const ended = vscode.debug.onDidTerminateDebugSession((session) => {
    if (session.name === name) {
      chart.finish(runDir);
      ended.dispose();
    }
  });
  const started = await vscode.debug.startDebugging(script.folder, {
    type: DEBUG_TYPE,
    request: 'launch',
    name,
    program: bootstrap,
    args: [script.file],
    cwd: script.folder?.uri.fsPath ?? path.dirname(script.file),
    // stop_on "nan": the monitor raises at the first non-finite loss or gradient, before the
    // optimizer applies it, and the live diagnosis runs in the training frame.
    env: { TRAINDOCTOR_MONITOR: JSON.stringify({ run_dir: runDir, stop_on: 'nan' }) },
    console: 'integratedTerminal',
  });
  if (!started) {
    ended.dispose();
    chart.finish(runDir);
  }
  return started;
}

/** traindoctor.overfitOneBatch / checkReproducibility: the CLI command with progress, then its verdict. */
async function runCheck(command: 'overfit' | 'repro', title: string, panel: DiagnosisPanel, resource?: vscode.Uri): Promise<MonitorReport | undefined> {
  const script = await currentScript(resource);
  if (!script) {
    return undefined;
  }
  const interpreter = await resolveInterpreter(script.folder);
  const cwd = script.folder?.uri.fsPath ?? path.dirname(script.file);
  const args = ['-m', 'traindoctor', command, '--format', 'json', '--', interpreter.path, script.file];
  log().info(`${interpreter.path} ${args.join(' ')}`);
  const report = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `traindoctor: ${title} (${path.basename(script.file)})…`, cancellable: true },
    (_progress, token) => new Promise<MonitorReport | string>((resolve) => {
      const child = spawn(interpreter.path, args, { cwd, env: process.env });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => child.kill(), CHECK_TIMEOUT_MS);
      token.onCancellationRequested(() => child.kill());
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        log().info(String(chunk).trimEnd());
      });
      child.on('error', (error) => resolve(`cannot start ${interpreter.path}: ${error.message}`));
      child.on('close', (code) => {
        clearTimeout(timer);
        const last = stdout.trim().split('\n').pop() ?? '';
        try {
          resolve(JSON.parse(last) as MonitorReport);
        } catch {
          const reason = stderr.trim().split('\n').filter((l) => l.startsWith('traindoctor:')).pop();
          resolve(token.isCancellationRequested ? 'cancelled' : reason ?? `${command} exited with code ${code}`);
        }
      });
    }),
  );
  if (typeof report === 'string') {
    void vscode.window.showErrorMessage(`traindoctor ${command}: ${report.replace(/^traindoctor: /, '')}`);
    return undefined;
  }
  const message = `traindoctor ${command}: ${report.summary ?? report.verdict}`;
  const finding = report.findings.find(isDiagnosis);
  if (finding) {
    panel.show(finding, 'monitor', { findings: report.findings.filter(isDiagnosis) });
    void vscode.window.showWarningMessage(message);
  } else {
    void vscode.window.showInformationMessage(message);
  }
  return report;
}
