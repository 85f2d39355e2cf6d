"""A file's summary (summary.py) from its file model: the facts another file may read.

The top layer of the analysis: what a function returns is values.py's answer (`Values.summary`),
what it does is training.py's and the seeding facts' (the same queries the in-file rules
ask), so that one owner decides each fact in and across files.
"""

from __future__ import annotations

import libcst as cst

from ..walk import iter_nodes
from .autograd_off import class_turns_grad_off, runs_without_grad, wraps_without_grad
from .evaluation import evaluated_parameters, evaluates_own
from .events import BACKWARD, STEP
from .facts import Checkpoint, Draw
from .meters import accumulated_params, returned_from_params
from .model import FileModel
from .names import dotted_name
from .scopes import code, mentions_any
from .seed_draws import returns_its_draw
from .summary import (Binding, ClassSummary, FileSummary, FunctionSummary, OutgoingCall, PassedArgument, imports_of,
                      literal_path)
from .training import training_of
from .values import PASSED_ZERO, Values, as_facts
from .vocab import vocab
from .worker_side import is_loader_class, worker_draw_guards, worker_methods

# Object kinds worth telling another file about (model.py's kind_of_callee).
_BINDING_KINDS = ("model", "scaler", "loss", "optimizer", "scheduler", "dataloader", "dataset", "sequential")

# Libraries whose module aliases a star import passes on (`F`, `nn`, `np`): the ones rules qualify names of.
_ALIAS_ROOTS = frozenset(("torch", "numpy", "math", "random", "torchvision", "torchaudio"))


def summarize_model(model: FileModel) -> FileSummary:
    """Call before `model.lint_done()` or after: it uses its own per-lint memo either way."""
    functions, methods = [], {}
    draws: dict[str, set[str]] = {}
    kept: dict[str, set[str]] = {}  # RNGs some draw of the function uses otherwise than returning it
    for fact in model.facts["seeding"]:
        if isinstance(fact, Draw):
            draws.setdefault(fact.function, set()).add(fact.library)
            if not returns_its_draw(model, fact):
                kept.setdefault(fact.function, set()).add(fact.library)
    only_returned = {name: libraries - kept.get(name, set()) for name, libraries in draws.items()}
    top_level = {name for top in model.facts["layout"] for name in top.names}
    for qualname, (info, _) in model.function_home.items():
        if info.klass and qualname.count(".") == 1:
            methods.setdefault(info.klass, []).append(function_summary(model, qualname, draws, only_returned))
        elif not info.klass and "." not in qualname and qualname in top_level:
            functions.append(function_summary(model, qualname, draws, only_returned))
    classes = []
    for name, info in model.classes.items():
        scaler = any(model.kind_of_callee(obj.callee) == "scaler" for _, obj in
                     model.objects_of_owner.get(name, ()) if obj.where == "__init__")
        grad_off = class_turns_grad_off(model.names, info.node) if isinstance(info.node, cst.ClassDef) else None
        own = tuple(methods.get(name, ()))
        init = next((m for m in own if m.qualname == f"{name}.__init__"), None)
        init_calls = tuple(c for c in init.calls if c.split(".")[0] not in _ALIAS_ROOTS) if init else ()
        workers = worker_methods(model, name, init_calls)
        classes.append(ClassSummary(name, info.bases, name in model.model_classes, scaler,
                                    name in model.dataset_classes, own, grad_off, is_loader_class(model, name),
                                    workers, worker_draw_guards(model, name, workers)))
    scalers = {c.name for c in classes if c.scaler}
    bindings = []
    for name, objects in model.objects.items():
        if "." in name or "[" in name:
            continue
        callee = objects[-1].callee
        kind = "scaler" if callee.rsplit(".", 1)[-1] in scalers else model.kind_of_callee(callee)
        if kind in _BINDING_KINDS:
            bindings.append(Binding(name, kind))
    saves = []
    for fact in model.facts["program"]:
        if isinstance(fact, Checkpoint) and fact.kind == "save":
            literal = literal_path(fact.path)
            kind = saved_kind(model, fact)
            if literal is not None and kind:
                saves.append((literal, kind, fact.obj))
    statements = [top.node for top in model.facts["layout"] if top.node is not None]
    defined = sorted({name for top in model.facts["layout"] for name in top.names})
    aliases = tuple(sorted({(local, full) for local, full in model.names.aliases
                            if not local.startswith(("=", "_")) and full.split(".")[0] in _ALIAS_ROOTS}))
    return FileSummary(tuple(functions), tuple(classes), tuple(sorted(bindings, key=lambda b: b.name)),
                       tuple(sorted(set(saves))), _file_imports(model), _exports(statements), tuple(defined),
                       aliases, _outgoing(model))


