"""Program-level facts: what `torch.save` writes (for weights-only loading),
which functions `torch.multiprocessing.spawn`/`start_processes` start (also a
`Process(target=fn)`, with whether the program sets the spawn start method), and which
an engine calls once per batch (ignite's `Engine(process_function)`)."""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from .facts import Checkpoint, Marker
from .names import arg, dotted_name
from .vocab import vocab
from ..walk import iter_nodes

_EMPTY = cst.Module(body=[])


class ProgramFacts:
    """Mixin for the block collector (collect._Collector)."""

    def _program_call(self, node: cst.Call, qualified: str) -> None:
        v, out = vocab(), self.lists["program"]  # type: ignore[attr-defined]
        walk = self.walk  # type: ignore[attr-defined]
        klass = walk.klass.name.value if walk.klass is not None else ""
        if qualified in v.checkpoint_saves:
            obj, path = arg(node, 0, "obj"), arg(node, 1, "f")
            if obj is None or path is None:
                return
            callee = ""
            name = dotted_name(obj)
            if name is not None:
                found = self.scope().lookup(name, walk.order)  # type: ignore[attr-defined]
                if found is not None and isinstance(found.value, cst.Call):
                    callee = self.names.qualify(found.value.func) or ""  # type: ignore[attr-defined]
            out.append(Checkpoint("save", _EMPTY.code_for_node(obj), callee, _EMPTY.code_for_node(path),
                                  walk.qualname(), klass, node, file_named(walk.stack, path)))
        elif qualified in v.safe_globals_calls:
            out.append(Checkpoint("safe-globals", "", "", "", walk.qualname(), klass, node))
        elif qualified in v.spawn_calls:
            target = arg(node, 0, "fn")
            if isinstance(target, cst.Name):
                out.append(Marker("spawn-fn", target.value, node))
        elif qualified in v.process_classes:  # Process(target=fn): a spawned one under the spawn start method
            target = arg(node, 1, "target")
            if isinstance(target, cst.Name):
                out.append(Marker("process-fn", target.value, node))
        elif qualified in v.start_method_setters:
            method = arg(node, 0, "method")
            if isinstance(method, cst.SimpleString) and method.evaluated_value in ("spawn", "forkserver"):
                out.append(Marker("spawn-start", method.evaluated_value, node))
        elif qualified in v.index_samplers:
            # The function that draws, as its code reads (what is drawn from, whether `sample()` is
            # taken): any edit of it re-runs the rules that read the draw (TRN402), in every block.
            where = walk.function if walk.function is not None else walk.statement()
            out.append(Marker("index-draw", _EMPTY.code_for_node(where) if where is not None else "", node))
        elif qualified in v.training_engines:
            target = arg(node, 0, "process_function")
            if isinstance(target, cst.Name):
                out.append(Marker("step-fn", target.value, node))


def file_named(stack: Sequence[cst.CSTNode], path: cst.BaseExpression) -> str:
    """The file name a save or load path names: the last string literal in it, or in the
    `open(...)` call that bound it when it is a handle of an enclosing `with open(...) as f`
    (`stack`: the walk's nodes down to the call); "" when no literal says it."""
    if isinstance(path, cst.Name):
        for node in reversed(stack):
            if isinstance(node, cst.With):
                for item in node.items:
                    if item.asname is not None and isinstance(item.asname.name, cst.Name) and \
                            item.asname.name.value == path.value and isinstance(item.item, cst.Call) and \
                            dotted_name(item.item.func) in ("open", "io.open") and item.item.args:
                        path = item.item.args[0].value
                        break
                else:
                    continue
                break
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                break
    last = ""
    for node in iter_nodes(path):
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            last = text if isinstance(text, str) else last
        elif isinstance(node, cst.FormattedStringText):
            last = node.value
    return last.replace("\\", "/").rsplit("/", 1)[-1]


def same_file(save: Checkpoint, load_path: cst.BaseExpression, loaded: str) -> bool:
    """A save writes the file a load reads: the same path text (unless the file names their literals
    give differ), or the same shape of path whose parts match, an f-string of the load standing for
    any literal that fits it (`cache / f"{tag}_dataset"` reads `cache / "train_dataset"`)."""
    if save.path == _EMPTY.code_for_node(load_path):
        return not (save.file and loaded and save.file != loaded)
    written = arg(save.node, 1, "f") if type(save.node) is cst.Call else None
    return written is not None and _parts_match(written, load_path, 0)


def _parts_match(written: cst.BaseExpression, read: cst.BaseExpression, depth: int) -> bool:
    if depth > 6:
        return False
    if type(read) is cst.FormattedString:
        if type(written) is cst.FormattedString:
            return _EMPTY.code_for_node(written) == _EMPTY.code_for_node(read)
        text = written.evaluated_value if type(written) is cst.SimpleString else None
        if not isinstance(text, str):
            return False
        pattern = "".join(re.escape(part.value) if type(part) is cst.FormattedStringText else ".+"
                          for part in read.parts)
        return re.fullmatch(pattern, text) is not None
    if type(written) is not type(read):
        return False
    if type(read) is cst.BinaryOperation:
        return type(written.operator) is type(read.operator) and \
            _parts_match(written.left, read.left, depth + 1) and _parts_match(written.right, read.right, depth + 1)
    if type(read) is cst.Call:
        written_args, read_args = list(written.args), list(read.args)
        return _EMPTY.code_for_node(written.func) == _EMPTY.code_for_node(read.func) and \
            len(written_args) == len(read_args) and bool(read_args) and \
            all(w.keyword is None and r.keyword is None and _parts_match(w.value, r.value, depth + 1)
                for w, r in zip(written_args, read_args))
    return _EMPTY.code_for_node(written) == _EMPTY.code_for_node(read)
