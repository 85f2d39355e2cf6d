"""What goes into a `curves --plot` PNG: units, axis names, series without a finite value,
finding labels (monitor/plot.py `layout`), and that the reader takes only the input's data."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from traindoctor.monitor.curves import parse_content
from traindoctor.monitor.plot import PlotError, layout, plot
from traindoctor.monitor.series import RunData, Series

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass
class _Diagnosis:
    kind: str


@dataclass
class _Finding:
    step: int
    diagnosis: _Diagnosis


def _run(*series: Series) -> RunData:
    return RunData("curves", {s.name: s for s in series})


def test_memory_is_in_binary_units_on_an_axis_from_zero():
    steps = tuple(range(1, 61))
    rss = Series("rss", steps, tuple(317_542_400.0 + 10_000 * s for s in steps))  # 302.8 MiB, +0.6 MiB
    [panel] = layout(_run(rss), []).panels
    assert panel.label == "memory (MiB)" and panel.from_zero
    assert 302.8 < panel.lines[0].values[0] < 302.9 and 303.3 < panel.lines[0].values[-1] < 303.5
    small = Series("rss", (1, 2), (2048.0, 4096.0))
    assert layout(_run(small), []).panels[0].label == "memory (KiB)"
    large = Series("cuda_allocated", (1, 2), (3 * 1024 ** 3, 5 * 1024 ** 3))
    assert layout(_run(large), []).panels[0].label == "memory (GiB)"


def test_long_runs_count_steps_in_k_and_m():
    assert layout(_run(Series("loss", (1, 50_000), (1.0, 0.5))), []).x_unit == (1e3, "k")
    assert layout(_run(Series("loss", (1, 2_000_000), (1.0, 0.5))), []).x_unit == (1e6, "M")
    assert layout(_run(Series("loss", (1, 900), (1.0, 0.5))), []).x_unit == (1, "")


def test_the_x_axis_is_named_after_the_sources_own_column():
    by_epoch = parse_content("epoch,train_loss,val_loss\n1,0.9,1.0\n2,0.7,0.8\n3,0.5,0.9\n", ".csv")
    assert layout(RunData("curves", by_epoch), []).x_label == "epoch"
    assert by_epoch["val_loss"].steps == (1, 2, 3)
    by_step = parse_content("global_step,loss\n100,0.9\n200,0.7\n", ".csv")
    assert layout(RunData("curves", by_step), []).x_label == "global_step"
    unnumbered = parse_content("loss: 0.9\nloss: 0.7\n")
    assert layout(RunData("curves", unnumbered), []).x_label == "point"
    assert parse_content('{"epoch": 3, "loss": 0.5}\n', ".jsonl")["loss"].x_name == "epoch"


def test_a_series_with_no_finite_value_gets_a_note_not_an_axis():
    loss = Series("loss", (1, 2, 3), (1.0, 0.8, 0.7))
    nan_norm = Series("grad_norm", (1, 2, 3), (math.nan, math.nan, math.inf))
    drawn = layout(_run(loss, nan_norm), [])
    assert [p.label for p in drawn.panels] == ["loss"]
    assert drawn.notes == ["grad_norm: no finite value (3 points, all NaN or inf): not plotted"]
    with pytest.raises(PlotError, match="nothing to plot: loss: no finite value"):
        plot(_run(Series("loss", (1, 2), (math.nan, math.nan))), [], "unused.png")


def test_finding_labels_never_share_a_place():
    loss = Series("loss", tuple(range(1, 1001)), tuple(1.0 for _ in range(1000)))
    findings = [_Finding(s, _Diagnosis(k)) for s, k in ((10, "nan-onset"), (12, "loss-spike"), (14, "divergence"),
                                                         (16, "plateau"), (900, "lr-schedule"))]
    markers = layout(_run(loss), findings).markers
    assert [(m.step, m.row) for m in markers] == [(10, 0), (12, 1), (14, 2), (900, 0)]
    assert markers[2].text == "divergence, plateau"  # no fourth row: it joins the last label
    for a in markers:  # two labels in one row are at least 12 % of the x range apart
        for b in markers:
            if a is not b and a.row == b.row:
                assert abs(a.step - b.step) >= 0.12 * 999


def test_traindoctors_own_report_in_a_log_is_not_read_as_data():
    log = ("step 1 loss 0.9 lr 0.1\nstep 2 loss 0.8 lr 0.1\n"
           "traindoctor: watched 2 optimizer steps: 1 problem(s): nan-onset at step 4\n"
           "step 4: loss became inf at step 4; first non-finite gradient in Sequential.0.weight\n"
           "  - learning rate: 5\n  - loss before it: 1: 7.1, 2: 8.29e+04\n"
           "step 3 loss 0.7 lr 0.1\n")
    series = parse_content(log)
    assert set(series) == {"loss", "lr"}
    assert series["lr"].values == (0.1, 0.1, 0.1) and series["loss"].steps == (1, 2, 3)


def test_the_png_is_drawn(tmp_path):
    steps = tuple(range(1, 20_001, 100))
    run = _run(Series("loss", steps, tuple(1 / (1 + s / 1000) for s in steps)),
               Series("rss", steps, tuple(3e8 + s * 10 for s in steps)),
               Series("grad_norm", steps, tuple(math.nan for _ in steps)))
    out = plot(run, [_Finding(5001, _Diagnosis("loss-spike"))], tmp_path / "curves.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
