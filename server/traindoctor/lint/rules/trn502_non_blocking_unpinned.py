"""TRN502 non-blocking-without-pinned-memory: `.to(device, non_blocking=True)`
(or `.cuda(non_blocking=True)`) on batches from a DataLoader built without
`pin_memory=True`. A host-to-GPU copy from pageable memory is staged through a
pinned buffer by the driver and is synchronous for the host, so the copy never
overlaps compute and `non_blocking` buys nothing. The loader is found through
the loop variable (`for x, y in loader`, enumerate/tqdm, unpacking of the batch)
(also `next(it)` of `it = iter(loader)`, and a loader parameter to the DataLoaders that
every in-file caller passes) to a DataLoader call in the file, in loops that train (backward/step each
iteration: one-off passes such as latent caching gain little); adding `pin_memory=True` is safe (it changes
no values; on a machine without a GPU torch warns and skips pinning)."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import Scope, code
from ..analysis.names import dotted_name
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..fixes import append_kwargs, with_kwargs
from ..rule import FixSpec, Related, Replace, Rule

_WRAPPERS = ("enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter")


class NonBlockingWithoutPinnedMemory(Rule):
    CODE = "TRN502"
    READS = ("names", "objects", "classes", "functions", "calls")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return
        flag = arg(node, 99, "non_blocking")
        if not isinstance(flag, cst.Name) or flag.value != "True":
            return
        loader = self._loader(func.value, self.scope(), self.walk.order, 0)
        loaders = loader if isinstance(loader, tuple) else (loader,) if loader is not None else ()
        if not loaders:
            return
        pins = [arg(each, 99, "pin_memory") for each in loaders]
        if any((pin is not None and not (isinstance(pin, cst.Name) and pin.value == "False")) or
               any(a.star for a in each.args) for pin, each in zip(pins, loaders)):
            return
        message = ("`non_blocking=True` copies from a DataLoader without `pin_memory=True`: from pageable memory "
                   "the copy is effectively synchronous, so it does not overlap compute; pass `pin_memory=True` to the "
                   "DataLoader")
        if len(loaders) > 1:
            message += f" (the {len(loaders)} loaders the callers pass)"
        if all(pin is None for pin in pins):
            # a caller's loader lies in another block: the edit replaces the whole call, a node its facts carry
            add = (lambda each: Replace(each, with_kwargs(each, [("pin_memory", "True")]))) \
                if isinstance(loader, tuple) else (lambda each: append_kwargs(each, [("pin_memory", "True")]))
            fix = FixSpec("Pass pin_memory=True to the DataLoader", tuple(add(each) for each in loaders))
        else:  # an explicit pin_memory=False may be deliberate (e.g. CPU-only runs)
            fix = FixSpec("Set pin_memory=True", tuple(Replace(pin, "True") if pin is not None else
                                                       append_kwargs(each, [("pin_memory", "True")])
                                                       for pin, each in zip(pins, loaders)), safe=False)
        self.report(node, message, fix=fix, related=[Related(each, "the DataLoader, built without pinned memory")
                                                     for each in loaders])

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
            source = _next_of(found.value)
            if source is not None:  # x, y = next(batches) / batches.next(), with batches = iter(loader)
                loop = self.walk.innermost_loop()
                if loop is None or id(loop) not in scope.training_loops:
                    return None
                name = dotted_name(source)
                it = scope.lookup(name, found.order - 1) if name is not None else None
                if it is None or it.how != "assign" or it.value is None:
                    return None
                return self._dataloader(it.value, scope, it.order - 1)
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
        if found is not None and found.how == "param":
            return self._passed_loaders(name)
        if found is not None:
            value = found.value
            return value if isinstance(value, cst.Call) and found.how == "assign" and self._is_dataloader(value) \
                else None
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        obj = self.model.object(name, klass)
        if obj is not None and isinstance(obj.node, cst.Call) and self._is_dataloader(obj.node):
            return obj.node
        return None

    def _passed_loaders(self, param: str) -> tuple[cst.Call, ...] | None:
        """The DataLoaders that every in-file caller of this plain function passes for `param`
        (by position or keyword), each bound once to a DataLoader call in the caller."""
        function = self.walk.function
        if function is None or self.walk.klass is not None:
            return None
        info = self.model.function(function.name.value)
        if info is None or info.node is not function or param not in info.params:
            return None
        index = info.params.index(param)
        sites = [c for c in self.model.facts["calls"] if c.callee == function.name.value]
        found: list[cst.Call] = []
        for site in sites:
            passed = arg(site.node, index, param)
            if isinstance(passed, cst.Call) and self._is_dataloader(passed):
                found.append(passed)
                continue
            if not isinstance(passed, cst.Name):
                return None
            caller = next((f for f, _ in self.model.function_home.values()
                           if f.node is not None and any(n is site.node for n in _nodes(f.node))), None)
            if caller is None:
                return None
            bound = [n for n in _nodes(caller.node) if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign,
                                                                       cst.For, cst.WithItem, cst.NamedExpr))
                     and any(isinstance(t, cst.Name) and t.value == passed.value for t in _targets(n))]
            if len(bound) != 1 or not isinstance(bound[0], cst.Assign) or \
                    not isinstance(bound[0].value, cst.Call) or not self._is_dataloader(bound[0].value):
                return None
            found.append(bound[0].value)
        return tuple(found) or None

    def _is_dataloader(self, call: cst.Call) -> bool:
        return (self.names.qualify(call.func) or code(call.func)) in vocab().dataloaders


def _names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names(element.value)


def _next_of(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """`it` of `next(it)`, `it.next()`, `it.__next__()`."""
    if not isinstance(value, cst.Call):
        return None
    if isinstance(value.func, cst.Name) and value.func.value == "next" and len(value.args) == 1:
        return value.args[0].value
    if isinstance(value.func, cst.Attribute) and value.func.attr.value in ("next", "__next__") and not value.args:
        return value.func.value
    return None


def _targets(node: cst.CSTNode):
    if isinstance(node, cst.Assign):
        roots = [t.target for t in node.targets]
    elif isinstance(node, cst.WithItem):
        roots = [node.asname.name] if node.asname is not None else []
    else:
        roots = [node.target]  # type: ignore[attr-defined]
    for root in roots:
        yield from _nodes(root)


def _nodes(root: cst.CSTNode):
    from ..walk import iter_nodes

    return iter_nodes(root)
