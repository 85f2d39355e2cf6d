"""Message formats across PyTorch versions and tools (IPython, rich, torchrun, logging, Windows)."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import DATA, load_yaml

EXPECTED = load_yaml(DATA / "formats" / "expected.yaml")


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_format(case: dict) -> None:
    raw = (DATA / "formats" / case["file"]).read_bytes()
    diagnosis = diagnose_text(raw, correlate=False)
    assert diagnosis.kind == case["kind"], diagnosis.title
    if case["frame"] is None:
        assert diagnosis.location is None
    else:
        assert diagnosis.location is not None
        assert (diagnosis.location.path, diagnosis.location.line) == (case["frame"]["path"], case["frame"]["line"])
        assert diagnosis.location.is_user
    fixes = " ".join(f"{f.title} {f.detail}" for f in diagnosis.fixes)
    assert case["fix"] in fixes, fixes
    if "root_cause" in case:
        assert case["root_cause"] in diagnosis.root_cause, diagnosis.root_cause
    if "rank" in case:
        assert diagnosis.rank == case["rank"]


def test_every_kind_is_covered_by_a_test_log() -> None:
    from traindoctor.diagnose.signatures import KINDS  # the traceback kinds (curve kinds: tests/monitor)

    labels = load_yaml(DATA / "dev" / "labels.yaml")
    kinds = load_yaml(DATA / "kinds" / "expected.yaml")
    covered = {c["kind"] for c in EXPECTED} | {l["class"] for l in labels} | {c["kind"] for c in kinds}
    real = {"graph-reuse", "no-grad", "dataloader-worker", "distributed", "nan-inf"}  # test_real_scripts
    assert set(KINDS) - {"other"} <= covered | real


def test_frames_flag_user_code() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "windows_paths.log").read_text(), correlate=False)
    flags = [(f.path.rsplit("\\", 1)[-1], f.is_user) for f in diagnosis.frames]
    assert flags == [("train.py", True), ("module.py", False), ("functional.py", False)]


def test_rich_frames_keep_code_and_wrapped_headers() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "rich_box.log").read_text(), correlate=False)
    assert [(f.function, f.code) for f in diagnosis.frames] == [
        ("<module>", "loss = F.mse_loss(out, y)"),
        ("mse_loss", "expanded_input, expanded_target = torch.broadcast_tensors(input,"),
    ]


def test_ipython_frames_in_cells() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "ipython9_color_real.log").read_text(), correlate=False)
    assert [(f.path, f.line, f.function, f.is_user) for f in diagnosis.frames] == [
        ("Cell In[1]", 4, "<cell>", True),
        ("Cell In[1]", 3, "train_step", True),
        ("/home/u/nb/helper.py", 3, "linear", True),
    ]


def test_bare_killed_reads_progress() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "killed.log").read_text(), correlate=False)
    assert diagnosis.details["progress"] == {"epoch": 0, "step": 3000, "step_total": 9375}


@pytest.mark.parametrize("text", ["", "   \n\n", "hello world\nnothing to see", "\x00\x01\x02", "Traceback"])
def test_nothing_recognised_is_other(text: str) -> None:
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "other"
    assert diagnosis.confidence <= 0.1
    assert diagnosis.location is None


def test_unrecognised_exception_is_reported_as_is() -> None:
    text = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    f()\nKeyError: \'lr\'\n'
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "other"
    assert diagnosis.title == "KeyError: 'lr'"
    assert (diagnosis.location.path, diagnosis.location.line) == ("app.py", 3)
    empty = diagnose_text("", correlate=False)
    # an exception is more evidence than nothing (raw); calibrated, neither names a labelled kind
    assert empty.details["raw_confidences"][0] < diagnosis.details["raw_confidences"][0]
    assert empty.confidence <= diagnosis.confidence <= 0.4


def test_a_traceback_cut_inside_the_type_keeps_its_kind_at_lower_confidence() -> None:
    cut = diagnose_text((DATA / "formats" / "cut_mid_line.log").read_text(), correlate=False)
    whole = diagnose_text((DATA / "formats" / "cut_mid_line.log").read_text().replace(
        "torch.OutOfMemoryErr", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
        correlate=False)
    assert cut.kind == whole.kind == "cuda-oom"
    assert cut.details["raw_confidences"][0] < whole.details["raw_confidences"][0]
