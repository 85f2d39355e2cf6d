"""TRN501 anomaly-detection-left-on: `torch.autograd.set_detect_anomaly(True)`
for a whole run (at module level or in a training function, not behind an `if`), or in
a method of a model class (also one whose base is a model class of another project file),
or `with detect_anomaly():` around a training loop. Anomaly mode records a stack
trace for every autograd node and checks every backward output for NaN, which
slows training several-fold. The fix puts it behind an environment flag
(unsafe: the author may be debugging right now)."""

from __future__ import annotations

import libcst as cst

from ..analysis.vocab import vocab
from ..fixes import insert_after_imports, module_reference
from ..rule import FixSpec, Replace, Rule
from ..walk import iter_nodes


class AnomalyDetectionLeftOn(Rule):
    CODE = "TRN501"
    READS = ("names", "functions", "layout")

    def visit_Call(self, node: cst.Call) -> None:
        if (self.names.qualify(node.func) or "") not in vocab().anomaly_switches or not node.args:
            return
        flag = node.args[0].value
        if not (isinstance(flag, cst.Name) and flag.value == "True") or not self._whole_run():
            return
        function = self.walk.function
        klass = self.walk.klass
        in_model = function is not None and klass is not None and klass.name.value in self.model.model_classes
        if function is not None and not in_model:
            info = self.model.function(self.walk.qualname())
            if info is None or not (info.trains or function.name.value == "main"):
                return
        if in_model:
            where = f"{klass.name.value}.{function.name.value}"  # type: ignore[union-attr]
            message = (f"`set_detect_anomaly(True)` in `{where}`, a method of a "
                       f"model: anomaly mode is on every time the model runs it, recording a traceback for every "
                       f"autograd node (and checking every gradient for NaN while it is on), which slows training "
                       f"several-fold; a debugging leftover: enable it only behind a flag")
        else:
            message = ("`set_detect_anomaly(True)` for the whole run: anomaly mode records a traceback for every "
                       "autograd node and checks every gradient for NaN, slowing training several-fold; enable it "
                       "only while debugging (behind a flag)")
        self.report(node, message, fix=self._fix(flag))

    def visit_With(self, node: cst.With) -> None:
        if not any((self.names.qualify(i.item.func if isinstance(i.item, cst.Call) else i.item) or "")
                   in vocab().anomaly_contexts for i in node.items) or not self._whole_run():
            return
        inner = list(iter_nodes(node.body))
        if not any(isinstance(n, (cst.For, cst.While)) for n in inner) or not any(
                isinstance(n, cst.Attribute) and n.attr.value in ("backward", "fit", "train") for n in inner):
            return
        message = ("`detect_anomaly()` around the training loop: anomaly mode records a traceback for every "
                   "autograd node and checks every gradient for NaN, slowing training several-fold; enable it "
                   "only while debugging")
        self.report(node.items[0], message)

    def _whole_run(self) -> bool:
        """Not behind a condition (other than `if __name__ == "__main__":`), not in a test."""
        for node in self.walk.stack:
            if isinstance(node, cst.If) and "__main__" not in cst.Module(body=[]).code_for_node(node.test):
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value.lower().startswith("test"):
                return False
        return True

    def _fix(self, flag: cst.Name) -> FixSpec | None:
        os_name, line = module_reference(self.model, "os")
        changes: list = [Replace(flag, f'{os_name}.environ.get("TORCH_DETECT_ANOMALY") == "1"')]
        if line is not None:
            insert = insert_after_imports(self.model, [line])
            if insert is None:
                return None
            changes.append(insert)
        return FixSpec("Enable anomaly detection only when TORCH_DETECT_ANOMALY=1", tuple(changes), safe=False)
