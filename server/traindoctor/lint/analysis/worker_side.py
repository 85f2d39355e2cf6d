"""Randomness that only DataLoader worker processes draw.

A DataLoader with `num_workers > 0` runs its dataset's item access (`__getitem__`...) and its
batching hooks (`collate_fn`) in worker processes, and each worker reseeds global RNGs from a
base seed drawn from the parent's torch generator (`worker_reseeded_rngs`, rules/vocab/torch.yaml):
what is drawn there repeats when the program seeds torch. This module finds the methods of a
class that only workers run, and whether the loaders that run an object start workers."""

from __future__ import annotations

import libcst as cst

from .def_use import parents_of
from .environment import torch_version
from .facts import Draw
from .model import FileModel, lineage_of, reachable_methods
from .names import dotted_name
from .randomness import arg
from .vocab import vocab
from ..walk import iter_nodes


def reseeded_in_workers(model: FileModel, library: str) -> bool:
    """Workers reseed this global RNG on the torch the file's project runs with."""
    since = vocab().worker_reseeded_rngs.get(library)
    if since is None:
        return False
    version = torch_version(model.path)
    return version is None or version >= tuple(int(p) for p in str(since).split("."))


def is_loader_class(model: FileModel, klass: str) -> bool:
    """An in-file subclass (directly or through in-file bases) of torch's DataLoader."""
    loaders = vocab().dataloaders
    return any(base in loaders for owner in lineage_of(model, klass) for base in model.classes[owner].bases)


