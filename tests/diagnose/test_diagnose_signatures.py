"""The signature catalog (rules/signatures/*.yaml) loads, covers every kind, and rejects bad entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from traindoctor.diagnose.signatures import KINDS, SignatureError, load_signatures, load_signatures_from


def test_catalog_covers_every_kind() -> None:
    signatures = load_signatures()
    assert {s.kind for s in signatures} == set(KINDS)
    for signature in signatures:
        assert signature.titles, signature.id
        if signature.kind != "other":
            assert signature.fixes, f"{signature.id} offers no fix"


def _write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "other.yaml").write_text(
        "signatures:\n  - {id: other, kind: other, mode: crash, priority: 0, patterns: [], title: ['x']}\n")
    (tmp_path / "bad.yaml").write_text(body)
    return tmp_path


@pytest.mark.parametrize("body, message", [
    ("signatures:\n  - {id: a, kind: Not A Kind, mode: crash, patterns: ['x'], title: ['t']}\n", "must be lower-case words"),
    ("signatures:\n  - {id: a, kind: cuda-oom, mode: fast, patterns: ['x'], title: ['t']}\n", "unknown failure mode"),
    ("signatures:\n  - {id: a, kind: cuda-oom, mode: oom, patterns: ['('], title: ['t']}\n", "bad regular expression"),
    ("signatures:\n  - {id: a, kind: cuda-oom, mode: oom, patterns: ['x'], title: ['{k: v}']}\n", "placeholder"),
    ("signatures:\n  - {id: a, kind: cuda-oom, mode: oom, patterns: [], title: ['t']}\n", "at least one pattern"),
    ("signatures: 3\n", "signatures"),
    ("signatures: [\n", "invalid YAML"),
])
def test_bad_signature_files_are_rejected(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(SignatureError, match=message):
        load_signatures_from(_write(tmp_path, body))


def test_template_needs_every_placeholder() -> None:
    oom = next(s for s in load_signatures() if s.id == "cuda-oom")
    assert oom.title_for({}) == "CUDA out of memory"
    assert oom.title_for({"requested": "1 GiB"}) == "CUDA out of memory: 1 GiB requested"
