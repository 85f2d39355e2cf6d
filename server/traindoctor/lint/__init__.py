"""Static lint: source text -> Findings (libcst, one traversal for all rules).

Public API used by the CLI, the language server and the diagnosis correlator:

- `lint_source(source, path, config, cache)` -> LintResult
- `lint_file(path, config)` -> LintResult (reads the file; bad input -> `error`)
- `LintCache`: keep one per open document; unchanged top-level blocks are not
  re-parsed or re-checked.
- `apply_fixes(source, findings)` -> new source; `fix_source(...)` iterates to a fixpoint.
- `suppression_edit(source, finding)` -> the TextEdit adding `# traindoctor: ignore[CODE]`.
"""

from .api import LintCache, LintResult, apply_fixes, fix_source, lint_file, lint_source, suppression_edit

__all__ = [
    "LintCache",
    "LintResult",
    "apply_fixes",
    "fix_source",
    "lint_file",
    "lint_source",
    "suppression_edit",
]
