"""The VS Code e2e tests expect these findings in their workspace: check them here, where a change
to a rule shows in seconds, instead of minutes later in code-server."""
from __future__ import annotations

from pathlib import Path

from traindoctor.lint import lint_source

WORKSPACE = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures" / "workspace"


def line_of(source: str, text: str) -> int:
    return next(number for number, line in enumerate(source.splitlines(), 1) if text in line)


def test_train_four_bugs_has_the_four_findings_the_e2e_test_expects():
    path = WORKSPACE / "train_four_bugs.py"
    source = path.read_text()
    expected = {
        ("TRN101", line_of(source, "total_loss += loss")),
        ("TRN201", line_of(source, "loader = DataLoader(")),
        ("TRN301", line_of(source, "loss = F.cross_entropy(")),
        ("TRN401", line_of(source, "torch.sqrt(")),
    }
    result = lint_source(source, str(path))
    assert result.error is None, result.error
    found = {(f.code, f.range.start.line + 1) for f in result.findings}
    assert expected <= found, f"missing {sorted(expected - found)}; found {sorted(found)}"
