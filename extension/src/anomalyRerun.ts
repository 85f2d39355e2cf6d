import * as vscode from 'vscode';
import { Diagnosis } from './diagnosis';
import { log } from './logging';
import { ServerManager } from './server';
import { SECTION } from './settings';

/** The launch configuration key that names the run folder of a launch with anomaly detection. */
export const ANOMALY_DIR_KEY = 'traindoctorAnomalyDir';
const OFFERED_CONTEXT = 'traindoctor.anomalyRerunOffered';

export type AnomalyRerunSetting = 'offer' | 'auto' | 'off';

export function anomalyRerunSetting(): AnomalyRerunSetting {
  const value = vscode.workspace.getConfiguration(SECTION).get<string>('anomalyRerun', 'offer');
  return value === 'auto' || value === 'off' ? value : 'offer';
}

/** What the server says about a live diagnosis (details.anomaly_rerun, see lsp/commands.py diagnose_live). */
export function anomalyRerunOffer(diagnosis: Diagnosis): { offered: boolean; check_nan?: boolean } | undefined {
  const offer = diagnosis.details?.anomaly_rerun as { offered?: boolean; check_nan?: boolean } | undefined;
  return offer?.offered ? { offered: true, check_nan: offer.check_nan } : undefined;
}

/** The run folder of a session launched with anomaly detection (a subprocess's: its parent's). */
export function anomalyDirOf(session: vscode.DebugSession | undefined): string | undefined {
  for (let s = session; s; s = s.parentSession) {
    const dir = s.configuration[ANOMALY_DIR_KEY];
    if (typeof dir === 'string' && dir) {
      return dir;
    }
  }
  return undefined;
}

interface Offer {
  session: vscode.DebugSession;
  checkNan: boolean;
}

/**
 * "Re-run with anomaly detection": torch names the autograd node of an in-place error (or of a NaN
 * from backward), not the forward line that created it; autograd's anomaly mode records that line.
 * The server gives the environment that switches it on (traindoctor.anomalyEnvironment); this
 * relaunches the same debug configuration with it merged in.
 */
export class AnomalyRerun {
  private offer: Offer | undefined;

  constructor(private readonly server: ServerManager) {}

  /** A live diagnosis of `session` wants the forward line: remember the launch to repeat. */
  offerFor(session: vscode.DebugSession, checkNan: boolean): void {
    // A subprocess's session (a DataLoader worker, a rank) is an attach: its root launch is re-run.
    while (session.parentSession) {
      session = session.parentSession;
    }
    this.offer = { session, checkNan };
    void vscode.commands.executeCommand('setContext', OFFERED_CONTEXT, true);
    if (anomalyRerunSetting() === 'auto') {
      log().info(`traindoctor.anomalyRerun is "auto": re-running "${session.name}" with anomaly detection`);
      void this.rerun();
    }
  }

  async rerun(): Promise<boolean> {
    const offer = this.offer;
    if (!offer) {
      void vscode.window.showInformationMessage(
        'traindoctor: no failure to re-run. Anomaly detection is offered after an in-place or backward NaN error in a debug session.');
      return false;
    }
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showErrorMessage('traindoctor does not run Python in an untrusted workspace.');
      return false;
    }
    if (!(await this.server.ready())) {
      void vscode.window.showErrorMessage(this.server.notRunningMessage());
      return false;
    }
    const { session, checkNan } = offer;
    // The configuration as launched (variables substituted), without VS Code's private keys.
    const configuration: vscode.DebugConfiguration = { ...session.configuration };
    for (const key of Object.keys(configuration).filter((k) => k.startsWith('__'))) {
      delete configuration[key];
    }
    const env = (configuration.env ?? {}) as Record<string, string>;
    let launch: { directory: string; env: Record<string, string> };
    try {
      launch = await this.server.executeCommand('traindoctor.anomalyEnvironment', [
        { env, pythonArgs: configuration.pythonArgs ?? [], checkNan },
      ]);
    } catch (error) {
      void vscode.window.showErrorMessage(`traindoctor: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
    this.clear();
    // The first run is paused on its exception: end it before its re-run starts.
    await Promise.resolve(vscode.debug.stopDebugging(session)).catch(() => undefined);
    const started = await vscode.debug.startDebugging(session.workspaceFolder, {
      ...configuration,
      name: `${configuration.name} (anomaly detection)`,
      env: { ...env, ...launch.env },
      [ANOMALY_DIR_KEY]: launch.directory,
    });
    if (!started) {
      await this.release(launch.directory);
    }
    return started;
  }

  /** A session launched with anomaly detection ended: the server removes its run folder. */
  async release(directory: string): Promise<void> {
    if (await this.server.ready()) {
      await this.server.executeCommand('traindoctor.releaseAnomalyEnvironment', [{ directory }]).catch((error: unknown) =>
        log().warn(`Could not remove ${directory}: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
  }

  clear(): void {
    this.offer = undefined;
    void vscode.commands.executeCommand('setContext', OFFERED_CONTEXT, false);
  }
}