def _outgoing(model: FileModel) -> tuple[OutgoingCall, ...]:
    """The file's calls of names it imports from no library (the project's own functions and classes,
    as far as this file can tell), with what each site passes: the project index hands them to the
    defining file (ImportedFacts.incoming_calls), whose parameters then know what their callers give."""
    imported = _imported_names(model) - _library_roots(model)
    starred = _star_imports_a_project_module(model)
    if not (imported or starred) or not model.analyses:
        return ()
    values = Values(model, model.analyses[0], None)
    calls: dict[str, list[tuple[cst.Call, object]]] = {}
    for callee, sites in model.calls.items():  # `fit(...)` of `from engine import fit` (or `*`)
        head = callee.split(".")[0]
        if head in imported:
            calls[callee] = [(site.node, None) for site in sites]
        elif starred and head != "self" and head not in model.module_names:
            calls[callee] = [(site.node, None) for site in sites if not _bound_locally(model, head, site.node)]
    for analysis, call, callee in _module_attribute_calls(model, imported):  # `engine.fit(...)`
        calls.setdefault(callee, []).append((call, analysis))
    found = []
    for callee, sites in sorted(calls.items()):
        passed = []
        for call, analysis in sites:
            arguments = values.arguments_at(call, analysis)
            passed.append(None if arguments is None else tuple(
                PassedArgument(position, keyword, *_passed_facts(model, value))
                for position, keyword, value in arguments))
        found.append(OutgoingCall(callee, tuple(passed)))
    return tuple(found)


def _bound_locally(model: FileModel, name: str, call: cst.Call) -> bool:
    """`name` is a parameter or a local of a function enclosing `call` (a closure, a callback argument)."""
    caller = model.enclosing_function(call)
    while caller is not None:
        home = model.function_home.get(caller.qualname)
        if home is None or name in home[1].scope_of(caller.node).defs:
            return True
        caller = model.enclosing_function(caller.node)
    return False


def _library(module: str) -> bool:
    """`module` (`torch.nn`, `timm.models`) belongs to a library whose names the rules qualify."""
    return module.split(".")[0] in _ALIAS_ROOTS or module.split(".")[0] in vocab().torch_ecosystem_roots


def _star_imports_a_project_module(model: FileModel) -> bool:
    """`from utils import *` of a module of no library: the names the file calls and never binds may be its."""
    return any(fact.name == "*" and (fact.level or not _library(fact.module))
               for fact in _file_imports(model))


def _module_attribute_calls(model: FileModel, imported: frozenset[str]):
    """(block analysis, call, callee as spelled) of each `module.f(...)` whose module is one the file imports
    from no library (`import engine`, `from pkg import engine`): the file model records calls of plain names
    only. Scanned only in the files that bind such a module: by a plain import, or by a from-import of a name
    the file never calls (a function's calls are recorded already; a capitalised name is a class's)."""
    modules = {local for local, _ in model.names.aliases if local in imported} | \
        {fact.local for fact in _file_imports(model)
         if fact.name and fact.name != "*" and fact.local in imported and fact.local[:1].islower() and
         fact.local not in model.calls}
    if not modules:
        return
    for analysis in model.analyses:
        for top in analysis.facts.layout:
            for node in iter_nodes(top.node) if top.node is not None else ():
                if type(node) is cst.Call and type(node.func) is cst.Attribute:
                    callee = dotted_name(node.func)
                    if callee is not None and callee.split(".")[0] in modules:
                        yield analysis, node, callee