def worker_methods(model: FileModel, klass: str, init_calls: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The methods of `klass` that run only where a DataLoader's workers run it: a dataset's item
    access and what it calls on `self`, a loader subclass's hooks handed as `collate_fn=self.m`;
    and `__init__` when what it draws is only what the objects it binds on `self` draw, and only
    those methods call them (`init_calls`: the other modules' names `__init__` calls, its summary's
    `calls`)."""
    if klass not in model.classes:
        return ()
    roots: set[str] = set()
    if klass in model.dataset_classes:
        roots |= vocab().dataset_worker_roots
    if is_loader_class(model, klass):
        roots |= _hooks_handed_to_workers(model, klass)
    if not roots:
        return ()
    lineage = lineage_of(model, klass)
    defined = {q.rsplit(".", 1)[-1] for q in model.function_home for owner in lineage
               if q.startswith(owner + ".") and q.count(".") == 1}
    found = reachable_methods(model, klass, tuple(sorted(roots))) & defined
    # a method that `__init__` or another method the main process runs calls is not only the workers'
    main = tuple(sorted(defined - found))
    found -= reachable_methods(model, klass, main) if main else set()
    if found and _init_draws_for_workers(model, klass, found, init_calls):
        found.add("__init__")
    return tuple(sorted(found))


def _hooks_handed_to_workers(model: FileModel, klass: str) -> set[str]:
    """`collate_fn=self.m` (a loader hook that workers run) anywhere in the class's methods."""
    hooks = vocab().loader_worker_hooks
    found = set()
    for owner in lineage_of(model, klass):
        node = model.classes[owner].node
        for call in iter_nodes(node) if node is not None else ():
            if type(call) is not cst.Call:
                continue
            for a in call.args:
                name = dotted_name(a.value) if a.keyword is not None and a.keyword.value in hooks else None
                if name and name.startswith("self.") and name.count(".") == 1:
                    found.add(name[5:])
    return found


def _init_draws_for_workers(model: FileModel, klass: str, workers: set[str], init_calls: tuple[str, ...]) -> bool:
    """`__init__` draws nothing itself, and each call of another module's name it makes (which the
    project index counts as drawing what that class or function draws) builds an object bound on
    `self` that only worker methods call."""
    qualname = f"{klass}.__init__"
    if qualname not in model.function_home or not init_calls:
        return False
    if any(d.function == qualname for _, d in model.draws_of_class.get(klass, ())):
        return False
    uses = [u for _, u in model.method_uses.get(klass, ())]
    built = {}
    for _, obj in model.objects_of_owner.get(klass, ()):
        if obj.where == "__init__":
            built.setdefault(obj.callee.rsplit(".", 1)[-1], []).append(obj.name.removeprefix("self."))
    for callee in init_calls:
        attrs = built.get(callee.rsplit(".", 1)[-1])
        if not attrs:
            return False  # a call whose result is not kept on `self`: it may draw right here
        readers = {u.method for u in uses if u.attr in attrs}
        if not readers or readers - workers:
            return False
    return True


def workers_run(model: FileModel, site: cst.Call, loader: bool) -> bool:
    """Every loader that runs the object `site` builds starts workers: the loader itself (a
    DataLoader subclass) with `num_workers` > 0, or for a dataset, each DataLoader it is handed
    to directly or through the one local name it is bound to, and nothing else reads that name."""
    scope = _enclosing(model, site)
    if loader:
        return positive_count(model, _workers_arg(site, scope))
    if scope is None:
        return False
    loaders = [c for c in iter_nodes(scope) if type(c) is cst.Call and _is_dataloader(model, c)]
    for call in loaders:
        if _dataset_arg(call) is site:
            return positive_count(model, _workers_arg(call, scope))
    bound = next((s for s in iter_nodes(scope) if type(s) is cst.Assign and s.value is site and
                  len(s.targets) == 1 and type(s.targets[0].target) is cst.Name), None)
    if bound is None:
        return False
    name = bound.targets[0].target.value
    handed = [c for c in loaders if type(_dataset_arg(c)) is cst.Name and _dataset_arg(c).value == name]
    reads = [n for n in iter_nodes(scope) if type(n) is cst.Name and n.value == name
             and n is not bound.targets[0].target]
    return bool(handed) and len(reads) == len(handed) and \
        all(positive_count(model, _workers_arg(c, scope)) for c in handed)


def transform_run_by_workers(model: FileModel, site: cst.Call) -> bool:
    """`site` builds a transform, an object that a dataset calls on each item, and every dataset it
    is handed to is run by loaders that start workers (`workers_run`). Handed means an argument of
    the dataset's construction: directly, inside a list or a composing transform
    (`transforms.Compose([Normalizer(), Augmenter()])`, rules/vocab/torch.yaml `transform_composers`),
    or through the one local name that holds it. The datasets are the file's and the project's
    dataset classes, and the library datasets that apply their `transform` in `__getitem__`."""
    scope = _enclosing(model, site)
    if scope is None:
        return False
    parents = model.remembered(("worker_side.parents", id(scope)), lambda: parents_of(scope))
    return _handed_to_datasets(model, site, scope, parents, depth=3)


def _handed_to_datasets(model: FileModel, node: cst.CSTNode, scope: cst.CSTNode, parents, depth: int) -> bool:
    v = vocab()
    while True:
        parent = parents.get(id(node))
        if type(parent) in (cst.Element, cst.List, cst.Tuple):
            node = parent
            continue
        if type(parent) is cst.Arg and parent.value is node and not parent.star:
            call = parents.get(id(parent))
            if type(call) is not cst.Call:
                return False
            callee = model.names.qualify(call.func) or dotted_name(call.func) or ""
            if _builds_dataset(model, callee, parent):
                return workers_run(model, call, False)
            if callee not in v.transform_composers:
                return False  # a function that takes the transform may call it right here
            node = call
            continue
        if type(parent) is cst.Assign and parent.value is node and depth > 0 and len(parent.targets) == 1 and \
                type(parent.targets[0].target) is cst.Name:
            name = parent.targets[0].target
            reads = [n for n in iter_nodes(scope) if type(n) is cst.Name and n.value == name.value and n is not name]
            return bool(reads) and all(_handed_to_datasets(model, read, scope, parents, depth - 1) for read in reads)
        return False


def _builds_dataset(model: FileModel, callee: str, argument: cst.Arg) -> bool:
    """A call that builds a dataset the transform is handed to: a dataset class of this file or of the
    project, or a library dataset given it as its `transform` (which it applies in `__getitem__`)."""
    last = callee.rsplit(".", 1)[-1]
    if last in model.dataset_classes:
        return True
    if model.imported:
        found = model.imported.klass(callee)
        if found is not None:
            return found.dataset
    keyword = argument.keyword.value if argument.keyword is not None else ""
    return keyword in vocab().dataset_transform_keywords and \
        any(callee.startswith(prefix) for prefix in vocab().transforming_dataset_prefixes)


def positive_count(model: FileModel, expr: cst.BaseExpression | None) -> bool:
    """A count known to be above 0: a literal, a module constant, or the default of the argparse
    option that `args.<dest>` reads (`args` bound to `parser.parse_args()` in the file)."""
    if expr is None:
        return False
    if type(expr) is cst.Integer:
        return expr.evaluated_value > 0
    if type(expr) is cst.Name:
        text = model.constants.get(expr.value, "")
        return text.isdigit() and int(text) > 0
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name:
        defaults = model.remembered("worker_side.argparse", lambda: _argparse_defaults(model))
        receivers, options = defaults
        return expr.value.value in receivers and options.get(expr.attr.value, 0) > 0
    return False


def _argparse_defaults(model: FileModel) -> tuple[frozenset[str], dict[str, int]]:
    """Names bound to `<parser>.parse_args()` or to a call of an in-file function that returns it, and
    each option's integer default (0 when the option is defined twice or its default is not an
    integer literal)."""
    receivers, options, seen = set(), {}, set()
    getters = set()  # in-file functions that return the parsed options (`def get_args(): ... return args`)
    nodes = [node for top in model.facts["layout"] if top.node is not None for node in iter_nodes(top.node)]
    for node in nodes:
        if type(node) is cst.Assign and type(node.value) is cst.Call and \
                (dotted_name(node.value.func) or "").endswith(".parse_args"):
            receivers.update(t.target.value for t in node.targets if type(t.target) is cst.Name)
    for node in nodes:
        if type(node) is cst.FunctionDef and any(
                type(r) is cst.Return and r.value is not None and (
                    (type(r.value) is cst.Name and r.value.value in receivers) or
                    (type(r.value) is cst.Call and (dotted_name(r.value.func) or "").endswith(".parse_args")))
                for r in iter_nodes(node.body)):
            getters.add(node.name.value)
    for node in nodes:
        if getters and type(node) is cst.Assign and type(node.value) is cst.Call and \
                type(node.value.func) is cst.Name and node.value.func.value in getters:
            receivers.update(t.target.value for t in node.targets if type(t.target) is cst.Name)
    for node in nodes:
        if type(node) is cst.Call and (dotted_name(node.func) or "").endswith(".add_argument"):
            dest = _option_dest(node)
            if dest is None:
                continue
            default = arg(node, "default", None)
            value = default.evaluated_value if type(default) is cst.Integer else 0
            options[dest] = 0 if dest in seen else value
            seen.add(dest)
    return frozenset(receivers), options


def _option_dest(call: cst.Call) -> str | None:
    explicit = arg(call, "dest", None)
    if type(explicit) is cst.SimpleString:
        return explicit.evaluated_value
    for a in call.args:
        if a.keyword is None and type(a.value) is cst.SimpleString and a.value.evaluated_value.startswith("--"):
            return a.value.evaluated_value[2:].replace("-", "_")
    return None


def _is_dataloader(model: FileModel, call: cst.Call) -> bool:
    return (model.names.qualify(call.func) or "") in vocab().dataloaders


def _dataset_arg(call: cst.Call) -> cst.BaseExpression | None:
    return arg(call, "dataset", vocab().dataloader_positions["dataset"])


def _workers_arg(call: cst.Call, scope: cst.CSTNode | None) -> cst.BaseExpression | None:
    """`num_workers=`, positional, or the `'num_workers'` entry of a `**params` dict display that
    the one local assignment of `params` in the scope builds."""
    found = arg(call, "num_workers", vocab().dataloader_positions["num_workers"])
    if found is not None or scope is None:
        return found
    for a in call.args:
        if a.star != "**" or type(a.value) is not cst.Name:
            continue
        bindings = [n for n in iter_nodes(scope) if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign)
                    and any(type(t) is cst.Name and t.value == a.value.value for t in _targets(n))]
        if len(bindings) != 1 or type(bindings[0]) is not cst.Assign or type(bindings[0].value) is not cst.Dict:
            continue  # rebound, updated in place or built elsewhere: what it holds is not known here
        if any(type(n) is cst.Call and type(n.func) is cst.Attribute and dotted_name(n.func.value) == a.value.value
               for n in iter_nodes(scope)):
            continue  # `params.update(...)`
        for element in bindings[0].value.elements:
            if type(element) is cst.DictElement and type(element.key) is cst.SimpleString and \
                    element.key.evaluated_value == "num_workers":
                return element.value
    return None


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if type(node) is cst.Assign:
        return [t.target for t in node.targets]
    return [node.target]


