"""A watch finding carries what the diagnosis panel links (issue 28, points 3 and 4): the
references of its kind and fixes, the line that explains it as `cause_location` when that is not
where the run stepped, and the location of each fix that edits code."""

from __future__ import annotations

import shutil
from pathlib import Path

from traindoctor.lint import lint_file
from traindoctor.model import Frame
from traindoctor.monitor.detectors import Hit
from traindoctor.monitor.findings import build, render_finding
from traindoctor.monitor.rules import load_monitor_rules

from monitor_helpers import SCRIPTS


def _leak_hit(script: Path) -> Hit:
    trn101 = [f for f in lint_file(script).findings if f.code == "TRN101"]
    assert trn101, "the script's accumulating line is a TRN101 finding"
    finding = trn101[0]
    facts = {"metric": "Process memory (RSS)", "per_step": "1.0 MiB", "start": "100 MiB", "end": "180 MiB",
             "steps": 77, "r2": "0.99", "first_step": 4, "last_step": 80, "clear_step": 23,
             "finding_code": finding.code, "finding_message": finding.message,
             "finding_place": f"{finding.path}:{finding.range.start.line + 1}", "finding_fix": "use .item()"}
    step_line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "optimizer.step()" in text)
    return Hit(4, facts, Frame(str(script), step_line, "<module>", "optimizer.step()", True), (finding,))


def test_a_leak_finding_links_the_accumulating_line_its_fix_and_references(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    shutil.copy(SCRIPTS / "leak_trn101.py", script)
    line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "total_val_loss += val_loss" in text)
    finding = build(load_monitor_rules()["memory-leak"], _leak_hit(script))
    data = finding.to_json()
    assert data["cause_location"]["path"] == str(script)
    assert (data["cause_location"]["line"], data["cause_location"]["code"]) == (line, "total_val_loss += val_loss")
    assert data["cause_location"]["why"].startswith("TRN101")
    edits = [f for f in data["fixes"] if "location" in f]
    assert [f["title"] for f in edits] == ["Apply the fix of TRN101"]
    assert edits[0]["location"] == {"path": str(script), "line": line}
    assert data["references"] and all(r["url"].startswith("https://") for r in data["references"])
    text = render_finding(finding)
    assert f"cause at {script}:{line}: total_val_loss += val_loss" in text
    assert data["references"][0]["url"] in text


def test_no_cause_location_when_the_finding_is_at_its_lint_line(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    shutil.copy(SCRIPTS / "leak_trn101.py", script)
    hit = _leak_hit(script)
    at_lint_line = Frame(str(script), hit.related[0].range.start.line + 1, "", None, True)
    finding = build(load_monitor_rules()["memory-leak"], Hit(hit.step, hit.facts, at_lint_line, hit.related))
    assert finding.diagnosis.cause_location is None


def test_the_graph_cutting_fix_names_the_detach_line(tmp_path: Path) -> None:
    """does-not-fit's `detach_site` fact is `path:line: code`; its fix's location is {path, line}."""
    script = tmp_path / "fit.py"
    script.write_text("import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).detach()\n")
    facts = {"never_grad": True, "detach_site": f"{script}:3: y = (x * 2).detach()", "steps": 200,
             "first": "1.0", "last": "1.0"}
    finding = build(load_monitor_rules()["does-not-fit"], Hit(200, facts, Frame(str(script), 3, "", None, True)))
    edit = next(f for f in finding.to_json()["fixes"] if f["title"] == "Compute the loss on outputs that keep their graph")
    assert edit["location"] == {"path": str(script), "line": 3}


UNSAFE_LOG = """import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(20):
    p = torch.relu(model(torch.randn(8, 4)))
    loss = -torch.log(p).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_nan_finding_names_the_unsafe_log_as_cause_and_where_to_guard(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(UNSAFE_LOG)
    related = tuple(f for f in lint_file(script).findings if f.code.startswith("TRN4"))
    assert related and related[0].code == "TRN401"
    log_line, backward = 7, 9
    hit = Hit(1, {"series": "loss", "step": 1, "value": "inf", "at_start": True},
              Frame(str(script), backward, "<module>", "loss.backward()", True), related)
    data = build(load_monitor_rules()["nan-onset"], hit).to_json()
    assert data["cause_location"]["line"] == log_line and "torch.log(p)" in data["cause_location"]["code"]
    guard = next(f for f in data["fixes"] if f["title"] == "Guard unsafe math")
    assert guard["location"] == {"path": str(script), "line": log_line}
    assert all("location" not in f for f in data["fixes"] if f is not guard)
