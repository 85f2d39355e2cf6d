// The Diagnosis JSON the server returns (traindoctor.diagnoseTraceback / traindoctor.diagnoseLive).

export interface DiagnosisFrame {
  path: string;
  line: number; // 1-based, as printed in the traceback
  function: string;
  code?: string | null;
  is_user?: boolean;
}

export interface RelatedFinding {
  code: string;
  message: string;
  path?: string;
  line?: number;
  [key: string]: unknown;
}

export interface Diagnosis {
  kind: string;
  mode: string;
  title: string;
  root_cause: string;
  evidence: string[];
  fixes: { title: string; detail?: string }[];
  confidence: number;
  location: DiagnosisFrame | null;
  frames: DiagnosisFrame[];
  exception: { type: string; message: string } | null;
  related_findings: RelatedFinding[];
  rank?: number | null;
  details?: Record<string, unknown>;
}

export function isDiagnosis(value: unknown): value is Diagnosis {
  const candidate = value as Partial<Diagnosis> | null;
  return !!candidate && typeof candidate === 'object' && typeof candidate.title === 'string' && typeof candidate.kind === 'string';
}
