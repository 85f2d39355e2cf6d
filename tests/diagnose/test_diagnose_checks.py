"""Every ranked hypothesis says the one thing that decides it (issue 28): a partial-evidence
clue's own check, else its kind's (rules/evidence/checks.yaml); the CLI text shows them."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.partial import kind_check, kind_title
from traindoctor.diagnose.render import render_text
from traindoctor.diagnose.signatures import KINDS

OOM = ('Traceback (most recent call last):\n  File "train.py", line 88, in <module>\n    out = model(x)\n'
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "23.65 GiB of which 1.02 GiB is free.\n")
CUBLAS = ('Traceback (most recent call last):\n  File "setup.py", line 12, in <module>\n    y = a @ b\n'
          "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa)`\n")


def test_every_kind_has_a_check() -> None:
    assert [kind for kind in KINDS if not kind_check(kind)] == []


def test_every_kind_has_a_title_for_inferred_diagnoses() -> None:
    assert [kind for kind in KINDS if kind_title(kind) == kind] == []


def test_an_inferred_diagnosis_is_titled_by_its_kind_not_by_a_cause_it_did_not_see() -> None:
    # a Windows DataLoader start cut before its message: a pickling failure under spawn, and nothing
    # in it says CUDA was used in a forked worker (the kind's first signature)
    text = ('Traceback (most recent call last):\n  File "C:\\proj\\train.py", line 130, in main\n'
            "    for batch in loader:\n"
            '  File "C:\\py\\lib\\site-packages\\torch\\utils\\data\\dataloader.py", line 441, in __iter__\n'
            "    return self._get_iterator()\n"
            '  File "C:\\py\\lib\\multiprocessing\\context.py", line 327, in _Popen\n'
            "    return Popen(process_obj)\n")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "multiprocessing-pickle"
    assert diagnosis.title.startswith(kind_title("multiprocessing-pickle"))
    assert "fork" not in diagnosis.title
    # and its fixes are the clue's (pickling, the entry-point guard), not the forked-CUDA signature's
    assert diagnosis.fixes and not any("CUDA" in f.title or "spawn" in f.title for f in diagnosis.fixes)


def test_every_hypothesis_carries_a_check() -> None:
    for text in (OOM, CUBLAS):
        diagnosis = diagnose_text(text, correlate=False)
        assert all(h.check for h in diagnosis.hypotheses), [(h.kind, h.check) for h in diagnosis.hypotheses]
    cublas = diagnose_text(CUBLAS, correlate=False)
    assert [h.kind for h in cublas.hypotheses][:2] == ["device-side-assert", "cuda-env"]
    assert cublas.hypotheses[1].check == kind_check("cuda-env")


def test_the_text_says_how_to_decide() -> None:
    text = render_text(diagnose_text(CUBLAS, correlate=False))
    assert "To decide: " + kind_check("device-side-assert")[:30] in text.replace("\n", " ")
    assert "to decide: python -c" in text


def test_an_inferred_kind_gets_fixes_for_any_of_its_causes() -> None:
    # CUDA initialisation cut before its message: nothing says a checkpoint was being loaded, so the
    # torch.load fix of the kind's first signature (map_location) is not offered
    text = ('Traceback (most recent call last):\n  File "train.py", line 20, in <module>\n    model.cuda()\n'
            '  File "/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 298, in _lazy_init\n'
            "    torch._C._cuda_init()\n")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "cuda-env", [(h.kind, h.confidence) for h in diagnosis.hypotheses]
    assert diagnosis.fixes and not any("map_location" in f.detail for f in diagnosis.fixes)