def _library_roots(model: FileModel) -> frozenset[str]:
    """Local names the file binds to a library's modules (`torch`, `nn`, `np`, `pl`)."""
    return frozenset(local.lstrip("=").split(".")[0] for local, full in model.names.aliases if _library(full))


def _passed_facts(model: FileModel, value) -> tuple[tuple, str]:
    """An argument's facts worth telling the callee (a probability, a reason to be exactly 0, autograd history,
    an object) and, for an object built by a library class, its constructor (PassedArgument.ctor)."""
    facts = as_facts(value)
    if not facts or not (value.prob in ("softmax", "sigmoid") or value.zero in PASSED_ZERO or value.grad == "known" or
                         (value.kind == "object" and value.obj)):
        return (), ""
    ctor = ""
    if value.kind == "object" and isinstance(value.origin, cst.Call):
        qualified = model.names.qualify(value.origin.func) or ""
        if _library(qualified):
            ctor = qualified + "(" + ", ".join(_literal_argument(a) for a in value.origin.args) + ")"
    return facts, ctor


def _literal_argument(argument: cst.Arg) -> str:
    """An argument as another file may read it: a literal as written, anything else `...`."""
    literal = isinstance(argument.value, (cst.SimpleString, cst.Integer, cst.Float)) or \
        (isinstance(argument.value, cst.Name) and argument.value.value in ("True", "False", "None"))
    text = code(argument.value) if literal else "..."
    star = argument.star if isinstance(argument.star, str) else ""
    return f"{argument.keyword.value}={text}" if argument.keyword is not None else star + text


def function_summary(model: FileModel, qualname: str, draws: dict[str, set[str]],
                     only_returned: dict[str, set[str]] | None = None) -> FunctionSummary:
    """`draws`: function qualname -> the global RNGs drawn from there (the file's Draw facts);
    `only_returned`: those whose every draw there only becomes the function's return value."""
    info, analysis = model.function_home[qualname]
    training = training_of(model)
    returned = Values(model, analysis, None).summary(info) if info.returns else None
    imported = _imported_names(model)
    events = [e for r in training.routines(qualname) for e in r.events]
    returned_names = {dotted_name(r) for r in info.returns}
    returns_eval = any(e.kind == "eval" and e.receiver in returned_names for e in events) or any(
        isinstance(r, cst.Call) and isinstance(r.func, cst.Attribute) and r.func.attr.value == "eval"
        for r in info.returns)
    state_dict = bool(info.returns) and all(
        isinstance(r, cst.Call) and isinstance(r.func, cst.Attribute) and r.func.attr.value == "state_dict"
        for r in info.returns)
    seeds = sorted({s.kind for s in model.seeds if s.function == qualname})
    modes = tuple(dict.fromkeys(e.kind for e in events if e.kind in ("eval", "train")))
    params = set(info.params) - {"self", "cls"}
    param_modes = tuple(dict.fromkeys((e.kind, e.receiver) for e in events
                                      if e.kind in ("eval", "train") and e.receiver.partition(".")[0] in params))
    backward = info.trains or any(e.kind in ("backward", "scaled_backward") for e in events)
    evaluates, own = _evaluates(model, info, events, backward, returned)
    return FunctionSummary(
        qualname, info.params,
        returns=_told(as_facts(returned)) if returned is not None else (),
        returns_ctor=_passed_facts(model, returned)[1] if returned is not None and returned.kind == "object" else "",
        returns_eval=returns_eval,
        returns_state_dict=state_dict,
        seeds=tuple(seeds),
        draws=tuple(sorted(draws.get(qualname, ()))),
        returned_draws=tuple(sorted((only_returned or {}).get(qualname, ()))),
        zeroes=any(e.kind == "zero_grad" for e in events),
        backward=backward,
        no_grad=info.no_grad,
        leaves_grad_off=training.leaves_grad_off(qualname) is not None,
        modes=modes,
        param_modes=param_modes,
        set_epoch=any(e.kind == "set_epoch" for e in events),
        returns_sampling=tuple(sorted(training.returns(qualname))) if info.returns else (),
        epoch_loaders=_epoch_loaders(training, qualname, info.params),
        no_grad_decorator=is_no_grad_decorator(model, info.node, info.params),
        accumulates=accumulated_params(info.node, info.params) if info.klass and
        isinstance(info.node, cst.FunctionDef) else (),
        returns_from=returned_from_params(info.node, info.params) if isinstance(info.node, cst.FunctionDef) else (),
        calls=tuple(sorted({_qualified(model, e.receiver) for e in events
                            if e.kind == "call" and e.receiver.split(".")[0] in imported})),
        evaluates=evaluates,
        evaluates_own=own)


