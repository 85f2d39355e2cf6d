"""`watch` sees retained graphs (issue 28, point 7): memory that grows step over step at constant
work is reported with its rate, the step the growth became clear and the line keeping the graph
(TRN101); warm-up growth that levels off and a cache the program frees stay quiet."""

from __future__ import annotations

import sys

import pytest
import torch

from traindoctor.monitor.bootstrap import _load_hooks
from traindoctor.monitor.detectors import _clear_step, _still_growing
from traindoctor.monitor.findings import detect
from traindoctor.monitor.series import RunData, Series

from monitor_helpers import monitored

hooks = _load_hooks()

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
    # The rate is RSS's when the memory evidence holds, else the graph's nodes per step: in one
    # fresh-clone CI run at load (never alone) the RSS evidence did not hold and the graph alone
    # reported the leak, which is what this test is about.
    rate = facts.get("per_step") or facts.get("graph_per_step")
    assert rate and facts["graph_origin"] <= facts["clear_step"] <= facts["graph_last_step"]
    assert facts["graph_name"] == "total_val_loss" and facts["graph_nodes"] > 0


# --- the autograd graphs a training loop keeps (hooks.retained_graphs on real torch graphs) ----------


def _loop(steps: int, every: int, keep_sum: bool) -> list[tuple[int, list]]:
    """A training loop that samples its own frame every `every` steps, as the monitor does at the
    optimizer step; with `keep_sum`, `running = running + loss` keeps every step's graph."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    running = 0
    samples, last = [], 0
    for step in range(1, steps + 1):
        out = model(torch.randn(4, 8))
        loss = out.pow(2).mean()
        loss.backward()
        if step % every == 0:
            samples.append((step, hooks.retained_graphs(sys._getframe(), step, id(loss), step - last)))
            last = step
        if keep_sum:
            running = running + loss
    return samples


def test_a_sum_kept_with_its_graph_holds_every_step_and_its_node_count_grows() -> None:
    samples = _loop(30, 1, keep_sum=True)
    held = [(step, graphs) for step, graphs in samples if graphs]
    assert [g[0][0] for _, g in held] == ["running"] * len(held) and held[0][0] <= 3
    origins = {g[0][1] for _, g in held}
    assert len(origins) == 1  # one chain, from the first step it was seen
    nodes = [g[0][2] for _, g in held]
    assert nodes == sorted(nodes) and nodes[-1] > nodes[0]


def test_the_chain_is_followed_between_sparse_samples() -> None:
    held = [graphs for _, graphs in _loop(200, 40, keep_sum=True) if graphs]
    assert len(held) >= 3 and len({g[0][1] for g in held}) == 1


def test_a_healthy_loop_reports_no_graph() -> None:
    assert all(not graphs for _, graphs in _loop(30, 1, keep_sum=False))


def _graph_run(samples: list[tuple[int, list]]) -> RunData:
    records = [{"step": step, "rss": 100 * MB, "graphs": graphs} for step, graphs in samples]
    meta = {"graph_site": {"path": __file__, "first_line": 1, "last_line": 10}}
    return RunData("watch", {}, records, meta)


def test_a_chain_held_to_the_end_is_a_leak_with_its_rate_and_clear_step() -> None:
    run = _graph_run([(s, [["running", 2, 8 * (s - 1)]]) for s in range(2, 60)])
    found = _leak(run)
    assert found
    facts = found[0].diagnosis.details["facts"]
    assert facts["graph_name"] == "running" and facts["graph_per_step"] == "8"
    assert facts["clear_step"] == 12 and found[0].diagnosis.title.startswith("`running` keeps the autograd graph")


def test_a_chain_the_program_frees_is_quiet() -> None:
    """A sum kept with its graph but reset every 20 steps (an epoch's total): a cache it frees."""
    samples = [(s, [["epoch_sum", s - (s - 1) % 20, 8 * ((s - 1) % 20)]] if (s - 1) % 20 else [])
               for s in range(1, 81)]
    assert not _leak(_graph_run(samples))


def test_a_graph_that_stops_growing_or_is_gone_at_the_end_is_quiet() -> None:
    constant = [(s, [["baseline", 2, 40]]) for s in range(2, 60)]
    assert not _leak(_graph_run(constant))
    gone = [(s, [["running", 2, 8 * s]] if s < 40 else []) for s in range(2, 60)]
    assert not _leak(_graph_run(gone))


@pytest.mark.slow
def test_real_running_sum_in_a_function_is_a_retained_graph(tmp_path) -> None:
    """The case of issue 28: `running = running + loss` for 300 steps (the loss backpropagated)."""
    outcome = monitored("watch", "running_sum.py", cwd=tmp_path)
    leak = outcome.finding("memory-leak")
    facts = leak["details"]["facts"]
    assert facts["graph_name"] == "running" and facts["finding_code"] == "TRN101"
    assert leak["location"]["line"] == 17 and leak["location"]["code"] == "running = running + loss"
    assert facts["graph_steps"] >= 100 and float(facts["graph_per_step"]) >= 1
    assert facts["graph_origin"] <= facts["clear_step"] <= facts["graph_last_step"]


@pytest.mark.slow
def test_real_sum_freed_every_epoch_is_quiet(tmp_path) -> None:
    outcome = monitored("watch", "epoch_sum_freed.py", cwd=tmp_path)
    assert outcome.payload["exit_code"] == 0, outcome.stderr
    assert "memory-leak" not in [f["kind"] for f in outcome.payload["findings"]]


def test_a_list_of_outputs_with_history_is_followed_and_an_emptied_one_starts_again() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    outputs: list = []
    lists: dict = {}
    seen = []
    for step in range(1, 31):
        outputs.append(model(torch.randn(3, 4)))
        if step == 20:
            outputs.clear()
            outputs.append(model(torch.randn(3, 4)))
        seen.append(hooks.retained_graphs(sys._getframe(), step, 0, 1, lists))
    held = [g for g in seen if any(e[0] == "outputs" for e in g)]
    entries = [next(e for e in g if e[0] == "outputs") for g in held]
    assert entries[0] == ["outputs", 1, 2, "list"] and entries[17] == ["outputs", 1, 19, "list"]
    assert entries[-1] == ["outputs", 20, 11, "list"]  # emptied at step 20: held again from there
    detached = [model(torch.randn(3, 4)).detach()]  # read from the frame: no history, not reported
    assert detached[0].grad_fn is None
    assert not any(e[0] == "detached" for e in hooks.retained_graphs(sys._getframe(), 31, 0, 1, lists))


@pytest.mark.slow
def test_real_list_of_outputs_with_graphs_is_a_leak_and_an_emptied_one_is_quiet(tmp_path) -> None:
    outcome = monitored("watch", "outputs_list.py", cwd=tmp_path)
    leak = outcome.finding("memory-leak")
    facts = leak["details"]["facts"]
    assert facts["graph_list"] and facts["graph_name"] == "outputs" and facts["finding_code"] == "TRN101"
    assert leak["title"].startswith("The list `outputs` keeps") and leak["location"]["line"] == 16
    quiet = monitored("watch", "outputs_list_freed.py", cwd=tmp_path)
    assert quiet.payload["exit_code"] == 0, quiet.stderr
    assert "memory-leak" not in [f["kind"] for f in quiet.payload["findings"]]
