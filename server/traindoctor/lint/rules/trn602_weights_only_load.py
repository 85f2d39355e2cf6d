"""TRN602 weights-only-load: since torch 2.6 `torch.load` defaults to
weights_only=True, which refuses to unpickle modules and custom classes. A file
this program wrote with `torch.save(model)` (a whole nn.Module) then fails to
load with UnpicklingError. Version-aware like TRN201 (the installed torch, else
the project's pin; quiet below 2.6 or when unknown). A path text that two sites share is
the same file unless their file names differ (`with open(dir + "/optimizer.pt") as f` and a
module saved through another `f`). The fix passes
weights_only=False: right for the program's own files, unsafe for files from
elsewhere (arbitrary code on load), so it is offered as unsafe.

What the file holds is known from a whole-module `torch.save` of the same path, or from
the loaded object itself: annotated as a class of this file (`m: Net = torch.load(p)`),
or used as a module in the same function (`m = torch.load(p); m.eval()`)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from ..analysis.def_use import parents_of, uses_by_node
from ..analysis.scopes import code
from ..analysis.environment import describe, package_version, torch_version
from ..analysis.facts import Checkpoint
from ..analysis.model import lineage_of
from ..analysis.names import dotted_name
from ..analysis.program import file_named, same_file
from ..analysis.summarize import saved_kind
from ..analysis.vocab import vocab
from ..fixes import append_kwargs
from ..rule import FixSpec, Related, Rule
from ..walk import iter_nodes


class WeightsOnlyLoad(Rule):
    CODE = "TRN602"
    READS = ("names", "objects", "classes", "program", "functions", "calls", "project")

    def visit_Call(self, node: cst.Call) -> None:
        if (self.names.qualify(node.func) or "") not in vocab().checkpoint_loads:
            self._library_load(node)
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
                     same_file(f, path, loaded) and self._same_instance(f, path) and
                     saved_kind(self.model, f) == "module"), None)
        fix = FixSpec("Pass weights_only=False (the program's own file)",
                      (append_kwargs(node, [("weights_only", "False")]),), safe=False)
        elsewhere = self.model.imported.saved(code(path)) if save is None else None
        if save is not None or (elsewhere is not None and elsewhere[0] == "module"):
            obj, where = (save.obj, "") if save is not None else (elsewhere[2], f" in {Path(elsewhere[1]).name}")
            message = (f"`{obj}` is saved as a whole module (`torch.save({obj}, ...)`{where}), and on "
                       f"{describe(version)} `torch.load` defaults to weights_only=True, which refuses to unpickle "
                       f"modules: this load raises UnpicklingError; save `{obj}.state_dict()` and load it into "
                       f"a new model, or pass weights_only=False for this trusted file")
            related = [Related(save.node, "the whole module is saved here")] if save is not None else []
            self.report(node, message, fix=fix, related=related)
            return
        held = self._what_the_load_holds(node)
        if held is None:
            unsafe = self._loaded_unsafely_elsewhere(node, path)
            stored = self._objects_saved_to(path, loaded) if unsafe is None else None
            if stored is not None:
                what, value, saved, whole = stored
                written = f"`{code(saved.func)}({code(value)}, ...)`, which saves {what}" if whole else \
                    f"`{code(saved.func)}(...)` with `{code(value)}` in it, which holds {what}"
                advice = "save what rebuilds it (its data, a state dict)" if whole else \
                    "save plain values (`vars(args)`, `float(x)`, `.tolist()`)"
                message = (f"The file this loads is written by {written}; on {describe(version)} `torch.load` "
                           f"defaults to weights_only=True, which refuses to unpickle it: this load raises "
                           f"UnpicklingError; {advice}, or pass weights_only=False for this trusted file")
                self.report(node, message, fix=fix, related=[Related(value, "this value is not weights-only")])
            if unsafe is not None:
                message = (f"This function also loads this file with weights_only=False (`{code(unsafe)}`): the "
                           f"program expects it to hold objects that the weights-only unpickler refuses, and on {describe(version)} `torch.load` "
                           f"defaults to weights_only=True: this load raises UnpicklingError; pass "
                           f"weights_only=False here too for this trusted file")
                self.report(node, message, fix=fix, related=[Related(unsafe, "the same file, loaded unsafely here")])
            return
        what, evidence = held
        message = (f"The loaded file holds {what}, and on {describe(version)} `torch.load` defaults to "
                   f"weights_only=True, which refuses to unpickle modules and other custom classes: this load "
                   f"raises UnpicklingError; save and load a state dict instead, or pass weights_only=False "
                   f"for a trusted file")
        self.report(node, message, fix=fix, related=[Related(evidence, "this says what the file holds")])

    def _what_the_load_holds(self, node: cst.Call) -> tuple[str, cst.CSTNode] | None:
        """What the object bound to the load's result is, when the file says it is not weights
        only: an annotation naming a class of this file, or a module's method called on it in
        the same function, the name bound nowhere else there."""
        parent = self.walk.parent
        target = annotation = None
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign) and parent.value is node:
            target, annotation = parent.target, parent.annotation.annotation
        name = dotted_name(target) if target is not None else None
        if name is None:
            return None
        if annotation is not None:
            klass = dotted_name(annotation) or ""
            info = self.model.classes.get(klass.rsplit(".", 1)[-1])
            if info is not None and not any(b.rsplit(".", 1)[-1] in vocab().plain_data_bases for b in info.bases):
                return f"a pickled `{info.name}` object (the annotation says so)", annotation
        function = self.walk.function
        if function is None or name in {p.name.value for p in function.params.params}:
            return None
        if isinstance(parent, cst.Assign) and isinstance(target, cst.Name):
            use = self._used_as_object(function, parent, name)
        else:
            use = self._attribute_used_as_module(function, node, name)
        if use is None:
            return None
        receiver = use.func.value if isinstance(use.func, cst.Attribute) else use.func
        what = "what it returns" if dotted_name(receiver) == name else "an item of what it returns"
        return f"a pickled object (`{code(use.func)}()` is called on {what})", use

    def _attribute_used_as_module(self, function: cst.FunctionDef, node: cst.Call, name: str) -> cst.Call | None:
        """`self.net = torch.load(p)` then `self.net.eval()` in the same function, `self.net` bound
        nowhere else there."""
        use = None
        for inner in iter_nodes(function):
            if isinstance(inner, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and inner.value is not node:
                targets = [t.target for t in inner.targets] if isinstance(inner, cst.Assign) else [inner.target]
                if any(dotted_name(t) == name or (isinstance(t, cst.Tuple) and name in code(t)) for t in targets):
                    return None  # bound to something else too: not followed
            elif use is None and isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and \
                    inner.func.attr.value in vocab().module_only_methods and dotted_name(inner.func.value) == name:
                use = inner
        return use

    def _used_as_object(self, function: cst.FunctionDef, load: cst.Assign, name: str) -> cst.Call | None:
        """A call of a method that no weights-only value has (a module's or an optimizer's:
        `eval()`, `parameters()`, `state_dict()`; tensors, containers and numbers have none) on the
        loaded value or on an item of it (`ckpt["optimizer"].state_dict()`), followed along the
        function's def-use chains: through local names bound to it or to an item of it, wherever
        that binding reaches the use on some path (another binding of the name elsewhere does not
        hide it)."""
        v = vocab()
        methods = set(v.module_only_methods) | set(v.stateful_object_methods)
        flow = self.analysis.scope_of(function).flow(function)
        parents = parents_of(function)
        uses = uses_by_node(flow)
        todo: list[tuple[cst.CSTNode, str]] = [(load, name)]
        seen: set[tuple[int, str]] = set()
        while todo and len(seen) < 16:
            definition, held = todo.pop()
            if (id(definition), held) in seen:
                continue
            seen.add((id(definition), held))
            for statement, loads in uses.get(held, ()):
                if not any(d is definition for d in flow.reaching(statement, held, through_accumulation=False)):
                    continue
                for item in loads:
                    while type(above := parents.get(id(item))) is cst.Subscript and above.value is item:
                        item = above
                    above = parents.get(id(item))
                    if type(above) is cst.Attribute and above.value is item and above.attr.value in methods:
                        call = parents.get(id(above))
                        if type(call) is cst.Call and call.func is above:
                            return call
                    elif type(statement) is cst.Assign and statement.value is item and len(statement.targets) == 1 \
                            and type(statement.targets[0].target) is cst.Name:
                        todo.append((statement, statement.targets[0].target.value))
        return None

    def _library_load(self, node: cst.Call) -> None:
        """A Lightning checkpoint load (`Module.load_from_checkpoint(p)`, fabric's `_load`): from
        Lightning 2.6 it passes weights_only=None to `torch.load` (torch's default: True since 2.6;
        2.5 passed False). Reported when the same file is loaded with weights_only=False elsewhere
        in the function. Lightning's version is the project's pin (or the installed one)."""
        v = vocab()
        qualified = self.names.qualify(node.func) or ""
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else ""
        if qualified not in v.lightning_checkpoint_loads and not (
                method in v.lightning_checkpoint_methods and method not in {q.rsplit(".", 1)[-1] for q in self.model.function_home}):
            return
        if any(a.star or (a.keyword is not None and a.keyword.value == "weights_only") for a in node.args):
            return
        lightning = package_version(self.model.path, tuple(v.lightning_packages))
        since = tuple(int(p) for p in str(v.lightning_weights_only_since).split("."))
        version = torch_version(self.model.path)
        if lightning is None or lightning < since or version is None or version < (2, 6):
            return
        if any(isinstance(f, Checkpoint) and f.kind == "safe-globals" for f in self.model.facts["program"]):
            return
        path = next((a.value for a in node.args if a.keyword is None or
                     a.keyword.value in ("checkpoint_path", "path_or_url")), None)
        unsafe = self._loaded_unsafely_elsewhere(node, path) if path is not None else None
        if unsafe is None:
            return
        name = code(node.func)
        message = (f"This function also loads this file with weights_only=False (`{code(unsafe)}`): the program "
                   f"expects it to hold objects that the weights-only unpickler refuses. From Lightning 2.6 (this project: Lightning "
                   f"{lightning[0]}.{lightning[1]}) `{name}` leaves weights_only to `torch.load`, whose default on "
                   f"{describe(version)} is True: this load raises UnpicklingError; pass weights_only=False for "
                   f"this trusted file")
        fix = FixSpec("Pass weights_only=False (the program's own file)",
                      (append_kwargs(node, [("weights_only", "False")]),), safe=False)
        self.report(node, message, fix=fix, related=[Related(unsafe, "the same file, loaded unsafely here")])

    def _loaded_unsafely_elsewhere(self, node: cst.Call, path: cst.BaseExpression) -> cst.Call | None:
        """Another `torch.load` of the same path text in this function (or module-level code)
        that passes weights_only=False: the program knows that file needs full unpickling."""
        v = vocab()
        text = code(path)
        root = self.walk.function if self.walk.function is not None else self.walk.stack[0]
        for inner in iter_nodes(root):
            if type(inner) is not cst.Call or inner is node or \
                    (self.names.qualify(inner.func) or "") not in v.checkpoint_loads:
                continue
            first = next((a.value for a in inner.args if a.keyword is None or a.keyword.value == "f"), None)
            if first is None or code(first) != text:
                continue
            if any(a.keyword is not None and a.keyword.value == "weights_only" and
                   isinstance(a.value, cst.Name) and a.value.value == "False" for a in inner.args):
                return inner
        return None

    def _objects_saved_to(self, path: cst.BaseExpression, loaded: str | None
                          ) -> tuple[str, cst.BaseExpression, cst.Call, bool] | None:
        """(what, value, save call, whether the value is the whole object saved) for a `torch.save` of this
        file (`same_file`) whose saved object, or a value of its saved dict, is one the weights-only unpickler refuses: an argparse Namespace,
        a NumPy value, an object of a class of this file (a whole dataset cached to disk)."""
        for fact in self.model.facts["program"]:
            if not (isinstance(fact, Checkpoint) and fact.kind == "save" and type(fact.node) is cst.Call and
                    same_file(fact, path, loaded) and self._same_instance(fact, path)):
                continue
            home = self.model.function_home.get(fact.function)
            scope = home[1].scope_of(home[0].node) if home is not None else None
            klass = home[0].klass if home is not None else ""
            saved = next((a.value for a in fact.node.args if a.keyword is None or a.keyword.value == "obj"), None)
            values = self._dict_values(saved, scope, 0, fact.node) if saved is not None else []
            for value in values or ([saved] if saved is not None else []):  # a dict's values, or the object saved
                what = self._refused(value, scope, 0, klass, fact.node)
                if what:
                    return what, value, fact.node, value is saved
        return None

    def _same_instance(self, save: Checkpoint, path: cst.BaseExpression) -> bool:
        """A path read through `self` (`self.processed_paths[0]`) names a file of this object: a save in a class
        unrelated to the loading one (neither inherits the other) writes another object's file."""
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        if not klass or not save.klass or not any(dotted_name(n) == "self" for n in iter_nodes(path)):
            return True
        return save.klass in lineage_of(self.model, klass) or klass in lineage_of(self.model, save.klass)

    def _bound_value(self, name: str, scope, save: cst.Call | None = None) -> cst.BaseExpression | None:
        """What a local name (one plain binding in `scope`; of several, the last one above the save being
        read, `best = acc` after `best = 0.0`), else a module-level name (one binding), is bound to; None
        when it is a parameter, an augmented or unpacked binding, or unknown."""
        defs = _read_by_save(name, scope, save)
        if not defs:
            homes = self.model.global_defs.get(name, [])
            defs = [d for analysis in homes for d in analysis.module_scope.defs.get(name, ())]
        if len(defs) != 1 or defs[0].how != "assign" or defs[0].index is not None:
            return None
        return defs[0].value

    def _dict_values(self, expr: cst.BaseExpression, scope, depth: int, save: cst.Call | None = None
                     ) -> list[cst.BaseExpression]:
        """The values of a saved dict: a dict literal (nested ones too), `dict(k=v)`, or a name bound
        once to one of these."""
        if depth > 3:
            return []
        if isinstance(expr, cst.Dict):
            found: list[cst.BaseExpression] = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found += self._dict_values(element.value, scope, depth + 1, save) if \
                        isinstance(element.value, cst.Dict) else [element.value]
            return found
        if isinstance(expr, cst.Call) and dotted_name(expr.func) == "dict":
            return [a.value for a in expr.args if a.keyword is not None]
        if isinstance(expr, cst.Name):
            value = self._bound_value(expr.value, scope, save)
            return self._dict_values(value, scope, depth + 1, save) if value is not None else []
        return []

    def _refused(self, expr: cst.BaseExpression, scope, depth: int, klass: str = "",
                 save: cst.Call | None = None) -> str:
        """What `expr` is, when the weights-only unpickler refuses it ("" when not known to be).
        Followed through a local or module-level name (bound once, or the last binding above the save),
        arithmetic with a NumPy value, an attribute of `self` (what the
        class's methods assign to it or append to it), and what an in-file function or method
        returns (any one refused value is enough: the load fails on it). At most six steps deep."""
        if depth > 5:
            return ""
        if isinstance(expr, cst.Name):
            value = self._bound_value(expr.value, scope, save)
            if value is None:
                return self._unpacked_refused(expr.value, scope, klass, save)
            return self._refused(value, scope, depth + 1, klass, save)
        if isinstance(expr, (cst.Tuple, cst.List)):  # `torch.save((data, slices), path)`: one refused element is enough
            for element in expr.elements:
                what = self._refused(element.value, scope, depth + 1, klass, save)
                if what:
                    return what
            return ""
        if klass and isinstance(expr, cst.Attribute) and dotted_name(expr.value) == "self":
            return self._attribute_refused(expr.attr.value, depth, klass)
        if isinstance(expr, cst.BinaryOperation):  # arithmetic with a NumPy value gives a NumPy value
            for side in (expr.left, expr.right):
                what = self._refused(side, scope, depth + 1, klass, save)
                if "numpy." in what:
                    return what
            return ""
        if not isinstance(expr, cst.Call):
            return ""
        callee = dotted_name(expr.func) or ""
        info = self.model.function(callee, klass) if callee else None
        if info is None and klass and callee.startswith("self.") and callee.count(".") == 1:
            inherited = self._inherited_refused(klass, callee[5:])
            if inherited is not None:
                return inherited[0]
        if info is not None and (info.klass == klass or not callee.startswith("self.")):
            inner = self.model.function_home[info.qualname][1].scope_of(info.node)
            for returned in info.returns:
                what = self._refused(returned, inner, depth + 1, info.klass)
                if what:
                    return f"{what}, returned by `{info.qualname}`"
            return ""
        v = vocab()
        qualified = self.names.qualify(expr.func) or ""
        if qualified in v.weights_only_refused_calls:
            return f"a `{qualified}` value"
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in v.argument_parser_methods:
            receiver = expr.func.value
            built = self._bound_value(receiver.value, scope) if isinstance(receiver, cst.Name) else receiver
            if isinstance(built, cst.Call) and (self.names.qualify(built.func) or "") in v.argument_parsers:
                return "an argparse Namespace"
        info = self.model.classes.get(qualified.rsplit(".", 1)[-1]) if qualified else None
        if info is not None and dotted_name(expr.func) == info.name and \
                not any(b.rsplit(".", 1)[-1] in v.plain_data_bases for b in info.bases):
            return f"a `{info.name}` object (a class of this file)"
        return ""

    def _inherited_refused(self, klass: str, method: str) -> tuple[str, tuple[int, ...]] | None:
        """(what, refused tuple positions) when `self.<method>` is a method that a library base of `klass`
        (or of its in-file bases) provides and whose result the weights-only unpickler refuses
        (vocabulary weights_only_refused_inherited: PyG's `InMemoryDataset.collate`); None otherwise,
        and when the class defines the method itself."""
        known = vocab().weights_only_refused_inherited
        for name in lineage_of(self.model, klass):
            info = self.model.classes[name]
            if self.model.function(f"{name}.{method}") is not None:
                return None
            for base in info.bases:
                returned = known.get(base, {}).get(method)  # the bases are qualified
                if returned is not None:
                    return (f"a `{returned['holds']}` object, returned by `{base.rsplit('.', 1)[-1]}.{method}`",
                            tuple(returned["at"]))
        return None

    def _unpacked_refused(self, name: str, scope, klass: str, save: cst.Call | None) -> str:
        """`data, slices = self.collate(data_list)`: a name bound by unpacking an inherited library method's
        result (once, or last above the save), at a position that holds the refused object."""
        defs = _read_by_save(name, scope, save)
        if not klass or not defs or len(defs) != 1 or defs[0].how != "assign" or defs[0].index is None:
            return ""
        value = defs[0].value
        callee = dotted_name(value.func) or "" if isinstance(value, cst.Call) else ""
        if not (callee.startswith("self.") and callee.count(".") == 1):
            return ""
        inherited = self._inherited_refused(klass, callee[5:])
        return inherited[0] if inherited is not None and defs[0].index in inherited[1] else ""

    def _attribute_refused(self, attr: str, depth: int, klass: str) -> str:
        """What `self.<attr>` may hold that the weights-only unpickler refuses: a value a method of
        `klass` assigns to it, or appends or inserts into it (a list of per-epoch NumPy means)."""
        for qualname, (info, analysis) in self.model.function_home.items():
            if info.klass != klass:
                continue
            scope = analysis.scope_of(info.node)
            for inner in iter_nodes(info.node):
                value = None
                if type(inner) is cst.Assign and len(inner.targets) == 1 and \
                        code(inner.targets[0].target) == f"self.{attr}":
                    value = inner.value
                elif type(inner) is cst.Call and isinstance(inner.func, cst.Attribute) and \
                        inner.func.attr.value in ("append", "insert") and inner.args and \
                        code(inner.func.value) == f"self.{attr}":
                    value = inner.args[-1].value
                what = self._refused(value, scope, depth + 1, klass) if value is not None else ""
                if what:
                    return f"{what}, stored in `self.{attr}` by `{qualname}`"
        return ""


def _read_by_save(name: str, scope, save: cst.Call | None) -> list:
    """The local bindings of `name` a save reads: its one binding in `scope`, or of several the last above the
    save ([] when none is, or no save is given); [] when `scope` binds it nowhere."""
    defs = scope.defs.get(name) if scope is not None else None
    return _last_above(defs, scope, save) if defs and len(defs) > 1 else list(defs or ())


def _last_above(defs: list, scope, save: cst.Call | None) -> list:
    """Of several bindings of a name in the saving function, the last one above the save in source order (the
    one the save reads on the straight path to it), as a list of one; [] when none is, or no save is given."""
    if save is None or scope is None or scope.node is None:
        return []
    values = {id(d.value): d for d in defs if d.value is not None}
    last = None
    for node in iter_nodes(scope.node):
        if node is save:
            return [last] if last is not None else []
        last = values.get(id(node), last)
    return []