def _evaluates(model: FileModel, info, events, backward: bool, returned) -> tuple[tuple[str, ...], bool]:
    """evaluation.py's two facts, for a function that trains nothing (no backward, no optimizer step),
    runs with autograd on, asks for no gradients and returns nothing with autograd history."""
    function = info.node
    if backward or info.no_grad or not isinstance(function, cst.FunctionDef) or \
            any(e.kind in BACKWARD or e.kind in STEP for e in events) or runs_without_grad(model, function) or \
            (returned is not None and returned.tensor_with_history):
        return (), False
    klass = model.classes.get(info.klass) if info.klass else None
    klass_node = klass.node if klass is not None and isinstance(klass.node, cst.ClassDef) else None
    evaluates = evaluated_parameters(function, info.params, model.names)
    own = evaluates_own(function, events, klass_node)
    if (evaluates or own) and mentions_any(function, vocab().training_wants_grad_words):
        return (), False
    return evaluates, own


def _epoch_loaders(training, qualname: str, params: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters a function iterates every epoch, in a file that never steps a sampler's epoch."""
    if "set_epoch" in training.event_kinds:
        return ()
    routines = [r for r in training.routines(qualname) if r.loops]
    return tuple(p for p in params if p not in ("self", "cls") and
                 any(training.epoch_loop(r, p) is not None for r in routines))


def _imported_names(model: FileModel) -> frozenset[str]:
    """Local names the file's imports bind, relative ones included (names.py skips those)."""
    return model.remembered("summary-imported-names", lambda: frozenset(
        fact.local.split(".")[0] for fact in _file_imports(model) if fact.name != "*"))


def _file_imports(model: FileModel):
    """The file's imports (summary.imports_of its top-level statements), read once per lint."""
    return model.remembered("summary-imports", lambda: imports_of(
        top.node for top in model.facts["layout"] if top.node is not None))


def _qualified(model: FileModel, name: str) -> str:
    """`name` as names.py qualifies it (a relative import's name stays as written)."""
    head, dot, rest = name.partition(".")
    full = model.names.imports.get(head)
    return full + dot + rest if full else name


def _told(facts: tuple[str, ...]) -> tuple[str, ...]:
    """A returned value worth telling other files: a number, an object, or a tensor with a fact
    (history, loss/output role, probability, zeros, unit). A bare "tensor" or "container"
    changes no rule's answer, and would make `check` lint each importer twice for nothing."""
    if facts and facts[0] in ("tensor", "container", "unknown") and not any(facts[1:]):
        return ()
    return facts


def is_no_grad_decorator(model: FileModel, function: cst.CSTNode | None, params: tuple[str, ...]) -> bool:
    """`def nograd(fn)` that returns `torch.no_grad()(fn)`, or a wrapper that calls `fn` only
    with autograd off (autograd_off.wraps_without_grad decides that)."""
    if not isinstance(function, cst.FunctionDef) or not params:
        return False
    wrapped = params[0] if params[0] not in ("self", "cls") else (params[1] if len(params) > 1 else "")
    if not wrapped:
        return False
    v = vocab()

    def disables(expr: cst.BaseExpression) -> bool:
        func = expr.func if isinstance(expr, cst.Call) else expr
        return (model.names.qualify(func) or "") in v.no_grad_contexts

    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and stmt.body and isinstance(stmt.body[0], cst.Return):
            value = stmt.body[0].value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Call) and disables(value.func) and \
                    any(isinstance(a.value, cst.Name) and a.value.value == wrapped for a in value.args):
                return True
    return wraps_without_grad(model, function)


