"""TRN602 weights-only-load: since torch 2.6 `torch.load` defaults to
weights_only=True, which refuses to unpickle modules and custom classes. A file
this program wrote with `torch.save(model)` (a whole nn.Module) then fails to
load with UnpicklingError. Version-aware like TRN201 (the installed torch, else
the project's pin; quiet below 2.6 or when unknown). A path text that two sites share is
the same file unless their file names differ (`with open(dir + "/optimizer.pt") as f` and a
module saved through another `f`). The fix passes
weights_only=False: right for the program's own files, unsafe for files from
elsewhere (arbitrary code on load), so it is offered as unsafe."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.environment import describe, torch_version
from ..analysis.facts import Checkpoint
from ..analysis.names import arg, dotted_name
from ..analysis.program import file_named
from ..analysis.vocab import vocab
from ..fixes import append_kwargs
from ..rule import FixSpec, Related, Rule

_NOT_A_MODULE = ("state", "dict", "sd", "ckpt", "checkpoint", "param", "weight", "optim", "config", "args")


class WeightsOnlyLoad(Rule):
    CODE = "TRN602"
    READS = ("names", "objects", "classes", "program")

    def visit_Call(self, node: cst.Call) -> None:
        if (self.names.qualify(node.func) or "") not in vocab().checkpoint_loads:
            return
        if any(a.star or (a.keyword is not None and a.keyword.value in ("weights_only", "pickle_module"))
               for a in node.args):
            return
        version = torch_version(self.model.path)
        if version is None or version < (2, 6):
            return
        path = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "f"), None)
        if path is None:
            return
        facts = self.model.facts["program"]
        if any(isinstance(f, Checkpoint) and f.kind == "safe-globals" for f in facts):
            return
        loaded = file_named(self.walk.stack, path)
        save = next((f for f in facts if isinstance(f, Checkpoint) and f.kind == "save" and
                     f.path == code(path) and not (f.file and loaded and f.file != loaded) and
                     self._whole_module(f)), None)
        if save is None:
            return
        message = (f"`{save.obj}` is saved as a whole module (`torch.save({save.obj}, ...)`), and on "
                   f"{describe(version)} `torch.load` defaults to weights_only=True, which refuses to unpickle "
                   f"modules: this load raises UnpicklingError; save `{save.obj}.state_dict()` and load it into "
                   f"a new model, or pass weights_only=False for this trusted file")
        fix = FixSpec("Pass weights_only=False (the program's own file)",
                      (append_kwargs(node, [("weights_only", "False")]),), safe=False)
        self.report(node, message, fix=fix, related=[Related(save.node, "the whole module is saved here")])

    def _whole_module(self, save: Checkpoint) -> bool:
        if save.callee:
            return self.model.kind_of_callee(save.callee) == "model"
        if save.obj == "self":
            return save.klass in self.model.model_classes
        name = save.obj.removesuffix(".module")
        if dotted_name(cst.parse_expression(name)) is None:
            return False
        if self.model.object_kind(name, save.klass) == "model":
            return True
        if self._every_caller_passes_a_dict(save):
            return False
        last = name.rsplit(".", 1)[-1].lower()
        return bool(vocab().pattern("model_name_pattern").search(last)) and \
            not any(word in last for word in _NOT_A_MODULE)

    def _every_caller_passes_a_dict(self, save: Checkpoint) -> bool:
        """The saved object is a parameter of its function, and every in-file call passes a
        `state_dict()` or a dict there (`def save(model_data, path)` called with
        `model.state_dict()`): a file of tensors, not a pickled module."""
        info = self.model.function(save.function) if save.function else None
        if info is None or save.obj not in info.params:
            return False
        params = [p for p in info.params if p not in ("self", "cls")]
        position = params.index(save.obj)
        callee = f"self.{info.name}" if info.klass else info.name
        sites = self.model.calls.get(callee, ())
        if not sites:
            return False
        for site in sites:
            call = site.node
            if not isinstance(call, cst.Call):
                return False
            passed = arg(call, position, save.obj)
            if not _a_dict(passed):
                return False
        return True


def _a_dict(expr: cst.BaseExpression | None) -> bool:
    """`x.state_dict()`, `{...}`, `dict(...)`: a dict of tensors and numbers."""
    if isinstance(expr, cst.Dict):
        return True
    if isinstance(expr, cst.Call):
        func = expr.func
        return (isinstance(func, cst.Attribute) and func.attr.value == "state_dict") or \
            (isinstance(func, cst.Name) and func.value == "dict")
    return False