def _enclosing(model: FileModel, site: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost in-file function whose body holds `site`, else its top-level statement."""
    function = model.enclosing_function(site)
    if function is not None:
        return function.node

    def index() -> dict[int, cst.CSTNode]:
        return {id(node): top.node for top in model.facts["layout"] if top.node is not None
                for node in iter_nodes(top.node)}
    return model.remembered("worker_side.top-level", index).get(id(site))


# -- draws that a constructor argument switches off -----------------------------------------------------

def worker_draw_guards(model: FileModel, klass: str, methods: tuple[str, ...]) -> tuple[tuple, ...]:
    """For each of `methods` (of `klass`, defined in it) that draws only under a test of an attribute
    that `__init__` binds from one of its parameters against string literals (`if self.partition ==
    'train': np.random.shuffle(points)`), and that nothing else in the class rebinds: (method, the
    attribute, the parameter, its position after `self`, the literals that let it draw, the parameter's
    default literal or None). An object built with another literal never draws there, wherever it runs."""
    found = []
    for method in methods:
        guard = _draw_guard(model, klass, method)
        if guard is not None:
            found.append((method, *guard))
    return tuple(found)


def guard_switches_off(model: FileModel, site: cst.Call, guard: tuple) -> bool:
    """The object `site` builds never draws in the guarded method: the parameter's argument (or its
    default) is a string literal the guard does not let draw, and this file never sets that attribute."""
    _, attribute, param, position, literals, default = guard
    if any(a.star for a in site.args):
        return False
    value = arg(site, param, position)
    text = value.evaluated_value if type(value) is cst.SimpleString else default if value is None else None
    if not isinstance(text, str) or text in literals:
        return False
    return not _file_sets_attribute(model, attribute)


def _file_sets_attribute(model: FileModel, name: str) -> bool:
    """Some statement of the file outside a `self.` binding sets `<obj>.<name>`: the attribute the guard
    reads may be set on the object after it is built."""
    def compute():
        stores = set()
        for top in model.facts["layout"]:
            for node in iter_nodes(top.node) if top.node is not None else ():
                if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                    targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                    stores.update(t.attr.value for t in targets if type(t) is cst.Attribute and
                                  dotted_name(t.value) != "self")
                elif type(node) is cst.Call and dotted_name(node.func) == "setattr":
                    stores.add("*")
        return frozenset(stores)
    stores = model.remembered("worker_side.attribute-stores", compute)
    return name in stores or "*" in stores


def _draw_guard(model: FileModel, klass: str, method: str) -> tuple | None:
    qualname = f"{klass}.{method}"
    home = model.function_home.get(qualname)
    init = model.function_home.get(f"{klass}.__init__")
    if home is None or init is None or not isinstance(home[0].node, cst.FunctionDef) or \
            not isinstance(init[0].node, cst.FunctionDef):
        return None
    function = home[0].node
    parents = parents_of(function)
    drawing = _drawing_calls(model, klass, qualname, function)
    if not drawing:
        return None
    attribute, literals = None, set()
    for call in drawing:
        test = _guarding_test(call, function, parents)
        if test is None or (attribute is not None and test[0] != attribute):
            return None
        attribute = test[0]
        literals |= test[1]
    bound = _bound_from_parameter(model, klass, init[0].node, attribute)
    if bound is None:
        return None
    param, position, default = bound
    return attribute, param, position, tuple(sorted(literals)), default


def _drawing_calls(model: FileModel, klass: str, qualname: str, function: cst.FunctionDef) -> list[cst.Call]:
    """The calls in the method that draw from a global RNG: its own draws, calls of in-file functions
    and methods that draw (directly or through what they call), and of project names that draw."""
    drawing = _drawing_functions(model)
    own = {id(d.node) for d in model.facts["seeding"] if isinstance(d, Draw) and d.function == qualname}
    found = []
    for node in iter_nodes(function):
        if type(node) is not cst.Call:
            continue
        name = dotted_name(node.func) or ""
        target = f"{klass}.{name[5:]}" if name.startswith("self.") else name
        if id(node) in own or target in drawing or (model.imported and any(
                how == "draws" for _, how, _ in model.imported.randomness(model.names.qualify(node.func)))):
            found.append(node)
    return found


def _drawing_functions(model: FileModel) -> frozenset[str]:
    """Qualnames of the in-file functions that draw, directly or through in-file calls."""
    def compute():
        found = {d.function for d in model.facts["seeding"] if isinstance(d, Draw) and d.function}
        changed = True
        while changed:
            changed = False
            for callee, sites in model.calls.items():
                for site in sites:
                    caller = model.enclosing_function(site.node)
                    if caller is None or caller.qualname in found:
                        continue
                    target = f"{caller.klass}.{callee[5:]}" if callee.startswith("self.") else callee
                    if target in found:
                        found.add(caller.qualname)
                        changed = True
        return frozenset(found)
    return model.remembered("worker_side.drawing-functions", compute)


def _guarding_test(call: cst.Call, function: cst.FunctionDef, parents) -> tuple[str, set[str]] | None:
    """The innermost `if self.<attr> == 'a'` / `in ('a', 'b')` whose body holds `call`: (attr, literals)."""
    node = call
    while node is not function:
        parent = parents.get(id(node))
        if parent is None:
            return None
        if type(parent) is cst.If and node is parent.body:
            found = _attribute_literals(parent.test)
            if found is not None:
                return found
        node = parent
    return None


def _attribute_literals(test: cst.BaseExpression) -> tuple[str, set[str]] | None:
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    left, target = test.left, test.comparisons[0]
    right, operator = target.comparator, type(target.operator)
    if operator is cst.Equal and type(left) is cst.SimpleString:
        left, right = right, left
    name = dotted_name(left) or ""
    if not name.startswith("self.") or name.count(".") != 1:
        return None
    if operator is cst.Equal and type(right) is cst.SimpleString:
        return name[5:], {right.evaluated_value}
    if operator is cst.In and type(right) in (cst.Tuple, cst.List, cst.Set) and right.elements and \
            all(type(e.value) is cst.SimpleString for e in right.elements):
        return name[5:], {e.value.evaluated_value for e in right.elements}
    return None


def _bound_from_parameter(model: FileModel, klass: str, init: cst.FunctionDef,
                          attribute: str) -> tuple[str, int, str | None] | None:
    """`__init__` binds `self.<attribute>` to one of its parameters, once, and no other statement of the
    class (nor of its in-file bases) stores into it: (parameter, position after self, default literal)."""
    stores = []
    for owner in lineage_of(model, klass):
        node = model.classes[owner].node
        for n in iter_nodes(node) if node is not None else ():
            if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = [t.target for t in n.targets] if type(n) is cst.Assign else [n.target]
                if any(dotted_name(t) == f"self.{attribute}" for t in targets):
                    stores.append(n)
                elif any(type(t) in (cst.Tuple, cst.List) and any(
                        dotted_name(e.value) == f"self.{attribute}" for e in t.elements) for t in targets):
                    return None  # `self.a, self.b = ...`: what it binds is not followed
            elif type(n) is cst.Call and dotted_name(n.func) == "setattr":
                return None
    if len(stores) != 1 or type(stores[0]) is not cst.Assign or type(stores[0].value) is not cst.Name:
        return None
    if not any(s is stores[0] for s in iter_nodes(init)):
        return None
    params = list(init.params.params)[1:]
    name = stores[0].value.value
    rebound = [n for n in iter_nodes(init) if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and any(
        type(t) is cst.Name and t.value == name
        for t in ([t.target for t in n.targets] if type(n) is cst.Assign else [n.target]))]
    for position, param in enumerate(params):
        if param.name.value == name and not rebound:
            default = param.default
            if default is not None and type(default) is not cst.SimpleString:
                return None
            return name, position, default.evaluated_value if default is not None else None
    return None
