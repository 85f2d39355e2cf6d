"""TRN502 non-blocking-without-pinned-memory: `.to(device, non_blocking=True)`
(or `.cuda(non_blocking=True)`) on batches from a DataLoader built without
`pin_memory=True`. A host-to-GPU copy from pageable memory is staged through a
pinned buffer by the driver and is synchronous for the host, so the copy never
overlaps compute and `non_blocking` buys nothing. The loader is found through
the loop variable (`for x, y in loader`, enumerate/tqdm, unpacking of the batch)
to a DataLoader call in the file, in loops that train (backward/step each
iteration: one-off passes such as latent caching gain little); adding `pin_memory=True` is safe (it changes
no values; on a machine without a GPU torch warns and skips pinning)."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import Scope, code
from ..analysis.names import dotted_name
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..fixes import append_kwargs
from ..rule import FixSpec, Related, Replace, Rule

_WRAPPERS = ("enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter")


class NonBlockingWithoutPinnedMemory(Rule):
    CODE = "TRN502"
    READS = ("names", "objects", "classes")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return
        flag = arg(node, 99, "non_blocking")
        if not isinstance(flag, cst.Name) or flag.value != "True":
            return
        loader = self._loader(func.value, self.scope(), self.walk.order, 0)
        if loader is None:
            return
        pin = arg(loader, 99, "pin_memory")
        if (pin is not None and not (isinstance(pin, cst.Name) and pin.value == "False")) or \
                any(a.star for a in loader.args):
            return
        message = ("`non_blocking=True` copies from a DataLoader without `pin_memory=True`: from pageable memory "
                   "the copy is effectively synchronous, so it does not overlap compute; pass `pin_memory=True` to the "
                   "DataLoader")
        if pin is None:
            fix = FixSpec("Pass pin_memory=True to the DataLoader",
                          (append_kwargs(loader, [("pin_memory", "True")]),))
        else:  # an explicit pin_memory=False may be deliberate (e.g. CPU-only runs)
            fix = FixSpec("Set pin_memory=True", (Replace(pin, "True"),), safe=False)
        self.report(node, message, fix=fix, related=[Related(loader, "the DataLoader, built without pinned memory")])

    def _loader(self, expr: cst.BaseExpression, scope: Scope, at: int, depth: int) -> cst.Call | None:
        """The DataLoader call whose batches `expr` comes from (loop variable, unpacking, indexing)."""
        if depth > 4:
            return None
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        name = dotted_name(expr)
        if name is None:
            return None
        source = self._comprehension_source(name.split(".")[0]) if depth == 0 else None
        if source is not None:  # {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            return self._loader(source, scope, at, depth + 1)
        found = scope.lookup(name, at) or scope.lookup(name.split(".")[0], at)
        if found is None or found.value is None:
            return None
        if found.how == "iter":
            if not found.loops or found.loops[-1] not in scope.training_loops:
                return None  # a one-off pass (caching, evaluation): the overlap would buy little
            return self._dataloader(found.value, scope, found.order - 1)
        if found.how == "assign":
            return self._loader(found.value, scope, found.order - 1, depth + 1)
        return None

    def _comprehension_source(self, name: str) -> cst.BaseExpression | None:
        fors = [n.for_in for n in reversed(self.walk.stack) if isinstance(n, (cst.ListComp, cst.DictComp,
                                                                             cst.SetComp, cst.GeneratorExp))]
        for node in fors:
            if name in {n.value for n in _names(node.target)}:
                source = node.iter
                if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and \
                        source.func.attr.value in ("items", "values") and not source.args:
                    source = source.func.value
                return source
        return None

    def _dataloader(self, expr: cst.BaseExpression, scope: Scope, at: int) -> cst.Call | None:
        while isinstance(expr, cst.Call) and (self.names.qualify(expr.func) or "") in _WRAPPERS and expr.args:
            expr = expr.args[0].value
        if isinstance(expr, cst.Call):
            return expr if self._is_dataloader(expr) else None
        name = dotted_name(expr)
        if name is None:
            return None
        found = scope.lookup(name, at)
        if found is not None:
            value = found.value
            return value if isinstance(value, cst.Call) and found.how == "assign" and self._is_dataloader(value) \
                else None
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        obj = self.model.object(name, klass)
        if obj is not None and isinstance(obj.node, cst.Call) and self._is_dataloader(obj.node):
            return obj.node
        return None

    def _is_dataloader(self, call: cst.Call) -> bool:
        return (self.names.qualify(call.func) or code(call.func)) in vocab().dataloaders


def _names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names(element.value)
