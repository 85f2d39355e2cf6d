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
  // location: the line the fix edits, when it edits code (the shape of cause_location).
  fixes: { title: string; detail?: string; location?: { path: string; line: number } | null }[];
  confidence: number;
  location: DiagnosisFrame | null;
  frames: DiagnosisFrame[];
  exception: { type: string; message: string } | null;
  related_findings: RelatedFinding[];
  rank?: number | null;
  details?: Record<string, unknown>;
  // Where the mechanism is stated (rules/references/): "for" is "kind" or a fix's title.
  references?: { title: string; url: string; states?: string; for?: string }[];
  // The line that causes the failure when it is not the failing frame.
  cause_location?: { path: string; line: number; code?: string; why?: string } | null;
}

export function isDiagnosis(value: unknown): value is Diagnosis {
  const candidate = value as Partial<Diagnosis> | null;
  return !!candidate && typeof candidate === 'object' && typeof candidate.title === 'string' && typeof candidate.kind === 'string';
}
