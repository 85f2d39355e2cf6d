"""One definition each: the user frame (CLI, live, extension via the server), the frame
resolver (CLI correlation and the language server) and the Python-file walker."""

from __future__ import annotations

from pathlib import Path

from traindoctor.diagnose.user_frame import dap_user_frame, is_user_path
from traindoctor.live.from_dap import user_frame
from traindoctor.model import Frame


def _dap(frame_id: int, path: str | None, hint: str | None = None) -> dict:
    frame = {"id": frame_id, "name": f"f{frame_id}", "line": 10 + frame_id}
    if path is not None:
        frame["source"] = {"path": path}
    if hint:
        frame["presentationHint"] = hint
    return frame


STACK = [  # innermost first, as DAP sends it
    _dap(1, "/venv/lib/python3.11/site-packages/torch/nn/functional.py"),
    _dap(2, "/opt/shared/helpers.py"),
    _dap(3, "/work/proj/model.py", "subtle"),
    _dap(4, "/work/proj/train.py"),
    _dap(5, None),
]


def test_dap_user_frame_is_the_deepest_user_frame_preferring_the_workspace() -> None:
    assert dap_user_frame(STACK)["id"] == 2
    assert dap_user_frame(STACK, ["/work/proj"])["id"] == 4
    assert dap_user_frame([_dap(1, "/venv/lib/python3.11/site-packages/x.py")])["id"] == 1  # fallback
    assert dap_user_frame([]) is None


def test_live_diagnosis_uses_the_same_definition() -> None:
    raw, frame = user_frame({"stackFrames": STACK}, ["/work/proj"])
    assert raw["id"] == 4 and frame.path == "/work/proj/train.py" and frame.is_user
    assert not is_user_path("/venv/lib/python3.11/site-packages/torch/nn/functional.py")


def test_language_server_resolves_frames_like_correlation(tmp_path: Path) -> None:
    from traindoctor.lsp.commands import _resolve_frame

    (tmp_path / "src").mkdir()
    local = tmp_path / "src" / "train.py"
    local.write_text("x = 1\n")
    # a log from another machine: the absolute path does not exist here
    frame = Frame("/home/someone/checkout/src/train.py", 1, "<module>", "x = 1", True)
    assert _resolve_frame(frame, str(tmp_path)) == local.resolve()
    assert _resolve_frame(Frame("src/train.py", 1, "<module>", None, True), str(tmp_path)) == local.resolve()
    assert _resolve_frame(Frame("Cell In[3]", 1, "<cell>", None, True), str(tmp_path)) is None


def test_language_server_walks_files_like_check(tmp_path: Path) -> None:
    from traindoctor.lint.files import python_files as check_walker
    from traindoctor.lsp.commands import python_files

    for name in ("train.py", "build/gen.py", "venv/lib/x.py", "pkg/stub.pyi", "pkg/mod.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import torch\n")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert python_files([str(tmp_path)]) == [str(p) for p in check_walker([str(tmp_path)])]
    assert str(tmp_path / "train.py") in python_files([str(tmp_path)])
    assert not any("venv" in p or "build" in p for p in python_files([str(tmp_path)]))
