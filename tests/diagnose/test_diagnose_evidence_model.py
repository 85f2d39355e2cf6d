"""The evidence model (diagnose/evidence_model.py, issue 28): a paste whose message no signature
reads is diagnosed from the structure of its evidence, with ranked hypotheses, what supports each
and what would decide it; a paste without evidence of a kind stays `other`."""

from __future__ import annotations

import math

import yaml

from traindoctor.catalog import rules_dir
from traindoctor.diagnose import diagnose_text, evidence_model
from traindoctor.diagnose.normalize import normalize
from traindoctor.diagnose.parse import parse_chains

# Wordings no signature of rules/signatures/ knows (checked below: the model answers them).
UNKNOWN_OOM = ('Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    y = model(x)\n'
               "RuntimeError: the allocator could not find 3.50 GiB on GPU 0 (out of memory; 1.2 GiB free)\n")
CUT_IN_USER_CODE = ('Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    main()\n'
                    '  File "train.py", line 9, in main\n    run(cfg)\n')
USER_KEY_ERROR = ('Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    f()\n'
                  "KeyError: 'learning_rate_warmup_steps_total'\n")


def _observe(text: str) -> dict[str, str]:
    lines = normalize(text)
    return evidence_model.observe(lines, parse_chains(lines))


def test_an_unknown_wording_is_read_from_its_vocabulary() -> None:
    diagnosis = diagnose_text(UNKNOWN_OOM, correlate=False)
    assert diagnosis.details["signature"] == "evidence-model"
    assert diagnosis.kind == "cuda-oom"
    top = diagnosis.hypotheses[0]
    assert any("memory" in e for e in top.evidence), top.evidence  # what supports it
    assert top.check  # what would decide it
    assert "inferred" in diagnosis.title


def test_the_features_are_general_facts_of_the_paste() -> None:
    observed = _observe(UNKNOWN_OOM)
    assert {"type-runtime", "msg-out-of-memory", "msg-memory-sizes", "shape-traceback"} <= set(observed)
    assert "word:allocator" in observed


def test_probabilities_are_a_distribution_over_the_fitted_kinds() -> None:
    ranked = evidence_model.rank(_observe(UNKNOWN_OOM))
    assert math.isclose(sum(r.probability for r in ranked), 1.0, rel_tol=1e-6)
    assert [r.probability for r in ranked] == sorted((r.probability for r in ranked), reverse=True)


def test_a_complete_exception_in_user_code_stays_a_flat_other() -> None:
    diagnosis = diagnose_text(USER_KEY_ERROR, correlate=False)
    assert diagnosis.kind == "other"
    assert [h.kind for h in diagnosis.hypotheses] == ["other"]


def test_a_paste_cut_before_its_message_is_not_a_flat_other() -> None:
    """Nothing decides the kind, so it stays `other`, but the kinds the model ranks are listed,
    none likelier than `other`, each with the check that decides it."""
    diagnosis = diagnose_text(CUT_IN_USER_CODE, correlate=False)
    assert diagnosis.kind == "other"
    first, *alternatives = diagnosis.hypotheses
    assert alternatives
    assert all(h.kind != "other" and h.check and h.confidence <= first.confidence for h in alternatives)


def test_the_counts_are_fitted_on_dev_only() -> None:
    """bench/fit_evidence_model.py trains on bench/calibration.py's labelled set, which holds the
    wild corpus's dev half and never its test half (read here from the labels only)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "bench"))
    from calibration import labelled

    wild = yaml.safe_load((root / "tests" / "diagnose" / "data" / "wild" / "labels.yaml").read_text(encoding="utf-8"))
    test_ids = {f"wild/{entry['id']}" for entry in wild if entry["split"] == "test"}
    assert test_ids and not test_ids & {name for name, *_ in labelled()}


def test_every_fitted_feature_is_in_the_vocabulary() -> None:
    weights = yaml.safe_load((rules_dir() / "evidence" / "evidence_weights.yaml").read_text(encoding="utf-8"))
    known = set(evidence_model.feature_ids()) | set(evidence_model.shape_features())
    for kind, fitted in weights["kinds"].items():
        assert set(fitted["features"]) <= known, kind


def test_boilerplate_paths_and_urls_are_not_message_words() -> None:
    """What a library appends to every error of a family, and where files are, say nothing of the
    kind: their words are not counted (features.yaml settings.boilerplate); the message's own are."""
    text = ("RuntimeError: CUDA error: out of memory at /opt/conda/conda-bld/pytorch_1579/work/aten/src/THC/x.cpp:50\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
            "See https://pytorch.org/docs/stable/notes/cuda.html\n")
    words = {f[5:] for f in _observe(text) if f.startswith("word:")}
    assert {"out", "memory"} <= words
    assert not words & {"asynchronously", "stacktrace", "debugging", "conda", "bld", "aten", "thc", "docs", "stable"}
    assert "msg-assert-kernel" in _observe(text)  # the vocabulary still reads the note


