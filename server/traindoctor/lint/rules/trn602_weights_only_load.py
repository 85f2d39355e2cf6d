"""TRN602 weights-only-load: since torch 2.6 `torch.load` defaults to
weights_only=True, which refuses to unpickle modules and custom classes. A file
this program wrote with `torch.save(model)` (a whole nn.Module) then fails to
load with UnpicklingError. Version-aware like TRN201 (the installed torch, else
the project's pin; quiet below 2.6 or when unknown). The fix passes
weights_only=False: right for the program's own files, unsafe for files from
elsewhere (arbitrary code on load), so it is offered as unsafe."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from ..analysis.scopes import code
from ..analysis.environment import describe, torch_version
from ..analysis.facts import Checkpoint
from ..analysis.summarize import saved_kind
from ..analysis.vocab import vocab
from ..fixes import append_kwargs
from ..rule import FixSpec, Related, Rule

class WeightsOnlyLoad(Rule):
    CODE = "TRN602"
    READS = ("names", "objects", "classes", "program", "functions", "calls", "project")

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
        save = next((f for f in facts if isinstance(f, Checkpoint) and f.kind == "save" and
                     f.path == code(path) and saved_kind(self.model, f) == "module"), None)
        elsewhere = self.model.imported.saved(code(path)) if save is None else None
        if save is None and (elsewhere is None or elsewhere[0] != "module"):
            return
        obj, where = (save.obj, "") if save is not None else (elsewhere[2], f" in {Path(elsewhere[1]).name}")
        message = (f"`{obj}` is saved as a whole module (`torch.save({obj}, ...)`{where}), and on "
                   f"{describe(version)} `torch.load` defaults to weights_only=True, which refuses to unpickle "
                   f"modules: this load raises UnpicklingError; save `{obj}.state_dict()` and load it into "
                   f"a new model, or pass weights_only=False for this trusted file")
        fix = FixSpec("Pass weights_only=False (the program's own file)",
                      (append_kwargs(node, [("weights_only", "False")]),), safe=False)
        related = [Related(save.node, "the whole module is saved here")] if save is not None else []
        self.report(node, message, fix=fix, related=related)