def saved_kind(model: FileModel, save: Checkpoint) -> str:
    """What `torch.save(obj, path)` writes: "module" (a whole nn.Module), "state-dict", or ""
    (cannot tell). An argument that every in-file caller passes as `x.state_dict()` is a
    state dict, whatever its name."""
    if save.callee:
        kind = model.kind_of_callee(save.callee)
        if kind is None:
            return "call:" + save.callee  # perhaps a class of another file: the project index decides
        return "module" if kind == "model" else ""
    if save.obj == "self":
        return "module" if save.klass in model.model_classes else ""
    obj = save.obj.strip()
    if obj.endswith(".state_dict()"):
        return "state-dict"
    name = obj.removesuffix(".module")
    try:
        expr = cst.parse_expression(name)
    except cst.ParserSyntaxError:
        return ""
    if dotted_name(expr) is None:
        return ""
    if _passed_state_dicts(model, save, name):
        return "state-dict"
    if model.object_kind(name, save.klass) == "model":
        return "module"
    last = name.rsplit(".", 1)[-1].lower()
    return "module" if vocab().pattern("model_name_pattern").search(last) and \
        not any(word in last for word in _NOT_A_MODULE) else ""


_NOT_A_MODULE = ("state", "dict", "sd", "ckpt", "checkpoint", "param", "weight", "optim", "config", "args")


def _passed_state_dicts(model: FileModel, save: Checkpoint, name: str) -> bool:
    """`name` is a parameter of the saving function and every in-file call passes a state dict there."""
    home = model.function_home.get(save.function)
    if home is None or name not in home[0].params:
        return False
    info = home[0]
    params = [p for p in info.params if p not in ("self", "cls")]
    position = params.index(name) if name in params else -1
    sites = model.call_sites(info.name, info.klass)
    if not sites:
        return False
    for site in sites:
        call = site.node
        if not isinstance(call, cst.Call):
            return False
        keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        value = keyword if keyword is not None else positional[position] if 0 <= position < len(positional) else None
        if not _is_state_dict(value):
            return False
    return True


def _is_state_dict(expr: cst.BaseExpression | None) -> bool:
    """`m.state_dict()`, or a dict display of them (a checkpoint dict holds no module)."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value == "state_dict"
    if isinstance(expr, cst.Dict):
        return bool(expr.elements) and all(isinstance(e, cst.DictElement) and
                                           (_is_state_dict(e.value) or not isinstance(e.value, (cst.Name, cst.Call)))
                                           for e in expr.elements)
    return False


def _exports(statements) -> tuple[str, ...] | None:
    """`__all__ = ["a", "b"]` (a list or tuple of strings), else None."""
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == "__all__"
                                                     for t in small.targets) and \
                    isinstance(small.value, (cst.List, cst.Tuple)):
                names = [e.value.evaluated_value for e in small.value.elements
                         if isinstance(e.value, cst.SimpleString)]
                return tuple(n for n in names if isinstance(n, str))
    return None
