"""Every kind and every fix cites where its mechanism is stated (issue 28, point 3), in JSON
(`references`) and the CLI text, with URLs for the run's torch version when the log shows it."""

from __future__ import annotations

import re

import yaml

from traindoctor.catalog import rules_dir
from traindoctor.diagnose import KINDS, diagnose_text, render_text
from traindoctor.diagnose.references import fix_references, kinds_with_references, references_for
from traindoctor.diagnose.signatures import load_signatures

_OOM = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    loss = model(x)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "15.77 GiB of which 1.10 GiB is free.\n")


def _monitor_kinds() -> set[str]:
    return {str((yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("kind"))
            for p in (rules_dir() / "monitors").glob("*.yaml")}


def test_every_kind_has_a_reference() -> None:
    missing = (set(KINDS) | _monitor_kinds() | {s.kind for s in load_signatures()}) - kinds_with_references()
    assert not missing, missing


def test_every_reference_is_complete() -> None:
    for kind in kinds_with_references():
        for ref in references_for(kind):
            assert ref["title"] and ref["states"], (kind, ref)
            assert re.match(r"^https://[\w.-]+/\S*$", ref["url"]), (kind, ref["url"])
            assert "{" not in ref["url"], ref["url"]


def test_every_fix_resolves_to_a_reference() -> None:
    """A fix cites its own page when one states it, else its kind's."""
    own = 0
    total = 0
    for signature in load_signatures():
        for fix in signature.fixes:
            title = fix.text
            refs = references_for(signature.kind, [title])
            assert refs, (signature.id, title)
            own += bool(fix_references(title))
            total += 1
    assert total and own >= 30, (own, total)


def test_known_settings_cite_their_own_page() -> None:
    for title, page in (("Only if you really need two passes over one graph", "torch.Tensor.backward"),
                        ("Let DDP find them (slower)", "DistributedDataParallel.html"),
                        ("Load with weights_only=False (only for files you trust)", "torch.load"),
                        ("Enable device-side assertion details", "asynchronous-execution"),
                        ("Confirm with num_workers=0", "data.html")):
        assert any(page in r["url"] for r in fix_references(title)), title


def test_urls_follow_the_runs_torch_version() -> None:
    assert "/docs/2.1/" in references_for("cuda-oom", (), "2.1.2+cu121")[0]["url"]
    assert "/docs/stable/" in references_for("cuda-oom")[0]["url"]
    assert "/blob/v2.3.1/" in next(r["url"] for r in references_for("dataloader-worker", (), "2.3.1") if "github" in r["url"])
    versioned = diagnose_text("PyTorch version: 2.2.0\n" + _OOM, correlate=False)
    assert any("/docs/2.2/" in r["url"] for r in versioned.references)


def test_references_in_json_and_text() -> None:
    diagnosis = diagnose_text(_OOM, correlate=False)
    assert diagnosis.kind == "cuda-oom"
    data = diagnosis.to_json()
    assert data["references"] and data["references"][0]["for"] == "kind"
    assert "memory-management" in data["references"][0]["url"]
    text = render_text(diagnosis)
    assert "References:" in text and data["references"][0]["url"] in text


def test_other_and_curve_diagnoses_have_references() -> None:
    assert diagnose_text("hello world", correlate=False).references
    from traindoctor.monitor.curves import diagnose_curves

    log = "\n".join(f"step {i} loss {v}" for i, v in enumerate([2.3, 2.1, 1.9, 1.8, 5.0, 40.0, 900.0, "nan", "nan"]))
    diagnosis = diagnose_curves(log, diagnose_text(log, correlate=False))
    assert diagnosis.references, diagnosis.kind