LOAD_CUT = ('Traceback (most recent call last):\n  File "/home/u/infer.py", line 8, in <module>\n'
            '    model = torch.load("model.pth")\n'
            '  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 1025, in load\n'
            '    return _load(opened_zipfile, map_location, pickle_module, **pickle_load_args)\n'
            '  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 1446, in _load\n'
            '    result = unpickler.load()\n')


def test_the_innermost_library_frame_counts_as_its_module_and_function() -> None:
    tokens = {f for f in _observe(LOAD_CUT) if f.startswith(("word:lib=", "word:fn="))}
    assert tokens == {"word:lib=torch.serialization", "word:fn=_load"}  # the innermost one only
    assert not any(f.startswith(("word:lib=", "word:fn=")) for f in _observe(CUT_IN_USER_CODE))  # user code: none


def test_a_word_a_small_kind_never_showed_does_not_favour_it() -> None:
    """With add-alpha smoothing a kind of 2 items gave every word it never showed a rate near 1/4,
    far above a rare word's overall rate, so a wordy message read as that kind; drawn towards the
    overall rate (shrink), an unseen word counts a little against every kind that never showed it."""
    weights = {"alpha": 0.5, "shrink": 4.0, "temperature": 1.0, "word_scale": 1.0,
               "word_df": {"rare": 1, "common": 60},
               "kinds": {"big": {"n": 98, "features": {}, "words": {"rare": 1, "common": 50}},
                         "small": {"n": 2, "features": {}, "words": {"common": 2}}}}
    prior = {r.kind: r.probability for r in evidence_model.rank({}, weights)}
    with_rare = {r.kind: r.probability for r in evidence_model.rank({"word:rare": "rare"}, weights)}
    assert with_rare["small"] < prior["small"]
    add_alpha = dict(weights, shrink=0.0)
    before = {r.kind: r.probability for r in evidence_model.rank({}, add_alpha)}
    after = {r.kind: r.probability for r in evidence_model.rank({"word:rare": "rare"}, add_alpha)}
    assert after["small"] > before["small"]  # what add-alpha did


# A log with no traceback and no error line whose one warning names the failure in a wording no
# signature or clue knows, and its quiet twin: a warning that names no failure.
STALLED_RANK_LOG = ("epoch 3 iter 200 loss 0.51\n"
                    "WARNING: rank 2 did not answer the all_reduce within 1800 s (NCCL watchdog timeout), waiting\n")
SCHEDULER_WARNING_LOG = (
    "epoch 1 loss 0.912\n"
    "/opt/venv/lib/python3.10/site-packages/torch/optim/lr_scheduler.py:139: UserWarning: Detected call of "
    "`lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the "
    "opposite order: `optimizer.step()` before `lr_scheduler.step()`.\n"
    "epoch 2 loss 0.873\n")


def test_a_warning_that_names_a_failure_is_the_message_of_a_log_without_one() -> None:
    observed = _observe(STALLED_RANK_LOG)
    assert {"shape-log-only", "shape-warning-line", "msg-distributed", "msg-timeout"} <= set(observed)
    assert evidence_model.failure_shown(observed)
    diagnosis = diagnose_text(STALLED_RANK_LOG, correlate=False)
    assert diagnosis.details["signature"] == "evidence-model"
    assert diagnosis.kind == "distributed", diagnosis.kind


def test_a_warning_that_names_no_failure_stays_other() -> None:
    observed = _observe(SCHEDULER_WARNING_LOG)
    assert "shape-warning-line" not in observed and not evidence_model.failure_shown(observed)
    assert diagnose_text(SCHEDULER_WARNING_LOG, correlate=False).kind == "other"


def test_a_cut_paste_is_not_held_to_the_message_it_cannot_show() -> None:
    """Kind `a` always shows a message feature, kind `b` never does; both show the backward frame
    equally often. A traceback cut before its message says nothing about that feature, so the two
    are as likely as their priors; a whole traceback without the feature does count against `a`."""
    weights = {"alpha": 0.5, "shrink": 4.0, "temperature": 1.0, "word_scale": 0.5, "word_df": {},
               "kinds": {"a": {"n": 10, "features": {"msg-out-of-memory": 10, "frame-autograd": 5,
                                                     "shape-traceback": 10, "shape-cut": 5}},
                         "b": {"n": 10, "features": {"frame-autograd": 5, "shape-traceback": 10, "shape-cut": 5}}}}
    cut = {"shape-traceback": "", "shape-cut": "", "frame-autograd": ""}
    probabilities = {r.kind: r.probability for r in evidence_model.rank(cut, weights)}
    assert math.isclose(probabilities["a"], probabilities["b"], rel_tol=1e-9)
    whole = {"shape-traceback": "", "frame-autograd": "", "type-runtime": ""}
    probabilities = {r.kind: r.probability for r in evidence_model.rank(whole, weights)}
    assert probabilities["b"] > 2 * probabilities["a"]
