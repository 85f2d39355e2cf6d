"""Rich boxed tracebacks as they reach an issue thread (issue 28): a narrow box wraps a frame
header inside its path or its line number, a paste's encoding turns every box character into
U+FFFD, a fragment loses the bar before its first header, a Windows console draws square
corners and `>` for ❱, and a launcher prefixes every relayed line. Each still yields its frames.
The pastes are written here in the shapes seen in real threads (the wild corpus stays unseen)."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.normalize import normalize
from traindoctor.diagnose.parse import parse_chains


def _frames(text: str) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.function) for chain in parse_chains(normalize(text)) for f in chain.frames]


PATH_WRAPPED_BEFORE_LINE = """\
│ ❱  88 │   │   batch = next(loader_iter)                                   │
│                                                                              │
│ c:\\users\\me\\envs\\sd\\lib\\site-packages\\torch\\utils\\data\\dataloader.py │
│ :441 in __iter__                                                             │
│                                                                              │
│ ❱  441 │   │   │   return self._get_iterator()                               │
"""

LINE_NUMBER_WRAPPED = """\
│ /usr/lib/python3/dist-packages/torch/distributed/checkpoint/state_dict.py:83 │
│ 4 in set_optimizer_state_dict                                                │
│                                                                              │
│ ❱  834 │   │   _load_optim_state_dict(model, optimizers, optim_state_dict, i │
"""

LOST_BOX = """\
\ufffd   98 \ufffd   \ufffd   # Backward compatibility                                      \ufffd
\ufffd \ufffd 99 \ufffd   \ufffd   strategy = self._get_padding_truncation_strategies(         \ufffd
\ufffd                                                                              \ufffd
\ufffd /root/venv/lib/python3.8/site-packages/transformers/tokenization_utils_base.py:2443 in
\ufffd
\ufffd _get_padding_truncation_strategies                                          \ufffd
\ufffd                                                                              \ufffd
\ufffd   2441 \ufffd   \ufffd   # Test if we have a padding token                        \ufffd
"""

HEADER_WITHOUT_BAR = """\
/home/me/project/finetune.py:212 in main                                         │
│                                                                              │
│   211 │   if resume is None:                                                 │
│ ❱ 212 │   │   trainer.train()                                                │
"""

RELAYED_SQUARE_BOX = """\
SUBPROCESS: ┌──────────────── Traceback (most recent call last) ─────────────────┐
SUBPROCESS: │ C:\\tools\\app\\offload.py:61 in move_weights                          │
SUBPROCESS: │                                                                    │
SUBPROCESS: │ > 61 │   │   module.weight.data = module.weight.data.to(device)       │
SUBPROCESS: └────────────────────────────────────────────────────────────────────┘
SUBPROCESS: RuntimeError: CUDA error: out of memory
SUBPROCESS: done.
"""


def test_a_path_wrapped_before_its_line_number() -> None:
    assert _frames(PATH_WRAPPED_BEFORE_LINE)[-1] == (
        "c:\\users\\me\\envs\\sd\\lib\\site-packages\\torch\\utils\\data\\dataloader.py", 441, "__iter__")


def test_a_line_number_wrapped_onto_the_next_line() -> None:
    assert _frames(LINE_NUMBER_WRAPPED) == [
        ("/usr/lib/python3/dist-packages/torch/distributed/checkpoint/state_dict.py", 834, "set_optimizer_state_dict")]


def test_box_characters_lost_to_the_encoding() -> None:
    assert _frames(LOST_BOX)[-1] == ("/root/venv/lib/python3.8/site-packages/transformers/tokenization_utils_base.py",
                                     2443, "_get_padding_truncation_strategies")
    assert diagnose_text(LOST_BOX, correlate=False).kind == "hf-setup"


def test_a_first_header_that_lost_its_bar_is_the_user_frame() -> None:
    diagnosis = diagnose_text(HEADER_WITHOUT_BAR, correlate=False)
    assert (diagnosis.location.path, diagnosis.location.line) == ("/home/me/project/finetune.py", 212)
    assert diagnosis.location.code == "trainer.train()"


def test_a_relayed_square_box_with_an_ascii_marker() -> None:
    diagnosis = diagnose_text(RELAYED_SQUARE_BOX, correlate=False)
    assert diagnosis.kind == "cuda-oom"
    assert (diagnosis.location.path, diagnosis.location.line) == ("C:\\tools\\app\\offload.py", 61)
    assert diagnosis.location.code == "module.weight.data = module.weight.data.to(device)"


def test_a_prefix_on_a_few_lines_of_a_log_is_kept() -> None:
    text = "NOTE: this run uses 2 GPUs\nepoch 1 loss 0.41\nepoch 2 loss 0.39\nNOTE: saved\n"
    assert [line.text for line in normalize(text)][0] == "NOTE: this run uses 2 GPUs"


HARD_WRAPPED = """\
Traceback (most recent call last):
  File "/home/me/proj/just_test.py", line 5, in <module>
    model = torch.load('./checkpoint/best.pth.tar')
  File "/home/me/envs/t/lib/python3.8/site-packages/torch/serialization.py", line
608, in load
    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)
  File "/home/me/envs/t/lib/python3.8/site-packages/torch/serialization.py", line 787, in
_legacy_load
    result = unpickler.load()
AttributeError: Can't get attribute 'AverageMeter' on <module '__main__' from
'/home/me/proj/just_test.py'>
"""


def test_frame_lines_and_a_message_hard_wrapped_by_a_terminal() -> None:
    diagnosis = diagnose_text(HARD_WRAPPED, correlate=False)
    assert [(f.line, f.function) for f in diagnosis.frames] == [(5, "<module>"), (608, "load"), (787, "_legacy_load")]
    assert diagnosis.kind == "checkpoint-mismatch"
    assert (diagnosis.location.path, diagnosis.location.line) == ("/home/me/proj/just_test.py", 5)


def test_a_traceback_copied_from_html_source() -> None:
    import html

    assert diagnose_text(html.escape(HARD_WRAPPED), correlate=False).kind == "checkpoint-mismatch"


STACKED_PREFIXES = "".join(
    f"2026-01-09 14:01:52.982 [Error] (Process) (EngineCore pid=42) ERROR 01-09 14:01:52 [core.py:1136] {line}\n"
    for line in ("Traceback (most recent call last):",
                 '  File "/srv/app/serve.py", line 88, in start',
                 "    engine = build_engine(cfg)",
                 '  File "/venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", line 714, in check',
                 "    raise ValueError(",
                 "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"))


def test_stacked_launcher_prefixes_shared_by_every_frame_line() -> None:
    diagnosis = diagnose_text(STACKED_PREFIXES, correlate=False)
    assert diagnosis.kind == "cuda-oom"
    assert (diagnosis.location.path, diagnosis.location.line) == ("/srv/app/serve.py", 88)


def test_a_relayed_log_without_a_traceback() -> None:
    text = "".join(f"SUBPROCESS: {line}\n" for line in (
        "loading 3000001 vectors", "100%|##########| 3000001/3000001 [03:33<00:00, 14061.26it/s]", "Killed"))
    assert diagnose_text(text, correlate=False).kind == "host-oom"


def test_a_relayed_notebook_traceback() -> None:
    text = "".join(f"STDERR: {line}\n" for line in (
        "---------------------------------------------------------------------------",
        "RuntimeError                              Traceback (most recent call last)",
        "Cell In[7], line 3",
        "      1 x = torch.randn(4, 3)",
        "      2 w = torch.randn(4, 5)",
        "----> 3 y = x @ w",
        "",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"))
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "shape-mismatch"
    assert (diagnosis.location.path, diagnosis.location.line) == ("Cell In[7]", 3)
