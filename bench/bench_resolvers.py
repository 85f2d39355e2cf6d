"""Which engine could resolve what a call's callee is, across files, on real torch code?

    PYTHONPATH=<jedi+astroid> .venv/bin/python bench/bench_resolvers.py [torch subfolder ...]

For every call whose callee is a name or a dotted name in the files (torch's own
sources: code nobody here wrote), each engine is asked what the callee is:
libcst's FullRepoManager + FullyQualifiedNameProvider (qualified names through
imports, relative ones included; no inference), jedi (`Script.infer`), astroid
(`Call.func.infer()`). Coverage: the share of callees resolved to a definition or a
qualified name; speed: seconds for the whole set, and per file. Asserts nothing.
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path


def _callees(path: Path) -> list[tuple[int, int]]:
    """(line, column) of the last name of every call's callee (`a.b.c(...)` -> `c`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.append((func.lineno, func.col_offset))
            elif isinstance(func, ast.Attribute) and func.end_lineno == func.lineno:
                found.append((func.end_lineno, func.end_col_offset - len(func.attr)))
    return found


def libcst_fqn(root: Path, files: list[Path]) -> tuple[int, float]:
    import libcst as cst
    from libcst.metadata import FullRepoManager, FullyQualifiedNameProvider

    start = time.perf_counter()
    manager = FullRepoManager(str(root), [str(f) for f in files], {FullyQualifiedNameProvider})
    resolved = 0
    for f in files:
        wrapper = manager.get_metadata_wrapper_for_path(str(f))
        names = wrapper.resolve(FullyQualifiedNameProvider)
        for node, qualified in names.items():
            if isinstance(node, cst.Call) and qualified:
                resolved += 1
    return resolved, time.perf_counter() - start


def libcst_calls(files: list[Path]) -> int:
    return sum(len(_callees(f)) for f in files)


def jedi_infer(root: Path, files: list[Path]) -> tuple[int, float]:
    import jedi

    project = jedi.Project(str(root))
    start = time.perf_counter()
    resolved = 0
    for f in files:
        script = jedi.Script(f.read_text(), path=str(f), project=project)
        for line, column in _callees(f):
            try:
                if script.infer(line, column):
                    resolved += 1
            except Exception:  # jedi raises on some constructs: unresolved
                pass
    return resolved, time.perf_counter() - start


def astroid_infer(files: list[Path]) -> tuple[int, float]:
    import astroid
    from astroid import nodes

    start = time.perf_counter()
    resolved = 0
    for f in files:
        try:
            module = astroid.MANAGER.ast_from_file(str(f))
        except Exception:
            continue
        for call in module.nodes_of_class(nodes.Call):
            try:
                if any(v is not astroid.Uninferable for v in call.func.infer()):
                    resolved += 1
            except Exception:
                pass
    return resolved, time.perf_counter() - start


def ours(files: list[Path]) -> tuple[int, float]:
    """Reference: traindoctor's whole lint (every rule, cold cache) of the same files."""
    from traindoctor.config import Config
    from traindoctor.lint.api import lint_source

    start = time.perf_counter()
    for f in files:
        lint_source(f.read_text(), str(f), Config(select=("strict",)))
    return 0, time.perf_counter() - start


def main() -> None:
    import torch

    torch_root = Path(torch.__file__).parent
    folders = sys.argv[1:] or ["optim"]
    files = sorted(p for folder in folders for p in (torch_root / folder).rglob("*.py"))
    calls = libcst_calls(files)
    print(f"{len(files)} files of torch/{{{','.join(folders)}}}, {calls} calls of a name or dotted name")
    for name, run in (("libcst FullRepoManager (qualified names)", lambda: libcst_fqn(torch_root.parent, files)),
                      ("jedi Script.infer", lambda: jedi_infer(torch_root.parent, files)),
                      ("astroid infer", lambda: astroid_infer(files)),
                      ("(reference) traindoctor lint, every rule", lambda: ours(files))):
        resolved, seconds = run()
        print(f"{name:42s} resolved {resolved:6d} ({resolved / max(calls, 1):5.1%})  {seconds:7.2f} s  "
              f"{seconds / len(files) * 1000:7.1f} ms/file")


if __name__ == "__main__":
    main()
