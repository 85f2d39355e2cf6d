import { spawn } from 'child_process';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { Diagnosis, isDiagnosis } from './diagnosis';
import { DiagnosisPanel } from './diagnosisPanel';
import { resolveInterpreter } from './interpreter';
import { log } from './logging';

/** The last stdout line of `traindoctor watch --format json` on a torchrun job. */
interface WatchReport {
  verdict: string;
  summary?: string;
  findings: (Diagnosis & { step?: number | null })[];
  run_dir: string | null;
}

/** A launch configuration (launch.json) that runs a job under torchrun. */
export interface TorchrunConfig {
  name: string;
  module?: string;
  program?: string;
  args?: string[] | string;
  cwd?: string;
  env?: Record<string, string | null>;
  python?: string;
}

const WATCH_TIMEOUT_MS = 60 * 60_000;

/** `module: torch.distributed.run` (or `accelerate.commands.launch`), or a `program` that is torchrun. */
export function isTorchrunConfig(config: Partial<TorchrunConfig> & { request?: string }): boolean {
  if (config.request !== undefined && config.request !== 'launch') {
    return false;
  }
  if (config.module === 'torch.distributed.run' || config.module === 'accelerate.commands.launch') {
    return true;
  }
  return typeof config.program === 'string' && /^torchrun(\.exe)?$/.test(path.basename(config.program));
}

/** The torchrun launch configurations of `folder` that run `script` (all of them when `script` is undefined). */
export function torchrunConfigsFor(script: string | undefined, folder?: vscode.WorkspaceFolder): TorchrunConfig[] {
  const configs = vscode.workspace.getConfiguration('launch', folder?.uri).get<TorchrunConfig[]>('configurations') ?? [];
  const resolved = (value: string) => {
    try {
      return substitute(value, folder, script);
    } catch {
      return undefined; // a variable we do not resolve: not a configuration we can run
    }
  };
  return configs.filter((c) => c && typeof c === 'object' && typeof c.name === 'string').filter((c) => {
    const program = typeof c.program === 'string' ? resolved(c.program) : undefined;
    if (!isTorchrunConfig({ ...c, program })) {
      return false;
    }
    if (!script) {
      return true;
    }
    const base = resolved(c.cwd ?? '') || folder?.uri.fsPath || path.dirname(script);
    return argsOf(c).map(resolved).some((a) => a?.endsWith('.py') && path.resolve(base, a) === script);
  });
}

function argsOf(config: TorchrunConfig): string[] {
  if (Array.isArray(config.args)) {
    return config.args.map(String);
  }
  return typeof config.args === 'string' ? config.args.split(/\s+/).filter(Boolean) : [];
}

class UnresolvedVariable extends Error {}

/** The launch.json variables a torchrun configuration uses; any other `${...}` is refused, not guessed. */
function substitute(value: string, folder: vscode.WorkspaceFolder | undefined, file: string | undefined): string {
  const root = folder?.uri.fsPath ?? (file ? path.dirname(file) : process.cwd());
  return value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name.startsWith('env:')) {
      return process.env[name.slice(4)] ?? '';
    }
    const known: Record<string, string | undefined> = {
      workspaceFolder: root,
      workspaceRoot: root,
      workspaceFolderBasename: path.basename(root),
      file,
      fileBasename: file && path.basename(file),
      fileBasenameNoExtension: file && path.basename(file, path.extname(file)),
      fileDirname: file && path.dirname(file),
      relativeFile: file && path.relative(root, file),
      cwd: root,
      userHome: os.homedir(),
      pathSeparator: path.sep,
    };
    const resolved = known[name];
    if (resolved === undefined) {
      throw new UnresolvedVariable(`cannot resolve ${whole} in the launch configuration`);
    }
    return resolved;
  });
}

/**
 * "Watch this run" on a torchrun launch configuration: `traindoctor watch --format json -- <the job>`
 * (every rank monitored, a hang stopped), then its findings, each with its `rank`, listed in the panel.
 */
export async function watchTorchrun(config: TorchrunConfig, folder: vscode.WorkspaceFolder | undefined, script: string | undefined,
  panel: DiagnosisPanel): Promise<WatchReport | undefined> {
  const interpreter = await resolveInterpreter(folder);
  let job: string[];
  let cwd: string;
  let env: NodeJS.ProcessEnv;
  try {
    const python = config.python ? substitute(config.python, folder, script) : interpreter.path;
    const launcher = config.module ? [python, '-m', config.module] : [substitute(config.program!, folder, script)];
    job = [...launcher, ...argsOf(config).map((a) => substitute(a, folder, script))];
    cwd = config.cwd ? substitute(config.cwd, folder, script) : folder?.uri.fsPath ?? path.dirname(script ?? '.');
    env = { ...process.env };
    for (const [key, value] of Object.entries(config.env ?? {})) {
      if (value === null) {
        delete env[key];
      } else {
        env[key] = substitute(String(value), folder, script);
      }
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`traindoctor watch: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  const args = ['-m', 'traindoctor', 'watch', '--format', 'json', '--', ...job];
  log().info(`"${config.name}": ${interpreter.path} ${args.join(' ')} (in ${cwd})`);
  const report = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `traindoctor: watching "${config.name}" on every rank…`, cancellable: true },
    (_progress, token) => new Promise<WatchReport | string>((resolve) => {
      // Its own process group is not needed: `watch` supervises the job and stops every rank on SIGTERM/SIGINT.
      const child = spawn(interpreter.path, args, { cwd, env });
      let stdout = '';
      let stderr = '';
      const stop = () => child.kill('SIGINT'); // watch's Ctrl-C: it stops the ranks in order, leaving none
      const timer = setTimeout(stop, WATCH_TIMEOUT_MS);
      token.onCancellationRequested(stop);
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
        log().info(String(chunk).trimEnd());
      });
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        log().info(String(chunk).trimEnd());
      });
      child.on('error', (error) => resolve(`cannot start ${interpreter.path}: ${error.message}`));
      child.on('close', (code) => {
        clearTimeout(timer);
        const last = stdout.trim().split('\n').pop() ?? '';
        try {
          resolve(JSON.parse(last) as WatchReport);
        } catch {
          const reason = stderr.trim().split('\n').filter((l) => l.startsWith('traindoctor:')).pop();
          resolve(token.isCancellationRequested ? 'cancelled' : reason ?? `watch exited with code ${code}`);
        }
      });
    }),
  );
  if (report === 'cancelled') {
    void vscode.window.showInformationMessage(`traindoctor watch: "${config.name}" stopped.`);
    return undefined;
  }
  if (typeof report === 'string') {
    void vscode.window.showErrorMessage(`traindoctor watch: ${report.replace(/^traindoctor: /, '')}`);
    return undefined;
  }
  const findings = report.findings.filter(isDiagnosis);
  const message = `traindoctor watch: ${report.summary ?? report.verdict}`;
  if (findings.length) {
    panel.show(findings[0], 'monitor', { findings });
    void vscode.window.showWarningMessage(message);
  } else {
    void vscode.window.showInformationMessage(message);
  }
  return report;
}
