import * as vscode from 'vscode';
import { ANOMALY_DIR_KEY, anomalyDirOf, AnomalyRerun, anomalyRerunOffer, anomalyRerunSetting } from './anomalyRerun';
import { isDiagnosis } from './diagnosis';
import { DiagnosisPanel } from './diagnosisPanel';
import { LiveDecorations } from './liveDecorations';
import { log } from './logging';
import { ServerManager } from './server';

const TRACKED_TYPES = new Set(['debugpy', 'python', 'traindoctor']);
// A probe that hangs (a deadlocked worker, a huge repr) must not hold the diagnosis hostage.
const PROBE_TIMEOUT_MS = 10_000;

interface DapFrame {
  id: number;
  name: string;
  line: number;
  source?: { path?: string; name?: string };
  presentationHint?: string;
}

/** Watches debugpy sessions; when one stops on an exception, diagnoses it while the user is paused. */
export class LiveDiagnosisTrackerFactory implements vscode.DebugAdapterTrackerFactory {
  constructor(
    private readonly server: ServerManager,
    private readonly panel: DiagnosisPanel,
    private readonly decorations: LiveDecorations,
    private readonly anomaly: AnomalyRerun,
  ) {}

  createDebugAdapterTracker(session: vscode.DebugSession): vscode.DebugAdapterTracker | undefined {
    if (!TRACKED_TYPES.has(session.type)) {
      return undefined;
    }
    let pid: number | undefined; // the debuggee's, from the DAP `process` event
    const exited = () => {
      this.decorations.clear(session.id);
      const own = session.configuration[ANOMALY_DIR_KEY];
      if (typeof own === 'string' && own) {
        void this.anomaly.release(own);
      }
    };
    return {
      onDidSendMessage: (message: { type?: string; event?: string; body?: { reason?: string; threadId?: number; systemProcessId?: number } }) => {
        if (message.type === 'event' && message.event === 'process' && typeof message.body?.systemProcessId === 'number') {
          pid = message.body.systemProcessId;
        }
        if (message.type === 'event' && message.event === 'stopped' && message.body?.reason === 'exception') {
          void this.diagnose(session, message.body.threadId, pid).catch((error) =>
            log().error(`Live diagnosis failed: ${error instanceof Error ? error.message : String(error)}`),
          );
        }
      },
      onWillStopSession: () => this.decorations.clear(session.id),
      onExit: exited,
    };
  }

  private async diagnose(session: vscode.DebugSession, threadId: number | undefined, pid: number | undefined): Promise<void> {
    if (!(await this.server.ready())) {
      log().warn(`Stopped on an exception in "${session.name}" but ${this.server.notRunningMessage()}`);
      return;
    }
    if (threadId === undefined) {
      threadId = (await session.customRequest('threads')).threads?.[0]?.id;
    }
    const started = Date.now();
    const exceptionInfo = await Promise.resolve(session.customRequest('exceptionInfo', { threadId })).catch((error: unknown) => ({ error: String(error) }));
    const stackTrace = await session.customRequest('stackTrace', { threadId, startFrame: 0, levels: 200 });
    // Which frame is the user's is the engine's decision (one definition, diagnose/user_frame.py).
    const chosen = await this.server
      .executeCommand<{ frameId?: number | null; currentFrameId?: number | null }>('traindoctor.userFrame', [{ stackTrace }])
      .catch((error: unknown) => {
        log().warn(`No user frame from the server: ${error instanceof Error ? error.message : String(error)}`);
        return undefined;
      });
    const frames: DapFrame[] = stackTrace.stackFrames ?? [];
    const frame = frames.find((f) => f.id === chosen?.frameId) ?? (chosen === undefined ? frames[0] : undefined);
    const probes: Record<string, unknown> = {};
    if (frame) {
      // Probes enrich the diagnosis; without them the exception and the stack still diagnose.
      const expressions = await this.server.probeExpressions().catch((error: unknown) => {
        log().warn(`No probe expressions from the server: ${error instanceof Error ? error.message : String(error)}`);
        return [];
      });
      // The traceback is read where debugpy paused, the frame that holds the exception.
      const paused = frames.find((f) => f.id === chosen?.currentFrameId) ?? frame;
      for (const probe of expressions) {
        probes[probe.name] = await evaluate(session, probe.expression, probe.name === 'traceback' ? paused.id : frame.id);
      }
    }
    // Launched with anomaly detection: the server reads what it recorded in this process (the forward trace).
    const anomalyDir = anomalyDirOf(session);
    const result = await this.server.executeCommand<unknown>('traindoctor.diagnoseLive', [
      { exceptionInfo, stackTrace, probes, pid, anomalyDir },
    ]);
    log().info(`Live diagnosis of "${session.name}" in ${Date.now() - started} ms`);
    if (!isDiagnosis(result)) {
      log().warn('The server returned no diagnosis for this exception.');
      return;
    }
    const fallback = frame?.source?.path ? { file: frame.source.path, line: frame.line - 1 } : undefined;
    this.decorations.show(result, fallback, session.id);
    const offer = anomalyDir ? undefined : anomalyRerunOffer(result);
    const rerun = offer !== undefined && anomalyRerunSetting() !== 'off';
    this.panel.show(result, 'live', { anomalyRerun: rerun, anomalyDetection: anomalyDir !== undefined });
    if (rerun) {
      this.anomaly.offerFor(session, offer.check_nan === true);
    }
  }
}

async function evaluate(session: vscode.DebugSession, expression: string, frameId: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ error: string }>((resolve) => {
    timer = setTimeout(() => resolve({ error: `timed out after ${PROBE_TIMEOUT_MS} ms` }), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      session.customRequest('evaluate', { expression, frameId, context: 'watch' }),
      timeout,
    ]);
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** The innermost frame in the user's own code: in a workspace folder, not in site-packages or the stdlib. */
