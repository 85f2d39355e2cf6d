"""`watch` sees retained graphs (issue 28, point 7): memory that grows step over step at constant
work is reported with its rate, the step the growth became clear and the line keeping the graph
(TRN101); warm-up growth that levels off and a cache the program frees stay quiet."""

from __future__ import annotations

import pytest

from traindoctor.monitor.detectors import _clear_step, _still_growing
from traindoctor.monitor.findings import detect
from traindoctor.monitor.series import RunData, Series

from monitor_helpers import monitored

MB = 1_000_000


def _run(values: list[float]) -> RunData:
    steps = tuple(range(1, len(values) + 1))
    return RunData("watch", {"rss": Series("rss", steps, tuple(values))})


def _leak(run: RunData) -> list:
    return [f for f in detect(run, "watch", only=("memory-leak",)) if f.diagnosis.kind == "memory-leak"]


def test_linear_growth_is_a_leak_with_rate_and_clear_step() -> None:
    values = [200 * MB + 2 * MB * i for i in range(80)]
    found = _leak(_run(values))
    assert found
    facts = found[0].diagnosis.details["facts"]
    assert facts["per_step"].startswith("1.9") or "MiB" in facts["per_step"]
    assert facts["clear_step"] < 40
    assert any("clear by step" in e for e in found[0].diagnosis.evidence)


def test_warmup_that_levels_off_is_quiet() -> None:
    """Grows 2 MB a step for 55 steps, then flat: a straight enough line overall (r² 0.93, which
    the fit alone would call a leak), but the last half barely grows."""
    values = [200 * MB + 2 * MB * min(i, 55) for i in range(80)]
    assert not _still_growing(list(enumerate(values))[3:], 0.5)
    assert not _leak(_run(values))


def test_a_cache_the_program_frees_is_quiet() -> None:
    values = [200 * MB + 3 * MB * i for i in range(56)] + [200 * MB] * 24
    assert not _leak(_run(values))


def test_clear_step_is_where_the_line_first_holds() -> None:
    points = [(i, 100 * MB + (3 * MB * (i - 10) if i > 10 else 0)) for i in range(60)]
    assert 20 <= _clear_step(points, {"min_steps": 20, "min_r2": 0.9, "min_growth_bytes": 2e7}) <= 45


@pytest.mark.slow
@pytest.mark.parametrize("script", ["warmup_levels.py", "cache_freed.py"])
def test_real_healthy_memory_patterns_are_quiet(script, tmp_path) -> None:
    outcome = monitored("watch", script, cwd=tmp_path)
    assert outcome.payload["exit_code"] == 0, outcome.stderr
    assert "memory-leak" not in [f["kind"] for f in outcome.payload["findings"]]


@pytest.mark.slow
def test_real_retained_graph_names_rate_step_and_line(tmp_path) -> None:
    outcome = monitored("watch", "leak_trn101.py", cwd=tmp_path)
    leak = outcome.finding("memory-leak")
    facts = leak["details"]["facts"]
    assert facts["finding_code"] == "TRN101" and leak["location"]["line"] == 16
    assert facts["per_step"] and facts["first_step"] <= facts["clear_step"] <= facts["last_step"]
