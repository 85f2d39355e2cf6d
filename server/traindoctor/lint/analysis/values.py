"""Value facts per expression: a small lattice the rules query.

- `kind`: tensor | scalar (a Python number) | object (a model, a loss module...) | container | unknown;
- `grad`: known | likely | "" (no autograd history, or cannot tell), with `role` loss/output and `origin`;
- `prob`: softmax | sigmoid | prob (a probability by name) | logprob | logits (known raw scores: a Linear
  layer's output, `outputs.logits`, a model or function returning one) | exp (an exponential: a ratio of
  them is a softmax or sigmoid written out) | tanh (exactly +-1 in float32 for |x| above about 9.1) | "";
- `named`: `prob`/`zero` come from the name of a value from outside (`mask`, `probs`), not from code;
- `unit`: what an aggregate counts (TRN304): mean (a batch mean: a mean-reduced loss, `.mean()`) | sum (a
  sum over a batch's samples: correct counts, reduction="sum", mean * batch size) | size (a batch's number
  of samples) | samples (a data set's: `len(loader.dataset)`, accumulated sizes) | batches (`len(loader)`,
  `+= 1` per batch, enumerate index + 1) | means (per-batch means summed over the batches) | "";
- `zero`: why it can be exactly 0 (zero | count | spread | norm | squares | mask | selected: a ReLU's
  (or `clamp(min=0)`'s) output, 0 exactly where ReLU's backward passes no gradient, so that sqrt of it
  has gradient 0 there, not inf | underflow: a softplus output, exactly 0 in float32 where its input is below about -104
  (exp underflows; log there is -inf, and the gradient of log or sqrt NaN) | saturated: `1 - t**2` of a
  tanh output `t`, exactly 0 where the tanh saturates | diff: `a - b`, 0 where
  the two are equal | tested: the function itself compares it with 0
  or clamps it to at least 1 elsewhere, see zero_evidence.py | offdiag: a mask that zeroes only a diagonal
  (`1 - torch.eye(n)`, SupContrast's scattered `logits_mask`, see diagonal_mask.py): a row or column sum of a
  positive value times it keeps the other entries, so it is not 0 | selfpair: a value compared with itself in
  another layout (`torch.eq(labels, labels.T)`), true on the diagonal, so its row sums are at least 1 until a
  mask removes the diagonal | rows: a norm or sum over the rows of data the
  function was given (a parameter no in-file caller fills with a learned output), 0 for an all-zero row:
  a padded position, an isolated node, an all-zero pixel), or "safe" (kept away from 0 by
  construction or a guard: clamp, where, + eps, max(x, eps), an exp, a positive literal), or "one"
  (`n + 1` of an `n` that can be 0: exactly 1 there, so its log is 0), or "cancels": a squared distance
  expanded as `|x|^2 + |y|^2 - 2 x.y` (or `addmm(..., alpha=-2)`), which rounding makes exactly 0 or slightly
  negative where two points coincide (every diagonal entry of a set against itself); `clamp(min=0)` keeps it,
  since clamp passes the gradient at an input of exactly 0; or "shortcut": a variance computed as
  `mean(x**2) - mean(x)**2`, exactly 0 or negative by cancellation for a constant input, or wherever the
  mean is large next to the spread (torch.var is computed stably).
  A square, `abs` or sum of squares can be 0 only where its base can: the square of a learned
  output, a gradient or a positive gain is not "possibly 0" (its norm never is, in practice).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from ..walk import iter_nodes
from .collect import BlockAnalysis
from .diagonal_mask import diagonal_scatter, identity_complement, reflexive_comparison
from .names import arg, dotted_name, item_key, literal_number
from .scopes import Scope, returns
from .vocab import vocab
from .zero_evidence import subject, zero_evidence


@dataclass(frozen=True)
class Value:
    kind: str = "unknown"
    grad: str = ""
    role: str = ""
    prob: str = ""  # for kind "object": what calling it returns (`_SQUASHED`), known from its constructor
    zero: str = ""
    obj: str = ""  # for kind "object": model | loss | softmax | sigmoid | sequential | ...
    origin: cst.CSTNode | None = field(default=None, compare=False)
    elements: "Value | None" = None  # for a container: what each element is (joined)
    items: "tuple[Value, ...] | None" = None  # for a tuple or list display (a function's `return a, b`): each one
    unit: str = ""
    # `prob`/`zero` guessed from the name of a value from outside (`mask`, `probs`), not read from code
    named: bool = field(default=False, compare=False)

    @property
    def tensor_with_history(self) -> bool:
        return self.kind in ("tensor", "unknown") and self.grad in ("known", "likely")


@dataclass(frozen=True)
class LossCall:
    """The loss a call applies: `F.cross_entropy(z, y)`, `nn.CrossEntropyLoss()(z, y)`, or
    `criterion(z, y)` where `criterion` holds a loss object (built in `__init__`, a dict, ...)."""

    loss: str  # qualified name of the loss function, or of the loss object's class
    ctor: cst.Call | None = field(default=None, compare=False)  # the object's constructor; None: a function
    shared: bool = False  # the object is bound to a name: other calls may use it too
    # the other loss objects the name is bound to on other paths (`if multi_label: self.loss = nn.BCELoss()
    # else: self.loss = nn.CrossEntropyLoss()`): which one a call applies is decided at run time
    alternatives: "tuple[LossCall, ...]" = field(default=(), compare=False)

    def possible(self) -> "tuple[LossCall, ...]":
        """This loss, then each other one the callee may hold."""
        return (self, *self.alternatives)


# Reasons a sum or mean of the value keeps (a sum of ReLU outputs is 0 where each is, and its
# backward still reaches them only through ReLU's).
_ZERO_KEPT_BY_SUMS = ("squares", "zero", "selected", "underflow")
# Reasons a value can be exactly 0; "safe" and "one" are kept away from it.
ZERO_POSSIBLE = frozenset(("zero", "count", "spread", "norm", "squares", "mask", "selected", "diff", "tested",
                           "underflow", "saturated", "rows", "cancels", "shortcut", "offdiag",
                           "selfpair"))
# Reasons a parameter takes from its callers' arguments (`_passed_in`): what the value is, wherever it
# is read; a difference or a caller's own test of it says nothing inside the callee.
PASSED_ZERO = frozenset(("zero", "count", "spread", "norm", "squares", "selected", "underflow", "offdiag",
                         "selfpair"))
_NONZERO = ("safe", "one")
_NONZERO_REASONS = frozenset(_NONZERO)
# Reasons that only a square, a norm, a division or a log reads: in a product or a sum they say nothing.
_ONLY_DIRECT = ("diff", "tested", "one", "cancels", "shortcut")
_CANCELLING = ("cancels", "shortcut")  # clamp(min=0) keeps them: its backward passes the gradient at exactly 0
# How deep a caller's argument is read for `_passed_in` and `_callers_pass_data`: their answers are cached
# for every later read, so they must not depend on the depth of the read that asked first.
_PASSED_IN_DEPTH = 20


@dataclass(frozen=True)
class ModuleCaller:
    """A call made by module-level code (a script's `fit(Net(), loader)`, `Trainer(model)`): its arguments
    are read in the block that holds it, at module scope."""

    analysis: BlockAnalysis
    node: None = None
    klass: str = ""
_SATURATING = ("softmax", "sigmoid", "tanh")  # probabilities (and tanh) that reach exactly 0 or 1 in float32
_SQUASHED = ("softmax", "sigmoid", "logprob", "logits", "tanh")  # what a model output's last step makes it
UNKNOWN = Value()
SCALAR = Value("scalar")
_GRAD_RANK = {"": 0, "likely": 1, "known": 2}


def as_facts(value: Value) -> tuple:
    """A Value as plain strings (a project summary's `returns`: picklable, no parse-tree nodes); a
    returned tuple (`return torch.sigmoid(h), mu`) adds its items' facts, when one has any."""
    if value == UNKNOWN:
        return ()
    facts: tuple = (value.kind, value.grad, value.role, value.prob, value.zero, value.obj, value.unit)
    items = tuple(as_facts(item) for item in value.items) if value.items is not None else ()
    return facts + (items,) if any(items) else facts


def from_facts(facts: tuple, origin: cst.CSTNode | None = None) -> Value:
    """The Value another file's summary says a function returns (as_facts' inverse)."""
    if len(facts) not in (7, 8):
        return UNKNOWN
    kind, grad, role, prob, zero, obj, unit = facts[:7]
    items = tuple(from_facts(item, origin) for item in facts[7]) if len(facts) == 8 else None
    return Value(kind, grad, role, prob, zero, obj, origin if grad else None, unit=unit, items=items)


def _model_output_items(summary: Value, call: cst.Call) -> Value | None:
    """`model(x)` of a forward that returns a tuple (`return torch.sigmoid(h), mu, logvar`): an output
    whose items keep their facts, so that `recon, mu, logvar = model(x)` knows `recon` is a sigmoid."""
    if summary.items is None or \
            not any(item.prob in _SATURATING or item.zero in ZERO_POSSIBLE for item in summary.items):
        return None
    # raw scores among the items are left unsaid: TRN405 reads them, and a VAE's `logvar.exp()` is the KL's own
    items = tuple(replace(item, kind="tensor", grad=item.grad or "known", role=item.role or "output",
                          prob=item.prob if item.prob in _SATURATING else "", origin=item.origin or call)
                  if item.kind in ("tensor", "unknown") else item for item in summary.items)
    return Value("tensor", "known", "output", origin=call, items=items)


def join(a: Value, b: Value) -> Value:
    """What a value is when it may be either (branches, `+`, accumulation)."""
    kind = a.kind if a.kind == b.kind else ("tensor" if "tensor" in (a.kind, b.kind) else "unknown")
    grad = a if _GRAD_RANK[a.grad] >= _GRAD_RANK[b.grad] else b
    items = tuple(join(x, y) for x, y in zip(a.items, b.items)) \
        if a.items is not None and b.items is not None and len(a.items) == len(b.items) else None
    elements = join(a.elements, b.elements) if a.elements is not None and b.elements is not None else None
    return Value(kind, grad.grad, grad.role, a.prob if a.prob == b.prob else "", "", "", grad.origin,
                 elements if kind == "container" else None, unit=a.unit if a.unit == b.unit else "",
                 items=items if kind == "container" else None)


def _zeros_replaced_by(call: cst.Call) -> cst.BaseExpression | None:
    """In `where(x == 0, y, x)` (or `where(x != 0, x, y)`): `y`, what every exact 0 of `x` becomes."""
    cond, first, second = arg(call, 0, "condition"), arg(call, 1, "x"), arg(call, 2, "y")
    if type(cond) is not cst.Comparison or len(cond.comparisons) != 1 or first is None or second is None:
        return None
    test = cond.comparisons[0]
    zero_right = type(test.comparator) in (cst.Integer, cst.Float) and float(test.comparator.evaluated_value) == 0.0
    tested = subject(cond.left) if zero_right else None
    if tested is None:
        return None
    if type(test.operator) is cst.Equal and dotted_name(second) == tested:
        return first
    if type(test.operator) is cst.NotEqual and dotted_name(first) == tested:
        return second
    return None


def positive_constant(node: cst.BaseExpression) -> bool:
    """`1e-8`, `eps`, `self.eps`, `EPSILON`, `torch.finfo(x.dtype).eps`."""
    number = literal_number(node)
    if number is not None:
        return number > 0
    name = dotted_name(node) or (node.attr.value if isinstance(node, cst.Attribute) else None)
    return name is not None and bool(vocab().pattern("eps_name_pattern").search(name.rsplit(".", 1)[-1]))


def reduction_unit(call: cst.Call) -> str:
    """The unit of a loss built or called with these arguments: mean unless reduction says otherwise."""
    reduction = arg(call, 99, "reduction")
    legacy = arg(call, 99, "size_average")
    if legacy is not None:
        return "sum" if isinstance(legacy, cst.Name) and legacy.value == "False" else ""
    if reduction is None:
        return "mean"
    if isinstance(reduction, cst.SimpleString):
        return {"mean": "mean", "sum": "sum"}.get(reduction.value.strip("'\""), "")
    return ""


def _reduced(method: str, call: cst.Call, receiver: Value, skip: int = 0) -> str:
    """The unit of `x.mean()`/`x.sum()` (or torch.mean/torch.sum, whose tensor is argument 0)."""
    positional = [a for a in call.args if a.keyword is None][skip:]
    if positional or any(a.keyword is not None and a.keyword.value in ("dim", "axis") for a in call.args):
        return ""  # a per-sample reduction
    if receiver.unit in ("mean", "sum"):
        return receiver.unit  # loss.sum() of a scalar mean loss is still a mean
    if method == "mean":
        return "mean"
    return "sum" if receiver.zero == "mask" else ""  # (pred == y).sum(): a count of samples


class Values:
    """Evaluates expressions of one block against the file model. `walk` gives the
    current position when a rule asks; `of(expr, at, function, klass)` is explicit."""

    def __init__(self, model, analysis: BlockAnalysis, walk) -> None:
        self.model = model
        self.analysis = analysis
        self.walk = walk
        self.v = vocab()
        self._memo: dict[tuple[int, int], Value] = {}
        self._loss_calls: dict[int, tuple[cst.Call, LossCall | None]] = {}  # four rules ask at each call

    def __call__(self, expr: cst.BaseExpression) -> Value:
        walk = self.walk
        klass = walk.klass.name.value if walk.klass is not None else ""
        return self.of(expr, walk.order, walk.function, klass)

    def scope(self) -> Scope:
        return self.analysis.scope_of(self.walk.function)

    def evidence(self, function: cst.FunctionDef | None) -> dict[str, cst.CSTNode]:
        """Names `function` itself compares with 0 or clamps to at least 1 (zero_evidence.py)."""
        if function is None:
            return {}
        home = self.model.analysis_holding(function)
        return home.zero_evidence(function, self.model.names) if home is not None else \
            zero_evidence(function.body, self.model.names.qualify)

    def loss_call(self, call: cst.Call) -> LossCall | None:
        """What loss `call` applies, or None when its callee is neither a loss function of torch
        nor a loss object. A bare `nn.BCELoss(x, y)` builds an object: it applies nothing.
        Ask while the walk is at `call`: the first answer is kept for the other rules."""
        known = self._loss_calls.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        found = self._loss_call(call)
        self._loss_calls[id(call)] = (call, found)
        return found

    def _loss_call(self, call: cst.Call) -> LossCall | None:
        func = call.func
        if type(func) is cst.Call:
            return LossCall(self.model.names.qualify(func.func) or "", func)
        qualified = self.model.names.qualify(func) or ""
        if qualified.startswith("torch.") and not qualified.rsplit(".", 1)[-1][:1].isupper():
            return LossCall(qualified)
        if type(func) is cst.Attribute and not self._may_name_object(func):
            return None
        found = self(func)
        if found.kind == "object" and found.obj == "loss" and type(found.origin) is cst.Call:
            return LossCall(self.model.names.qualify(found.origin.func) or "", found.origin, shared=True,
                            alternatives=self._other_losses(func, found.origin))
        return None

    def _may_name_object(self, func: cst.Attribute) -> bool:
        """Whether `_name_value` can find an object for the attribute `func`: `self.x`, or a dotted
        name this function or the module binds (`args.criterion = nn.MSELoss()`). Any other
        attribute's value is an attribute of its base's value (`_output_attribute`), never an
        object, so `x.view(...)` and `model(x).sum()` are not evaluated only to learn they are no
        loss object: that was a tenth of a lint, once per method call."""
        name = dotted_name(func)
        if name is None:
            return False
        if name.startswith("self.") and name.count(".") == 1:
            return True
        return name in self.scope().defs or name in self.analysis.module_scope.defs

    def _other_losses(self, func: cst.BaseExpression, chosen: cst.Call) -> "tuple[LossCall, ...]":
        """The loss objects a module-level name or `self.` attribute is bound to besides `chosen` (the
        binding the value reads): one per constructor, in file order."""
        name = dotted_name(func)
        if name is None:
            return ()
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        found = []
        for obj in self.model.objects.get(name, ()):
            ctor = obj.node
            if ctor is chosen or type(ctor) is not cst.Call or (name.startswith("self.") and obj.owner != klass):
                continue
            if self.model.kind_of_callee(obj.callee) == "loss":
                found.append(LossCall(self.model.names.qualify(ctor.func) or "", ctor, shared=True))
        return tuple(found)

    def summary(self, info) -> Value:
        """The joined Value of an in-file function's returned expressions (a FuncInfo),
        once per lint (kept in the model's `summaries`)."""
        summaries = self.model.summaries
        if info.qualname in summaries:
            return summaries[info.qualname]
        summaries[info.qualname] = UNKNOWN  # recursion guard
        _, analysis = self.model.function_home[info.qualname]
        values = Values(self.model, analysis, None)
        result = UNKNOWN
        for index, ret in enumerate(r for r in returns(info.node) if r.value is not None):
            value = values.of(ret.value, 10**9, function=info.node, klass=info.klass)
            result = value if index == 0 else join(result, value)
        summaries[info.qualname] = result
        return result

    def global_value(self, name: str, before: BlockAnalysis | None) -> Value | None:
        """The value of a module-level name bound (outside top-level loops) in another
        block: the last binding above `before` (a module-level use), or the last one."""
        model = self.model
        homes = model.global_defs.get(name)
        if not homes:
            return None
        candidates = [a for a in homes if before is None or a.index < before.index]
        if not candidates or candidates[-1] is before:
            return None
        home = candidates[-1]
        values = self._evaluator(home)
        definition = home.module_scope.lookup(name, 10**9)
        if definition is None or definition.value is None:
            return None
        return values._definition(definition, None, "", 30)

    def of(self, expr: cst.BaseExpression, at: int, function: cst.FunctionDef | None = None, klass: str = "",
           depth: int = 40) -> Value:
        key = (id(expr), at)
        found = self._memo.get(key)
        if found is None:
            self._memo[key] = UNKNOWN  # cycles
            found = self._eval(expr, at, function, klass, depth) if depth > 0 else UNKNOWN
            self._memo[key] = found
        return found

    # -- evaluation ------------------------------------------------------------------

    def _eval(self, expr, at, function, klass, depth) -> Value:
        sub = lambda e, a=at: self.of(e, a, function, klass, depth - 1)  # noqa: E731
        number = literal_number(expr)
        if number is not None:
            return Value("scalar", zero="safe" if number > 0 else "zero")
        t = type(expr)
        if t is cst.Name or t is cst.Attribute:
            return self._name(expr, at, function, klass, depth)
        if t is cst.Call:
            return self._call(expr, at, function, klass, depth)
        if t is cst.Subscript:
            stored = self._stored_item(expr, at, function, klass, depth)
            if stored is not None:
                return stored
            name = dotted_name(expr.value)
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            if name is not None and isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                key = f"{name}[{index.value.value.strip(chr(39) + chr(34))}]"
                kind = self.model.object_kind(key, klass)
                if kind is not None:
                    return Value("object", obj=kind, origin=self.model.object(key, klass).node)
            if isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape" and \
                    isinstance(index, cst.Index) and literal_number(index.value) == 0:
                return Value("scalar", unit="size")
            inner = sub(expr.value)
            position = literal_number(index.value) if isinstance(index, cst.Index) else None
            if inner.items is not None and position is not None and position == int(position) and \
                    -len(inner.items) <= position < len(inner.items):
                return inner.items[int(position)]  # out[1] of `return logits, loss`
            if inner.elements is not None:
                return inner.elements
            kept = inner.zero if inner.zero in ("mask", "squares", "zero", "selected", "rows") else ""
            return replace(inner, zero=kept) \
                if inner.kind != "object" else UNKNOWN
        if t is cst.BinaryOperation:
            value = self._binary(expr, sub, lambda name: self._last_binding(name, at, function))
            if type(expr.operator) is cst.Add and not value.zero and \
                    self._entries_of_input(expr, at, function, klass, depth):
                return replace(value, zero="rows")  # confmat[0, 1] + confmat[1, 0] + confmat[1, 1]
            return value
        if t is cst.UnaryOperation:
            if identity_complement(expr, self.model.names.qualify):
                return Value("tensor", zero="offdiag")  # ~torch.eye(n, dtype=torch.bool)
            inner = sub(expr.expression)
            return Value("tensor", zero="mask") if isinstance(expr.operator, cst.BitInvert) else \
                replace(inner, prob="", zero="")
        if t is cst.Comparison:
            return Value("unknown", zero="selfpair" if reflexive_comparison(expr, self.model.names.qualify) else
                         "mask")
        if t is cst.IfExp:
            return join(sub(expr.body), sub(expr.orelse))
        if t in (cst.List, cst.Tuple, cst.Set):
            items = [sub(e.value) for e in expr.elements]
            found = self._container(items)
            if t is not cst.Set and not any(type(e) is cst.StarredElement for e in expr.elements):
                found = replace(found, items=tuple(items))
            return found
        if t is cst.Dict:
            return self._container([sub(e.value) for e in expr.elements if isinstance(e, cst.DictElement)])
        if t in (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString):
            return SCALAR
        return UNKNOWN

    def _stored_item(self, expr: cst.Subscript, at, function, klass, depth) -> Value | None:
        """`outputs['hm']` after this function stored `outputs['hm'] = torch.sigmoid(...)` (and did
        not rebind `outputs` since): what was stored."""
        key = item_key(expr)
        if key is None:
            return None
        scope = self.analysis.scope_of(function)
        stored = scope.lookup(key, at)
        if stored is None or stored.how != "assign":
            return None
        base = scope.lookup(key.split("[", 1)[0], at)
        if base is not None and base.order > stored.order:
            return None  # the dict itself was rebound after the store
        return self._definition(stored, function, klass, depth)

    def _container(self, items: list[Value]) -> Value:
        if not items:
            return Value("container")
        element = items[0]
        for item in items[1:]:
            element = join(element, item)
        return Value("container", element.grad, element.role, origin=element.origin, elements=element)

    def _name(self, expr, at, function, klass, depth) -> Value:
        found = self._name_value(expr, at, function, klass, depth)
        if not found.zero and found.kind not in ("object", "container") and function is not None:
            name = dotted_name(expr)
            if name is not None and name in self.evidence(function):
                return replace(found, zero="tested")
        return found

    def _name_value(self, expr, at, function, klass, depth) -> Value:
        name = dotted_name(expr)
        if name is None:
            if isinstance(expr, cst.Attribute):  # model(**batch).logits
                return self._output_attribute(self.of(expr.value, at, function, klass, depth - 1), expr.attr.value)
            return UNKNOWN
        scope = self.analysis.scope_of(function)
        definition = scope.lookup(name, at)
        if definition is None and function is not None and name not in scope.defs:
            definition = self.analysis.module_scope.lookup(name, at if function is None else 10**9)
        if definition is None and "." not in name and name not in scope.defs:
            found = self.global_value(name, self.analysis if function is None else None)
            if found is not None:
                return found
        backward = scope.backward.get(name)
        if definition is not None and definition.how != "param":
            found = self._definition(definition, function, klass, depth, name)
            if found.kind == "object" and found.obj == "model":
                found = self._head_replaced(found, name, definition, at, function, klass, depth)
            if definition.grad_off and found.grad:
                found = replace(found, grad="")  # bound under no_grad/inference_mode: no autograd history
            if backward is not None and found.grad != "known" and found.kind not in ("container", "object") and \
                    scope.reaches_backward(name, definition) and not _reads_no_grad_binding(scope, definition) and \
                    not self._set_up_once(definition.value, function, klass):
                return Value("tensor", "known", "loss", origin=backward, unit=found.unit)
            if not found.zero and not found.prob and found.kind != "object" and \
                    not _from_literal_data(definition.value):  # `mask = batch["attention_mask"]`
                by_name = self._by_name(name)
                return by_name if by_name.zero == "mask" else found
            return found
        if backward is not None:
            return Value("tensor", "known", "loss", origin=backward)
        if definition is not None and "." not in name:
            declared = self._annotated(definition.annotation)
            if declared is not None:
                return declared  # the author's own annotation: a Python number has no gradient
            passed = self._passed_in(name, function, klass, depth)  # what the callers pass, first
            if passed.prob or passed.zero or passed.kind == "object":
                return passed
            kind = self.model.object_kind(name)  # a parameter named like the object the script passes in
            if kind is not None:
                return Value("object", obj=kind, origin=self.model.object(name).node)
            return self._by_name(name)
        if isinstance(expr, cst.Attribute):
            inner = self.of(expr.value, at, function, klass, depth - 1)
            attr = expr.attr.value
            if name.startswith("self.") and name.count(".") == 1:
                kind = self.model.object_kind(name, klass)
                if kind is not None:
                    return Value("object", obj=kind, origin=self.model.object(name, klass).node)
                passed = self._init_argument(attr, klass, depth)
                if passed.prob or passed.zero or passed.kind == "object":
                    return passed
            if attr in self.v.size_names:
                return Value("scalar", unit="size")  # batch.batch_size, data.num_graphs
            if attr in self.v.plain_attributes:
                return Value("tensor" if attr == "data" else "unknown")
            return self._output_attribute(inner, attr)
        kind = self.model.object_kind(name) if definition is None or definition.how == "param" else None
        if kind is not None:
            return Value("object", obj=kind, origin=self.model.object(name).node)
        return self._by_name(name)

    def _head_replaced(self, model: Value, name: str, definition, at, function, klass, depth) -> Value:
        """A torchvision classifier whose head attribute was assigned after it was built, before `at`
        (`model.fc = nn.Sequential(nn.Linear(512, 10), nn.Softmax(dim=1))`): its call returns what the
        new head's call returns (vocabulary classifier_heads)."""
        if not isinstance(model.origin, cst.Call):
            return model
        qualified = self.model.names.qualify(model.origin.func) or ""
        head = next((attr for prefix, attr in self.v.classifier_heads.items() if qualified.startswith(prefix)), None)
        replaced = self.analysis.scope_of(function).lookup(f"{name}.{head}", at) if head else None
        if replaced is None or replaced.order <= definition.order or replaced.how != "assign" or replaced.value is None:
            return model
        new = self.of(replaced.value, replaced.order - 1, function, klass, depth - 1)
        squashed = new.prob if new.kind == "object" and new.prob in _SQUASHED else ""
        return replace(model, prob=squashed)

    def _set_up_once(self, value, function, klass: str) -> bool:
        """`value` is `self.attr`, bound only in the class's `__init__`, read in another method.
        A tensor with history built once cannot be backpropagated on every call (the second
        backward through its graph raises), so `.backward()` on it is the object's own method
        (a project's loss accumulator), not evidence of a loss tensor."""
        if not klass or not isinstance(value, cst.Attribute) or dotted_name(value.value) != "self" or \
                function is None or function.name.value == "__init__":
            return False
        return self._set_only_in_init(klass, value.attr.value)

    def _set_only_in_init(self, klass: str, attr: str) -> bool:
        """`self.attr` is assigned in the in-file class's `__init__` and in no other method of it (once per lint)."""
        info = self.model.classes.get(klass)
        if info is None or info.node is None:
            return False
        writers = self.model.remembered(("self-attribute-writers", klass), lambda: _self_attribute_writers(info.node))
        return writers.get(attr) == {"__init__"}

    def _passed_in(self, param: str, function, klass: str, depth: int) -> Value:
        """A parameter's probability fact when every in-file call of its function passes one
        (`self.discriminator_loss(*self.discriminate(z))` of a method returning two sigmoids),
        its zero fact when every one passes a value that can be exactly 0 for a reason that
        holds wherever it is read (`kl(mu, softplus(h))`, `helper(relu(x))`, `norm(counts)`), and
        the object when every one passes an instance of one class (`loss(actor, obs)`). Calls from module-level
        code count like any other (`fit(Classifier(3), loader)` at the bottom of a script), and so do the calls
        of the project's other files (`train_one_epoch(model, loader, nn.CrossEntropyLoss())` in main.py)."""
        if function is None or depth <= 2:
            return UNKNOWN
        qualname = f"{klass}.{function.name.value}" if klass else function.name.value
        home = self.model.function_home.get(qualname)
        if home is None or home[0].node is not function or param not in home[0].params:
            return UNKNOWN
        key = ("passed-in", qualname, param)
        summaries = self.model.summaries
        if key in summaries:
            return summaries[key]  # type: ignore[return-value]
        summaries[key] = UNKNOWN  # recursion guard
        info = home[0]
        position = info.params.index(param) - (1 if klass and info.params[:1] == ("self",) else 0)
        found: Value | None = None
        zeros: set[str] = set()
        objects: set[str] = set()  # the classes of the objects passed, while every call passes one
        passed_object: Value | None = None
        all_objects = True
        for value in self._passed_values(info, qualname, param, position):
            if value is None:
                found = None
                break
            found = value if found is None else join(found, value)
            zeros.add(value.zero if value.zero in PASSED_ZERO else "")
            if value.kind == "object" and value.obj:
                objects.add(self._constructor_of(value))
                passed_object = passed_object or value
            else:
                all_objects = False
            if not found.prob and "" in zeros and not all_objects:
                break
        if found is not None and all_objects and len(objects) == 1:
            result = passed_object  # every call passes an instance of one class (`loss_fn(actor, obs)`)
        elif found is not None and found.prob in ("softmax", "sigmoid"):
            result = found
        elif found is not None and zeros and "" not in zeros:
            result = Value("tensor", zero=zeros.pop() if len(zeros) == 1 else "zero")
        else:
            result = UNKNOWN
        summaries[key] = result
        return result

    def _passed_values(self, info, qualname: str, param: str, position: int):
        """What each call of the function passes for `param`, lazily: its in-file calls (None for one whose
        caller is unknown), then the calls of the project's other files (ImportedFacts.incoming_calls)."""
        for call, caller, lookup in self._call_sites(info):
            # a budget of its own: the result is kept for every later read, whatever depth asked first
            yield None if caller is None else self._argument(call, param, position, caller, lookup, _PASSED_IN_DEPTH)
        for site in self.model.imported.incoming_calls(qualname):
            yield self._passed_elsewhere(site, param, position)

    def _passed_elsewhere(self, site, param: str, position: int) -> Value:
        """The value another project file's call passes for `param` (summary.OutgoingCall's site: its
        arguments' facts; None where a star argument hides them). An object built by a library class comes
        with its constructor, parsed here: the rules read a loss object's class and arguments from it (it
        has no place in this file, so no fix or related location can point at it)."""
        if site is None:
            return UNKNOWN
        passed = next((a for a in site if a.keyword == param), None) or \
            next((a for a in site if a.keyword == "" and a.position == position), None)
        if passed is None or not passed.facts:
            return UNKNOWN
        value = from_facts(passed.facts)
        return replace(value, origin=self._constructor_from(passed.ctor)) if value.kind == "object" else value

    def _constructor_from(self, source: str) -> cst.Call | None:
        """A library constructor another file's summary spells (PassedArgument.ctor), parsed once per lint."""
        return self.model.remembered(("summary-constructor", source), lambda: _parsed_call(source))

    def arguments_at(self, call: cst.Call, block: BlockAnalysis | None = None) -> "list[tuple[int, str, Value]] | None":
        """What each argument of `call` is where the call is made (its enclosing function, or the module-level
        code of `block`, the block holding it, when the file model records no call there), by position among
        the positional ones (-1 for a keyword); None when a star argument hides how they map to parameters or
        the call's place is unknown. What a file tells the functions of the others it calls (summarize.py)."""
        caller = self._caller_of(call) or (ModuleCaller(block) if block is not None else None)
        if caller is None or any(a.star for a in call.args):
            return None
        values = self._evaluator(self._caller_analysis(caller))
        found, position = [], 0
        for a in call.args:
            value = values.of(a.value, 10**9, caller.node, caller.klass, _PASSED_IN_DEPTH - 2)
            if a.keyword is not None:
                found.append((-1, a.keyword.value, value))
            else:
                found.append((position, "", value))
                position += 1
        return found

    def _init_argument(self, attr: str, klass: str, depth: int) -> Value:
        """`self.attr` of a class whose `__init__` binds it to one of its parameters (`self.model = model`) and no
        other method rebinds it: what every in-file construction of the class passes there (`Trainer(Net())`)."""
        home = self.model.function_home.get(f"{klass}.__init__")
        if home is None:
            return UNKNOWN
        init = home[0]
        param = next((name for owner, target, name in home[1].self_assignments
                      if owner == klass and target == f"self.{attr}" and name in init.params), None)
        if param is None or param in ("self", "cls") or not self._set_only_in_init(klass, attr):
            return UNKNOWN
        if any(d.how != "param" for d in home[1].scope_of(init.node).defs.get(param, ())):
            return UNKNOWN  # rebound inside __init__ before (or after) it is kept
        return self._passed_in(param, init.node, klass, depth)

    def _constructor_of(self, value: Value) -> str:
        """The class an object Value was built from, as its constructor call names it (qualified
        through the file's imports): two models of different classes are different objects."""
        call = value.origin
        if isinstance(call, cst.Call):
            return self.model.names.qualify(call.func) or dotted_name(call.func) or value.obj
        return value.obj

    def _call_sites(self, info):
        """(call, calling FuncInfo or None, class whose `self.` methods the call's arguments name)
        for each in-file call of `info`: by its name (`f(x)`, `self.f(x)` in its class or a subclass
        that keeps the methods the call names); through an instance attribute holding the function
        (`self.neg_loss = _neg_loss`, then `self.neg_loss(p, y)`); a module's `forward` through a
        call of an instance of its class (`self.focal = FocalLoss()`, then `self.focal(p, y)`).
        A caller of None (module-level code, another class's `self.f`) makes the callers unknown."""
        klass = info.klass
        sites = []
        for site in self.model.call_sites(info.name, klass):
            caller = self._caller_of(site.node)
            if caller is not None and klass and caller.klass != klass and \
                    not self._inherits_unchanged(caller.klass, klass, site.node):
                caller = None
            sites.append((site.node, caller, klass))
        if info.name == "__init__" and klass:
            sites.extend(self._constructions(klass))
        if not klass:
            for owner, attribute in self._function_attributes().get(info.name, ()):
                for site in self.model.calls.get(attribute, ()):
                    caller = self.model.enclosing_function(site.node)
                    if caller is not None and caller.klass == owner:
                        sites.append((site.node, caller, ""))
        elif info.name == "forward" and klass in self.model.model_classes:
            sites.extend((call, caller, "") for call, caller in self._instance_calls(klass))
        return sites

    def _evaluator(self, analysis: BlockAnalysis) -> "Values":
        """The model's Values of another block (made once per lint), to read an expression there."""
        values = self.model.evaluators.get(id(analysis))
        if values is None:
            values = self.model.evaluators[id(analysis)] = Values(self.model, analysis, None)
        return values  # type: ignore[return-value]

    def _caller_analysis(self, caller) -> BlockAnalysis:
        """The block that holds a caller: a function's (FuncInfo), or the module-level code's (ModuleCaller)."""
        return caller.analysis if type(caller) is ModuleCaller else self.model.function_home[caller.qualname][1]

    def _caller_of(self, call: cst.CSTNode):
        """The in-file function whose body holds `call`, a ModuleCaller for module-level code, None when
        neither is known."""
        caller = self.model.enclosing_function(call)
        if caller is not None:
            return caller
        block = self.model.remembered("values:module-call-blocks", lambda: {
            id(site.node): analysis for analysis in self.model.analyses for site in analysis.facts.calls})
        analysis = block.get(id(call))
        return ModuleCaller(analysis) if analysis is not None else None

    def _constructions(self, klass: str) -> list:
        """(call, caller, "") for each in-file `klass(...)`, whose arguments fill `klass.__init__`'s parameters.
        A subclass of it in this file may be built with other arguments: then one site is unknown."""
        sites = [(site.node, self._caller_of(site.node), "") for site in self.model.calls.get(klass, ())]
        if self.model._subclasses(frozenset((klass,))) - {klass}:
            sites.append((None, None, ""))
        return sites

    def _function_attributes(self) -> dict[str, list[tuple[str, str]]]:
        """In-file function name -> (class, `self.attr`) for each `self.attr = function` in a method:
        an instance attribute holding a plain function, called without `self`."""
        def index():
            found: dict[str, list[tuple[str, str]]] = {}
            for analysis in self.model.analyses:
                for klass, target, name in analysis.self_assignments:
                    function = self.model.function_home.get(name)
                    if function is not None and not function[0].klass:
                        found.setdefault(name, []).append((klass, target))
            return found
        return self.model.remembered("values:function-attributes", index)

    def _instance_calls(self, klass: str) -> list:
        """(call, caller) for each in-file call of an object built from `klass` (its `forward` runs)."""
        def index():
            found: dict[str, list] = {}
            for sites in self.model.calls.values():
                for site in sites:
                    func = site.node.func
                    if self.model.function(dotted_name(func) or "", "") is not None and type(func) is cst.Name:
                        continue  # a call of an in-file function
                    caller = self.model.enclosing_function(site.node)
                    if caller is None:  # module-level code: an object bound there, called there
                        obj = self.model.object(dotted_name(func) or "")
                        if obj is not None and obj.where == "module":
                            found.setdefault(obj.callee.rsplit(".", 1)[-1], []).append(
                                (site.node, self._caller_of(site.node)))
                        continue
                    _, analysis = self.model.function_home[caller.qualname]
                    values = self._evaluator(analysis)
                    callee = values.of(func, 10**9, caller.node, caller.klass, 3)  # a name or self.attr bound to a constructor
                    if callee.kind == "object" and callee.obj == "model" and type(callee.origin) is cst.Call:
                        built = (self.model.names.qualify(callee.origin.func) or "").rsplit(".", 1)[-1]
                        found.setdefault(built, []).append((site.node, caller))
            return found
        return self.model.remembered("values:instance-calls", index).get(klass, [])

    def _inherits_unchanged(self, subclass: str, base: str, call: cst.Call) -> bool:
        """`subclass` derives from `base` (in this file) and overrides none of the `self.` methods
        that `call` names: there, they are `base`'s own."""
        if subclass not in self.model._subclasses(frozenset((base,))):
            return False
        called = {n.attr.value for n in iter_nodes(call) if type(n) is cst.Attribute and type(n.value) is cst.Name
                  and n.value.value == "self"}
        return not any(f"{subclass}.{name}" in self.model.function_home for name in called)

    def _argument(self, call: cst.Call, param: str, position: int, caller, klass: str, depth: int) -> Value:
        """The value passed for `param` at `call`, a call in `caller`; `self.` methods are looked up
        in `klass` (the callee's class: the caller is that class or a subclass that keeps them)."""
        values = self._evaluator(self._caller_analysis(caller))
        at = lambda e: values.of(e, 10**9, caller.node, klass or caller.klass, depth - 2)  # noqa: E731
        for a in call.args:
            if a.keyword is not None and a.keyword.value == param:
                return at(a.value)
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) == 1 and positional[0].star == "*":
            items = at(positional[0].value).items  # f(*g()): g's returned tuple, position by position
            return items[position] if items is not None and 0 <= position < len(items) else UNKNOWN
        if any(a.star for a in positional) or not 0 <= position < len(positional):
            return UNKNOWN
        return at(positional[position].value)

    def _input_rows(self, expr: cst.BaseExpression, at: int, function, klass: str, depth: int,
                    norm: bool = False) -> bool:
        """`expr` is data this function was given: one of its parameters, through casts, shape changes,
        indexing, `abs` and local rebindings of those, that no in-file caller fills with a learned output
        or a tensor with autograd history. A row of such data can be all zeros (a padded position, an
        isolated node's adjacency row, an all-zero pixel or attribution), so a norm or sum over its rows is
        exactly 0 there. A learned layer's output (an embedding, a latent, a projection) is not: training
        never makes a whole row of it 0. For a `norm`, a model's forward input that no in-file call fills
        is taken to be such an output too: feature vectors are what norms are taken of, and a forward's
        features come from the layer before (a sum over rows is of weights, masks, adjacency)."""
        for _ in range(12):
            kind = type(expr)
            if kind is cst.Subscript:
                expr = expr.value
            elif kind is cst.Call and type(expr.func) is cst.Attribute and \
                    (expr.func.attr.value in self.v.pass_through_methods or expr.func.attr.value == "abs"):
                expr = expr.func.value
            elif kind is cst.Call and expr.args and (self.model.names.qualify(expr.func) or "") in \
                    ("abs", "torch.abs", *self.v.zero_row_keeping_functions):
                expr = expr.args[0].value  # abs, or a resampling of rows: `F.interpolate(weights, size=n)`
            elif kind is cst.IfExp:  # `adj.unsqueeze(0) if adj.dim() == 2 else adj`: data on both branches
                return self._input_rows(expr.body, at, function, klass, depth - 1, norm) and \
                    self._input_rows(expr.orelse, at, function, klass, depth - 1, norm)
            else:
                break
        if type(expr) is not cst.Name or function is None or depth <= 2:
            return False
        definition = self.analysis.scope_of(function).lookup(expr.value, at)
        if definition is None:
            return False
        if definition.how == "assign" and definition.index is None and definition.value is not None:
            return self._input_rows(definition.value, definition.order - 1, function, klass, depth - 1, norm)
        return definition.how == "param" and self._callers_pass_data(expr.value, function, klass, depth, norm)

    def _entries_of_input(self, expr: cst.BinaryOperation, at: int, function, klass: str, depth: int) -> bool:
        """`a[0, 1] + a[1, 0] + a[1, 1]`: a sum of entries of one tensor of data the function is given
        (`_input_rows`), 0 where those entries all are, as a sum over a row is."""
        terms: list[cst.BaseExpression] = []
        pending: list[cst.BaseExpression] = [expr]
        while pending:
            term = pending.pop()
            if type(term) is cst.BinaryOperation and type(term.operator) is cst.Add:
                pending += [term.left, term.right]
            else:
                terms.append(term)
        if any(type(term) is not cst.Subscript for term in terms):
            return False
        bases = {dotted_name(term.value) for term in terms}  # type: ignore[attr-defined]
        return len(bases) == 1 and None not in bases and self._input_rows(terms[0], at, function, klass, depth)

    def _callers_pass_data(self, param: str, function, klass: str, depth: int, norm: bool = False) -> bool:
        """No call of `function`, in this file or another project file, passes a learned output, a tensor with
        history or a random draw (in-file) for `param` (none at all: a library function, whose input is its user's
        data; for a `norm`, a model's forward with no call is fed by the layer before, see `_input_rows`)."""
        if param in ("self", "cls"):
            return False
        qualname = f"{klass}.{function.name.value}" if klass else function.name.value
        home = self.model.function_home.get(qualname)
        if home is None or home[0].node is not function or param not in home[0].params:
            return False
        key = ("passed-data", qualname, param, norm)
        summaries = self.model.summaries
        if key not in summaries:
            summaries[key] = UNKNOWN  # recursion guard: a recursive call passes nothing new
            info = home[0]
            position = info.params.index(param) - (1 if klass and info.params[:1] == ("self",) else 0)
            sites = self._call_sites(info)
            elsewhere = self.model.imported.incoming_calls(qualname)
            learned = norm and not sites and not elsewhere and function.name.value == "forward" and \
                klass in self.model.model_classes
            for call, caller, lookup in sites:
                if caller is None:
                    continue
                value = self._argument(call, param, position, caller, lookup, _PASSED_IN_DEPTH)
                if value.grad == "known" or value.kind == "object" or _learned_output(value) or \
                        self._drawn_at_random(_argument_node(call, param, position), caller):
                    learned = True
                    break
            # another file's call that passes a tensor with history or an object gives no data either
            learned = learned or any(value.grad == "known" or value.kind == "object" for value in
                                     (self._passed_elsewhere(site, param, position) for site in elsewhere))
            summaries[key] = UNKNOWN if learned else Value("tensor")
        return summaries[key] is not UNKNOWN

    def _drawn_at_random(self, expr: cst.BaseExpression | None, caller) -> bool:
        """`expr`, in `caller`, is a draw from a continuous distribution (`torch.randn(n, d)`, a chunk of
        one, a local bound to one): none of its rows is all zeros."""
        analysis = self._caller_analysis(caller)
        for _ in range(6):
            if type(expr) is cst.Name:
                definition = analysis.scope_of(caller.node).lookup(expr.value, 10**9)
                expr = definition.value if definition is not None and definition.how == "assign" else None
            elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
                    (self.model.names.qualify(expr.func) or "") not in self.v.continuous_samplers:
                expr = expr.func.value  # torch.randn(2 * n, d).chunk(2), .to(device), .view(...)
            elif type(expr) is cst.Subscript:
                expr = expr.value
            elif type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Multiply:
                expr = expr.left  # torch.randn(n, d) * sigma
            else:
                break
        return type(expr) is cst.Call and (self.model.names.qualify(expr.func) or "") in self.v.continuous_samplers

    def _output_attribute(self, inner: Value, attr: str) -> Value:
        if inner.grad and attr in ("loss", "losses"):
            return replace(inner, role="loss", kind="tensor", unit="mean" if attr == "loss" else "")
        if inner.grad and inner.kind != "object" and attr in self.v.output_attributes:
            return replace(inner, prob="logits" if attr in self.v.logits_attributes else "", zero="",
                           unit="")  # outputs.logits; not pipeline(...).images
        return UNKNOWN

    def _annotated(self, annotation: cst.BaseExpression | None) -> Value | None:
        """A parameter annotated as a Python number (`lr: float`), or as a container of them
        (`avg_deg: Dict[str, float]`, `sizes: List[int]`): no tensor, no autograd history. Other
        annotations (`Tensor`, a project class) say nothing the values do not already."""
        if annotation is None:
            return None
        if type(annotation) is cst.SimpleString:  # a string annotation: `"float"`
            annotation = cst.Name(annotation.evaluated_value) if str(annotation.evaluated_value).isidentifier() \
                else annotation
        name = dotted_name(annotation)
        if name is not None:
            return Value("scalar") if name in self.v.number_annotations else None
        if type(annotation) is cst.Subscript and dotted_name(annotation.value) in self.v.container_annotations:
            last = next((e.slice for e in reversed(annotation.slice)
                         if type(e.slice) is not cst.Index or type(e.slice.value) is not cst.Ellipsis), None)
            element = self._annotated(last.value) if type(last) is cst.Index else None  # Tuple[float, ...]
            if element is not None and element.kind == "scalar":
                return Value("container", elements=element)
        return None

    def _by_name(self, name: str) -> Value:
        """What people name probabilities and masks, for values from outside."""
        last = name.rsplit(".", 1)[-1]
        if last in self.v.size_names:
            return Value("scalar", unit="size")
        if self.v.pattern("prob_name_pattern").match(last):
            return Value("unknown", prob="prob", named=True)
        if self.v.pattern("mask_var_pattern").match(last):
            return Value("unknown", zero="mask", named=True)
        return UNKNOWN

    def _definition(self, definition, function, klass, depth, name: str | None = None) -> Value:
        value = definition.value
        if value is None:
            return UNKNOWN
        at = definition.order - 1
        if definition.how == "assign" and name is not None and isinstance(value, cst.BinaryOperation) and \
                isinstance(value.operator, cst.Add) and name in (dotted_name(value.left), dotted_name(value.right)):
            other = value.right if dotted_name(value.left) == name else value.left  # x = x + increment
            bound = self.of(other, at, function, klass, depth - 1)
            total = self._accumulated(definition, other, bound, function, at, klass, depth)
            return replace(bound, unit=total) if bound.grad else Value("unknown", unit=total)
        bound = self.of(value, at, function, klass, depth - 1)
        if definition.how == "aug":
            total = self._accumulated(definition, value, bound, function, at, klass, depth) \
                if definition.op == "AddAssign" else ""
            return replace(join(bound, UNKNOWN), unit=total) if bound.grad else Value("unknown", unit=total)
        if definition.how == "iter" and definition.index == 0 and isinstance(value, cst.Call) and \
                dotted_name(value.func) == "enumerate" and \
                self.loader_kind(value, at, function, klass, depth - 1) == "batches":
            return Value("scalar", unit="index")
        if definition.how == "iter":
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                    value.func.attr.value in ("items", "values") and definition.index != 0:
                container = self.of(value.func.value, at, function, klass, depth - 1)
                return container.elements or UNKNOWN
            element = bound.elements
            if element is not None and definition.index is not None and element.items is not None and \
                    definition.index < len(element.items):
                return element.items[definition.index]  # for loss, out in results: each position's own facts
            return element or UNKNOWN
        if definition.index is not None:
            if bound.items is not None and definition.index < len(bound.items):
                return bound.items[definition.index]  # preds, loss = step(...) of `return preds, loss`
            if isinstance(value, cst.Call) and (dotted_name(value.func) or "").rsplit(".", 1)[-1] in self.v.wrappers:
                positional = [a.value for a in value.args if a.keyword is None and not a.star]
                return self.of(positional[definition.index], at, function, klass, depth - 1) \
                    if definition.index < len(positional) else UNKNOWN
            return bound if bound.grad == "known" and bound.role == "output" else UNKNOWN
        return bound

    def _call(self, call, at, function, klass, depth) -> Value:
        v = self.v
        sub = lambda e: self.of(e, at, function, klass, depth - 1)  # noqa: E731
        func = call.func
        qualified = self.model.names.qualify(func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if last in v.wrappers:  # DDP(model), torch.compile(model), accelerator.prepare(model, opt)
            first = arg(call, 0)
            return sub(first) if first is not None else UNKNOWN
        if last == "scatter" and diagonal_scatter(call, self.model.names.qualify):
            return Value("tensor", zero="offdiag")  # ones with 0 at (i, i) only
        if isinstance(func, cst.Attribute) and not qualified.startswith(("torch.", "numpy.", "math.")):
            method = func.attr.value
            receiver = sub(func.value)
            if receiver.kind == "object":
                if method in ("to", "cuda", "cpu", "half", "float", "bfloat16", "double", "train"):
                    return receiver  # Net().cuda(), model.to(device), model.train(): the same object
                if receiver.obj == "model" and method in v.model_methods_with_history:
                    return Value("tensor", "known", "loss" if "loss" in method else "output", origin=call)
                return UNKNOWN
            if method == "item":
                return replace(receiver, kind="scalar", grad="", role="")
            if (method == "size" and call.args and literal_number(call.args[0].value) == 0) or method == "numel":
                return Value("scalar", unit="size")
            if method in v.python_number_methods or method in ("tolist",):
                return SCALAR
            if method in ("detach", "detach_", "numpy"):
                return replace(receiver, grad="", role="", kind="tensor" if method != "numpy" else "unknown")
            if method in v.no_history_methods:
                if reflexive_comparison(call, self.model.names.qualify):
                    return Value("tensor", zero="selfpair")  # labels.eq(labels.T): true on the diagonal
                return Value("tensor", zero="mask" if method in ("eq", "ne", "lt", "le", "gt", "ge", "bool") else "")
            if method in ("softmax", "sigmoid"):
                return replace(receiver, kind="tensor", prob=method, zero="", origin=receiver.origin or call)
            if method == "log_softmax" or method in v.exponential_methods:
                return replace(receiver, kind="tensor", prob="logprob" if method == "log_softmax" else "exp",
                               zero="safe")
            if method in v.pass_through_methods:
                return receiver
            if method in ("sum", "mean"):
                zero = _summed(receiver) or \
                    ("rows" if over_rows(call, 0) and self._input_rows(func.value, at, function, klass, depth) else "")
                return replace(receiver, prob="", zero=zero, unit=_reduced(method, call, receiver))
            if method in v.scaled_product_methods and _minus_two_alpha(call, 1):
                return replace(receiver, prob="", zero="cancels")  # d.addmm(x, y.t(), alpha=-2)
            if method in v.contraction_methods and len(call.args) == 1 and call.args[0].keyword is None:
                return replace(receiver, prob="", zero=_contracted([receiver, sub(call.args[0].value)]))
            if method in ("std", "var"):
                return replace(receiver, prob="", zero="" if _learned_output(receiver) else "spread")
            if method == "norm":
                return replace(receiver, prob="", zero="" if _learned_output(receiver) else
                               "rows" if over_rows(call, 1) and
                               self._input_rows(func.value, at, function, klass, depth, norm=True)
                               else "norm")
            if method in ("clamp", "clamp_", "clamp_min", "clip"):
                low = arg(call, 0, "min")
                floor = low is not None and literal_number(low) == 0.0 and receiver.zero not in _CANCELLING
                return replace(receiver, prob="", zero="safe" if low is not None and positive_constant(low) else
                               "selected" if floor else receiver.zero)
            if method == "tanh" and not call.args:
                return replace(receiver, kind="tensor", prob="tanh", zero="", origin=call)
            if method == "relu" and not call.args:
                return replace(receiver, prob="", zero="selected")
            if method in ("abs", "square") and not call.args:
                return replace(receiver, prob="", zero=_squared(receiver))
            if method == "pow" and call.args and _even(call.args[0].value):
                return replace(receiver, prob="", zero=_squared(receiver))
            if method in ("log", "log1p") and not call.args:
                return replace(receiver, prob="", zero=_logged(method, receiver))
            if method in ("masked_fill", "masked_fill_", "where"):
                return replace(receiver, prob="", zero="safe")  # a guard's form: what it fills in is unknown
            if receiver.grad:
                return replace(receiver, prob="", zero="")
            return self._callee_object(call, func, at, function, klass, depth)
        if qualified:
            if qualified in v.indicator_functions:  # F.one_hot(y, k): 0 everywhere but one entry per row
                return Value("tensor", zero="selfpair" if reflexive_comparison(call, self.model.names.qualify)
                             else "mask")
            if last in v.loss_functions and qualified.startswith("torch.nn.functional."):
                return Value("tensor", "known", "loss", origin=call, unit=reduction_unit(call))
            if qualified in v.softmax or qualified in v.sigmoid:
                inner = sub(arg(call, 0, "input") or call)
                return Value("tensor", inner.grad, "output", "softmax" if qualified in v.softmax else "sigmoid",
                             origin=call)
            if qualified in v.pass_through_functions:  # torch.squeeze(out): what `out` is
                first = arg(call, 0, "input")
                return sub(first) if first is not None else UNKNOWN
            if qualified in v.log_space:
                return Value("tensor", sub(arg(call, 0, "input") or call).grad, prob="logprob", zero="safe")
            if qualified in v.zero_replacing_selects:  # np.where(x == 0, y, x): x's zeros replaced by y
                replaced = _zeros_replaced_by(call)
                if replaced is not None and (positive_constant(replaced) or sub(replaced).zero in _NONZERO):
                    return Value("tensor", zero="safe")
            if qualified == "len":
                return Value("scalar", unit=self._length(arg(call, 0), at, function, klass, depth))
            if qualified in ("float", "int"):
                first = arg(call, 0)
                return Value("scalar", unit=sub(first).unit) if first is not None else SCALAR
            if qualified in v.python_number_builtins:
                return SCALAR
            if qualified in v.zero_floor_clamps and literal_number(arg(call, 1, "min") or cst.Name("None")) == 0.0:
                inner = sub(arg(call, 0, "input") or call)  # a ReLU, but exact zeros keep their gradient
                return Value("tensor", inner.grad, zero=inner.zero if inner.zero in _CANCELLING else "selected")
            if qualified in v.positive or qualified in v.clamps or qualified in v.exponentials:
                first = arg(call, 0)
                inner = sub(first) if first is not None else UNKNOWN
                kind = "scalar" if qualified in ("max", "math.exp") else "tensor"
                return Value(kind, inner.grad, prob="exp" if qualified in v.exponentials else "", zero="safe")
            if qualified in v.saturating_to_one:
                return Value("tensor", sub(arg(call, 0, "input") or call).grad, "output", "tanh", origin=call)
            if qualified in v.selecting_zero:
                return Value("tensor", sub(arg(call, 0, "input") or call).grad, zero="selected")
            if qualified in v.underflowing:
                return Value("tensor", sub(arg(call, 0, "input") or call).grad, zero="underflow")
            if qualified in v.zero_at_zero:
                inner = sub(arg(call, 0, "input") or call)
                return Value("tensor", inner.grad, zero=_squared(inner) if qualified in ("torch.abs", "torch.square")
                             else "zero")
            if qualified in ("torch.log", "torch.log1p"):
                inner = sub(arg(call, 0, "input") or call)
                return Value("tensor", inner.grad, zero=_logged(last, inner))
            if qualified in v.spreads or qualified in v.spread_means:
                first = arg(call, 0, "input")
                spread = Value("tensor", zero="" if first is not None and _learned_output(sub(first)) else "spread")
                return spread if qualified in v.spreads else Value("container", items=(spread, Value("tensor")))
            if qualified in v.norms:
                first = arg(call, 0, "input")
                inner = sub(first or call)
                rows = first is not None and over_rows(call, 2) and \
                    self._input_rows(first, at, function, klass, depth, norm=True)
                return Value("tensor", inner.grad, zero="" if _learned_output(inner) else "rows" if rows else "norm")
            if qualified in v.counts:
                return Value("tensor", zero="count")
            if qualified in v.scaled_product_functions and _minus_two_alpha(call, 2):
                inner = sub(arg(call, 0, "input") or call)  # torch.addmm(sq, x, y.t(), alpha=-2)
                return replace(inner, kind="tensor", prob="", zero="cancels")
            if qualified in v.contractions:
                operands = [a.value for a in call.args if not a.star and a.keyword is None]
                if qualified.endswith("einsum") and operands:  # einsum(equation, *operands) or (equation, [operands])
                    operands = operands[1:]
                    if len(operands) == 1 and type(operands[0]) in (cst.List, cst.Tuple):
                        operands = [e.value for e in operands[0].elements]
                values = [sub(o) for o in operands]
                best = next((x for x in values if x.grad == "known"), None) or next((x for x in values if x.grad), None)
                return Value("tensor", best.grad if best else "", best.role if best else "",
                             origin=best.origin if best else None, zero=_contracted(values))
            if qualified in v.sums:
                first = arg(call, 0, "input")
                inner = sub(first or call)
                rows = first is not None and not _summed(inner) and over_rows(call, 1) and \
                    self._input_rows(first, at, function, klass, depth)
                return Value("tensor", inner.grad, zero=_summed(inner) or ("rows" if rows else ""),
                             unit=_reduced(last, call, inner, 1), named=inner.named)
            if qualified in ("sum", "min"):
                first = arg(call, 0)
                inner = sub(first) if first is not None else UNKNOWN
                return inner.elements or inner if inner.grad else UNKNOWN
            if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
                grads = [sub(a.value) for a in call.args if not a.star]
                best = next((g for g in grads if g.grad == "known"), None) or \
                    next((g for g in grads if g.grad), None)
                return Value("tensor", best.grad if best else "", best.role if best else "",
                             origin=best.origin if best else None)
        return self._callee_object(call, func, at, function, klass, depth)

    def _accumulated(self, definition, increment, bound: Value, function, at, klass, depth) -> str:
        """The unit of a total that adds `increment` once per iteration of its loop."""
        if not definition.loops:
            return ""
        loop = self.analysis.scope_of(function).loop_iters.get(definition.loops[-1])
        batches = loop is not None and self.loader_kind(loop, at, function, klass, depth - 1) == "batches"
        if bound.unit == "size" or bound.unit == "samples":
            return "samples"
        if bound.unit == "sum":
            return "sum"
        if batches and literal_number(increment) == 1.0:
            return "batches"
        if batches and bound.unit == "mean":
            return "means"
        return ""

    def loader_kind(self, expr: cst.BaseExpression | None, at: int, function=None, klass: str = "",
                    depth: int = 6) -> str:
        """What iterating `expr` yields: "batches" (a DataLoader with batch_size > 1 or unknown, or a
        name like `train_loader`), "single" (a DataLoader with the default batch_size=1), or ""."""
        for _ in range(4):
            if isinstance(expr, cst.Call) and (self.model.names.qualify(expr.func) or dotted_name(expr.func) or "") \
                    in self.v.iteration_wrappers and expr.args:
                expr = expr.args[0].value
        if expr is None or depth <= 0:
            return ""
        value = self.of(expr, at, function, klass, depth - 1)
        if value.kind == "object" and value.obj == "dataloader" and isinstance(value.origin, cst.Call):
            size = arg(value.origin, 1, "batch_size")
            sampler = arg(value.origin, 99, "batch_sampler")
            if sampler is None and (size is None or literal_number(size) == 1.0):
                return "single"
            return "batches"
        name = dotted_name(expr.value if isinstance(expr, cst.Subscript) else expr)  # dataloaders[phase]
        if name is None:
            return ""
        scope = self.analysis.scope_of(function)
        definition = scope.lookup(name, at) if not isinstance(expr, cst.Subscript) else None
        if definition is not None and definition.value is not None and definition.how == "assign":
            found = self.loader_kind(definition.value, definition.order - 1, function, klass, depth - 1)
            if found:
                return found
        return "batches" if self.v.pattern("loader_name_pattern").search(name.rsplit(".", 1)[-1]) else ""

    def _length(self, expr: cst.BaseExpression | None, at, function, klass, depth) -> str:
        """The unit of `len(expr)`."""
        if expr is None:
            return ""
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("dataset", "sampler"):
            return "samples"
        loader = self.loader_kind(expr, at, function, klass, depth - 1)
        if loader:
            return "batches" if loader == "batches" else ""
        value = self.of(expr, at, function, klass, depth - 1)
        name = dotted_name(expr)
        if (value.kind == "object" and value.obj == "dataset") or \
                (name is not None and self.v.pattern("dataset_name_pattern").search(name.rsplit(".", 1)[-1])):
            return "samples"
        if value.kind in ("object", "container", "scalar"):
            return ""
        return "size"

    def _callee_object(self, call, func, at, function, klass, depth) -> Value:
        """A call of an object (model, loss, softmax module), of a model class, or
        of an in-file function (its summary); else what its name suggests."""
        v = self.v
        if isinstance(func, cst.Call):  # nn.Softmax(dim=1)(x), nn.CrossEntropyLoss()(x, y)
            kind = self.model.kind_of_callee(self.model.names.qualify(func.func) or "")
            return self._object_call(kind, func, call)
        if isinstance(func, cst.Name) and func.value == "self" and klass in self.model.model_classes:
            return self._own_forward(klass, call)
        callee = self.of(func, at, function, klass, depth - 1)
        if callee.kind == "object":
            return self._object_call(callee.obj, callee.origin, call, callee.prob)
        name = dotted_name(func)
        if name is None:
            return UNKNOWN
        local = self.analysis.scope_of(function).lookup(name, at)
        if local is None or local.how == "param":
            info = self.model.function(name, klass)
            if info is not None:
                summary = self.summary(info)
                return replace(summary, origin=call) if summary.grad else summary
            qualified = self.model.names.qualify(func) or name
            imported = self.model.imported.returns(qualified)
            if imported:
                value = from_facts(imported, call)
                ctor = self.model.imported.fact(qualified, "returns_ctor") if value.kind == "object" else ""
                return replace(value, origin=self._constructor_from(ctor)) if ctor else value
            kind = self.model.kind_of_callee(qualified)
            if kind in ("model", "softmax", "sigmoid", "sequential"):
                # what its call returns travels with the object, also in a summary for other files; read
                # from the constructor call alone (torch's own modules, a Sequential's last layer), never
                # from a project class's forward, which a summary must not depend on the order of reading
                squashed = self._constructed_call(kind, call, call).prob \
                    if kind != "model" or qualified.startswith("torch.nn.") else ""
                return Value("object", prob=squashed if squashed in _SQUASHED else "", obj=kind, origin=call)
            if kind in ("dataset", "rng", "dataloader", "optimizer", "scheduler", "scaler", "loss"):
                return Value("object", obj=kind, origin=call)
        if local is not None and local.how not in ("param",):
            return UNKNOWN  # a local bound to something we could not classify
        last = name.rsplit(".", 1)[-1]
        if last.startswith(("build_", "make_", "get_", "create_", "init_", "compute_metrics")):
            return UNKNOWN  # factories and getters return modules or configs, not tensors
        if v.pattern("loss_name_pattern").search(last):
            return Value("unknown", "likely", "loss", origin=call, unit="mean" if not call.args or
                         not any(a.keyword and a.keyword.value == "reduction" for a in call.args) else "")
        if v.pattern("model_name_pattern").search(last):
            return Value("unknown", "likely", "output", origin=call)
        return UNKNOWN

    def _object_call(self, kind: str | None, ctor, call, squashed: str = "") -> Value:
        """What calling an object of `kind` returns: read from its constructor `ctor` when it is a call
        here; `squashed`, what the object says its call returns (another file's summary, a replaced
        head), where the constructor says otherwise or nothing."""
        found = self._constructed_call(kind, ctor, call)
        if kind in ("model", "sequential") and squashed in _SQUASHED and found.prob != squashed:
            return Value("tensor", "known", "output", squashed, origin=call)
        return found

    def _constructed_call(self, kind: str | None, ctor, call) -> Value:
        """What calling an object of `kind` built by `ctor` returns, read from the constructor call."""
        while isinstance(ctor, cst.Call) and isinstance(ctor.func, cst.Attribute) and \
                isinstance(ctor.func.value, cst.Call) and ctor.func.attr.value in ("to", "cuda", "half", "float"):
            ctor = ctor.func.value  # Net().to(device): Net()
        if kind == "model":
            if isinstance(ctor, cst.Call):  # an in-file model whose forward returns a probability
                qualified = self.model.names.qualify(ctor.func) or ""
                if qualified in self.v.linear_layers:
                    return Value("tensor", "known", "output", "logits", origin=call)
                zero = self._activation_zero(qualified)
                if zero:  # nn.ReLU()(x), self.act(x) of `self.act = nn.Softplus()`
                    return Value("tensor", "known", "output", zero=zero, origin=call)
                if qualified in self.v.saturating_to_one_modules:  # self.squash(x) of `self.squash = nn.Tanh()`
                    return Value("tensor", "known", "output", "tanh", origin=call)
                klass = qualified.rsplit(".", 1)[-1]
                in_file = self._forward_output(klass, call)
                if in_file is not None:
                    return in_file
                imported = self.model.imported.returns(f"{qualified}.forward") \
                    if self.model.function(f"{klass}.forward") is None else ()
                if imported:  # a model class of another project file
                    summary = from_facts(imported)
                    if summary.prob in _SQUASHED:
                        return Value("tensor", "known", "output", summary.prob, origin=call)
                    return _model_output_items(summary, call) or Value("tensor", "known", "output", origin=call)
            return Value("tensor", "known", "output", origin=call)
        if kind == "loss":
            return Value("tensor", "known", "loss", origin=call,
                         unit=reduction_unit(ctor) if isinstance(ctor, cst.Call) else "")
        if kind in ("softmax", "sigmoid"):
            return Value("tensor", "known", "output", kind, origin=ctor)
        if kind == "sequential" and isinstance(ctor, cst.Call):
            last = [a.value for a in ctor.args if a.keyword is None and not a.star][-1:]
            if last and isinstance(last[0], cst.Call):
                qualified = self.model.names.qualify(last[0].func) or ""
                inner = self.model.kind_of_callee(qualified)
                if inner in ("softmax", "sigmoid"):
                    return Value("tensor", "known", "output", inner, origin=last[0])
                if qualified in self.v.linear_layers:
                    return Value("tensor", "known", "output", "logits", origin=call)
                if qualified in self.v.log_softmax_modules:
                    return Value("tensor", "known", "output", "logprob", origin=last[0])
                zero = self._activation_zero(qualified)
                if zero:  # nn.Sequential(nn.Linear(h, d), nn.Softplus()): a std head
                    return Value("tensor", "known", "output", zero=zero, origin=call)
                if qualified in self.v.saturating_to_one_modules:  # an actor head ending in nn.Tanh()
                    return Value("tensor", "known", "output", "tanh", origin=call)
            return Value("tensor", "known", "output", origin=call)
        return UNKNOWN

    def _forward_output(self, klass: str, call) -> Value | None:
        """What `call` returns by running the forward of `klass`, a class of this file: its squashing
        (a softmax, a sigmoid, logits...) or its tuple's items; None when its summary says neither."""
        info = self.model.function(f"{klass}.forward") if klass in self.model.classes else None
        if info is None:
            return None
        summary = self.summary(info)
        if summary.prob in _SQUASHED:
            return Value("tensor", "known", "output", summary.prob, origin=summary.origin or call)
        return _model_output_items(summary, call)

    def _own_forward(self, klass: str, call) -> Value:
        """`self(x)` in a method of the model class `klass` (Lightning's `training_step`): it runs the
        class's own forward, unless an in-file subclass overrides it (then only an output is known)."""
        overridden = any(f"{sub}.forward" in self.model.function_home
                         for sub in self.model._subclasses(frozenset((klass,))) - {klass})
        found = None if overridden else self._forward_output(klass, call)
        return found if found is not None else Value("tensor", "known", "output", origin=call)

    def _activation_zero(self, qualified: str) -> str:
        """The zero fact of an activation module's output: ReLU's ("selected"), Softplus' ("underflow")."""
        if qualified in self.v.selecting_zero_modules:
            return "selected"
        return "underflow" if qualified in self.v.underflowing_modules else ""

    def _last_binding(self, name: cst.BaseExpression, at: int, function: cst.FunctionDef | None):
        """(what a local name was last bound to before `at`, or None unless a plain assignment; the
        binding's order, -1 when there is none in the scope)."""
        definition = self.analysis.scope_of(function).lookup(name.value, at) if type(name) is cst.Name else None
        if definition is None:
            return None, -1
        plain = definition.how == "assign" and definition.index is None
        return (definition.value if plain else None), definition.order

    def _binary(self, expr: cst.BinaryOperation, sub, bound=lambda name: (None, -1)) -> Value:
        value = self._binary_value(expr, sub, bound)
        op, left, right = expr.operator, sub(expr.left), sub(expr.right)
        units = {left.unit, right.unit}
        unit = ""
        if isinstance(op, cst.Multiply) and units == {"mean", "size"}:
            unit = "sum"  # loss.item() * x.size(0)
        elif isinstance(op, cst.Divide) and left.unit == "sum" and right.unit == "size":
            unit = "mean"  # correct / y.size(0)
        elif isinstance(op, cst.Add) and "index" in units and \
                1.0 in (literal_number(expr.left), literal_number(expr.right)):
            unit = "batches"  # i + 1 after `for i, batch in enumerate(loader)`
        elif isinstance(op, cst.Add) and left.unit == right.unit:
            unit = left.unit
        return replace(value, unit=unit) if value.unit != unit else value

    def _binary_value(self, expr: cst.BinaryOperation, sub, bound=lambda name: (None, -1)) -> Value:
        op = expr.operator
        left, right = sub(expr.left), sub(expr.right)
        base = join(left, right)
        if left.kind == "scalar" and right.kind == "scalar":
            base = replace(base, kind="scalar")
        if isinstance(op, cst.Subtract):
            if identity_complement(expr, self.model.names.qualify):
                return Value("tensor", zero="offdiag")  # 1 - torch.eye(n)
            one = literal_number(expr.left)
            if one == 1.0 and (right.prob in ("softmax", "sigmoid", "prob") or right.zero in ("zero", "selected")):
                return replace(base, prob="", zero="zero")
            if one == 1.0 and _square_of_tanh(expr.right, sub):
                return replace(base, prob="", zero="saturated")  # 1 - tanh(x)**2: 0 once tanh is +-1
            if type(expr.left) is cst.BinaryOperation and self._twice_a_product(expr.right, bound):
                return replace(base, prob="", zero="cancels")  # |x|^2 + |y|^2 - 2 x.y
            if _mean_square_minus_square_mean(expr, bound, self.model.names.qualify):
                return replace(base, prob="", zero="shortcut")  # mean(x**2) - mean(x)**2
            if one is None and literal_number(expr.right) is None and not positive_constant(expr.right):
                return replace(base, prob="", zero="diff")  # 0 where the two are equal
            return replace(base, prob="", zero="")
        if isinstance(op, cst.Power):
            return replace(left, prob="", zero=_squared(left) if _even(expr.right) else
                           "safe" if left.zero in _NONZERO else "")
        # in a product, a sum or a quotient, a difference or a value tested elsewhere says nothing more
        lzero = "" if left.zero in _ONLY_DIRECT else left.zero
        rzero = "" if right.zero in _ONLY_DIRECT else right.zero
        if isinstance(op, cst.Multiply):
            if dotted_name(expr.left) is not None and dotted_name(expr.left) == dotted_name(expr.right):
                return replace(base, prob="", zero=_squared(left))
            zero = _product_zero(left, right)  # a mask guessed by name stays a guess through products
            return replace(base, prob="", zero=zero, named=zero == "mask" and _named_mask(left, right))
        if isinstance(op, cst.MatrixMultiply):
            return replace(base, prob="", zero=_contracted([left, right]))
        if isinstance(op, cst.BitAnd) and left.zero == right.zero == "selfpair":
            return replace(base, prob="", zero="selfpair")  # both true on the diagonal
        if isinstance(op, cst.BitAnd) and ("mask" in (left.zero, right.zero) or "selfpair" in (left.zero, right.zero)):
            # false wherever either is
            return replace(base, prob="", zero="mask", named=_named_mask(left, right))
        if isinstance(op, cst.BitOr) and left.zero == right.zero == "mask":  # false where both are
            return replace(base, prob="", zero="mask", named=left.named or right.named)
        # a row reduction of input data is a divisor's fact (TRN406); in a sum or a quotient it says nothing
        lzero, rzero = ("" if lzero == "rows" else lzero), ("" if rzero == "rows" else rzero)
        if isinstance(op, cst.Add) and not (positive_constant(expr.left) or positive_constant(expr.right) or
                                            _NONZERO_REASONS & {left.zero, right.zero}) and \
                ("cancels" in (left.zero, right.zero) or
                 (type(expr.left) is cst.BinaryOperation and self._twice_a_product(expr.right, bound, -2.0)) or
                 (type(expr.left) is cst.BinaryOperation and type(expr.left.operator) is cst.Subtract and
                  self._twice_a_product(expr.left.right, bound))):
            return replace(base, prob="", zero="cancels")  # |x|^2 - 2 x.y + |y|^2, |x|^2 + |y|^2 + -2 * x.y
        if isinstance(op, cst.Add):
            for value, constant in ((left, expr.right), (right, expr.left)):
                if literal_number(constant) == 1.0 and value.zero in ZERO_POSSIBLE:
                    return replace(base, prob="", zero="one")  # n + 1: exactly 1 where n is 0
            if "safe" in (lzero, rzero) or positive_constant(expr.left) or positive_constant(expr.right):
                return replace(base, prob="", zero="safe")
            if _zero_indicator(expr.right, expr.left, bound) or _zero_indicator(expr.left, expr.right, bound):
                return replace(base, prob="", zero="safe")  # n + (n == 0) * eps: eps where n is 0, n elsewhere
            lz = lzero or ("zero" if left.prob in ("softmax", "sigmoid", "prob") else "")
            rz = rzero or ("zero" if right.prob in ("softmax", "sigmoid", "prob") else "")
            if not lz or not rz or lz == rz == "squares":
                return replace(base, prob="", zero="")  # x**2 + c**2: c is usually a positive constant
            return replace(base, prob="", zero="selected" if lz == rz == "selected" else "zero")
        if isinstance(op, cst.Divide):
            by_hand = _probability_by_hand(expr, left, right, sub)
            if by_hand:  # e / e.sum(dim), 1 / (1 + exp(-x)): what softmax and sigmoid compute
                return Value("tensor", left.grad or right.grad, "output", by_hand, origin=expr)
            if lzero in ("squares", "spread"):
                return replace(base, prob="", zero=lzero)
            lz = lzero or ("zero" if left.prob and left.prob != "logits" else "")
            return replace(base, prob="", zero="zero" if lz and lz != "safe" else "")
        return replace(base, prob="", zero="")

    def _twice_a_product(self, expr: cst.BaseExpression, bound, factor: float = 2.0) -> bool:
        """`2 * x @ y.t()`, `2 * torch.mm(x, y)`, `torch.matmul(x, y) * 2` (with `factor` -2: `-2 * ...`),
        also through a local name bound to one: the cross term of an expanded squared distance."""
        value, _ = bound(expr) if type(expr) is cst.Name else (None, -1)
        expr = value if value is not None else expr
        if type(expr) is not cst.BinaryOperation:
            return False
        if type(expr.operator) is cst.MatrixMultiply:  # `2 * x @ y.t()` is `(2 * x) @ y.t()`
            scaled = expr.left
            return type(scaled) is cst.BinaryOperation and type(scaled.operator) is cst.Multiply and \
                factor in (literal_number(scaled.left), literal_number(scaled.right))
        if type(expr.operator) is not cst.Multiply:
            return False
        if literal_number(expr.left) == factor:
            return self._contraction(expr.right, bound)
        return literal_number(expr.right) == factor and self._contraction(expr.left, bound)

    def _contraction(self, expr: cst.BaseExpression, bound) -> bool:
        value, _ = bound(expr) if type(expr) is cst.Name else (None, -1)
        expr = value if value is not None else expr
        if type(expr) is cst.BinaryOperation:
            if type(expr.operator) is cst.MatrixMultiply:
                return True
            return type(expr.operator) is cst.Multiply and \
                (self._contraction(expr.left, bound) or self._contraction(expr.right, bound))
        if type(expr) is not cst.Call:
            return False
        if (self.model.names.qualify(expr.func) or "") in self.v.contractions:
            return True
        return type(expr.func) is cst.Attribute and expr.func.attr.value in self.v.contraction_methods


def _mean_square_minus_square_mean(expr: cst.BinaryOperation, bound, qualify) -> bool:
    """`mean(x**2) - mean(x)**2` (also `x.pow(2).mean(d) - mu * mu` with `mu = x.mean(d)`, locals bound
    to either side): the same `x`, reduced the same way, on both sides. `qualify` resolves the file's
    import aliases (`torch.mean` however torch is imported)."""
    squares = _reduced_operand(expr.left, bound, qualify)
    mean = _reduced_operand(_square_base(expr.right, bound, qualify), bound, qualify)
    if squares is None or mean is None or squares[1] != mean[1]:
        return False
    squared = _square_base(squares[0], bound, qualify)
    return squared is not None and _resolved(squared, bound).deep_equals(_resolved(mean[0], bound))


def _resolved(expr: cst.BaseExpression | None, bound) -> cst.BaseExpression | None:
    """What a local name was last bound to (one step), else the expression itself."""
    if type(expr) is cst.Name:
        value, _ = bound(expr)
        return value if value is not None else expr
    return expr


def _square_base(expr: cst.BaseExpression | None, bound, qualify) -> cst.BaseExpression | None:
    """`b` for `b ** 2`, `b * b`, `b.pow(2)`, `b.square()`, `torch.square(b)`, `torch.pow(b, 2)`."""
    expr = _resolved(expr, bound)
    if type(expr) is cst.BinaryOperation:
        if type(expr.operator) is cst.Power and literal_number(expr.right) == 2.0:
            return expr.left
        if type(expr.operator) is cst.Multiply and expr.left.deep_equals(expr.right):
            return expr.left
        return None
    if type(expr) is not cst.Call:
        return None
    if type(expr.func) is cst.Attribute:
        method = expr.func.attr.value
        if (method == "pow" and len(expr.args) == 1 and literal_number(expr.args[0].value) == 2.0) or \
                (method == "square" and not expr.args):
            if qualify(expr.func.value) != "torch":
                return expr.func.value
    if (qualify(expr.func) or "") in ("torch.square", "torch.pow") and expr.args and \
            (len(expr.args) == 1 or literal_number(expr.args[1].value) == 2.0):
        return expr.args[0].value
    return None


def _reduced_operand(expr: cst.BaseExpression | None, bound, qualify) -> tuple[cst.BaseExpression, str] | None:
    """(`x`, how) for `x.mean(dims)` or `torch.mean(x, dims)`: what a mean reduces and how (the
    arguments' text, so that `mean(-1)` and `mean()` do not match)."""
    expr = _resolved(expr, bound)
    if type(expr) is not cst.Call:
        return None
    if type(expr.func) is cst.Attribute and expr.func.attr.value == "mean" and \
            qualify(expr.func.value) != "torch":
        return expr.func.value, ",".join(_plain(a) for a in expr.args)
    if qualify(expr.func) == "torch.mean" and expr.args:
        return expr.args[0].value, ",".join(_plain(a) for a in expr.args[1:])
    return None


def _plain(argument: cst.Arg) -> str:
    return cst.Module([]).code_for_node(argument.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()


def _minus_two_alpha(call: cst.Call, legacy_position: int) -> bool:
    """`addmm(..., alpha=-2)`, or the old positional `d.addmm_(1, -2, x, y)`: the product scaled by -2."""
    alpha = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "alpha"), None)
    if alpha is None:
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if len(positional) == legacy_position + 3 and literal_number(positional[legacy_position - 1]) is not None:
            alpha = positional[legacy_position]
    return alpha is not None and literal_number(alpha) == -2.0


def _named_mask(left: Value, right: Value) -> bool:
    """A mask made of `left` and `right` is only guessed by name when each factor's zeros are: a self-comparison
    times a diagonal-free mask is computed, not named."""
    masks = [v for v in (left, right) if v.zero == "mask"]
    return bool(masks) and all(v.named for v in masks)


def _product_zero(left: Value, right: Value) -> str:
    """Why `left * right` can be exactly 0: where either factor can (a probability can: it
    underflows), kept as the factors' own reason when both agree on a mask, squares or a spread."""
    if left.zero in _NONZERO and right.zero in _NONZERO:
        return "safe"  # a product of positives
    if "selfpair" in (left.zero, right.zero):
        other = right if left.zero == "selfpair" else left
        if other.zero in _NONZERO or other.zero == "selfpair":
            return "selfpair"  # exp(x) * same_label: positive on the diagonal
        # times anything that can be 0 (the diagonal removed, a padding mask) a row can be all zeros
        left, right = (replace(v, zero="mask") if v.zero == "selfpair" else v for v in (left, right))
    if "offdiag" in (left.zero, right.zero):
        other = right if left.zero == "offdiag" else left
        if other.zero in _NONZERO:
            return "offdiag"  # exp(x) * logits_mask: positive off the diagonal
        if not other.zero and other.prob not in ("softmax", "sigmoid", "prob"):
            return ""  # the mask empties no row: a row is 0 only where the other factor's is, unknown
        # with a factor that can be 0 itself, it is any mask's product
        left, right = (replace(v, zero="mask") if v.zero == "offdiag" else v for v in (left, right))
    lzero = "" if left.zero in _ONLY_DIRECT else left.zero
    rzero = "" if right.zero in _ONLY_DIRECT else right.zero
    zl, zr = ("" if lzero == "safe" else lzero), ("" if rzero == "safe" else rzero)
    pl, pr = left.prob in ("softmax", "sigmoid", "prob"), right.prob in ("softmax", "sigmoid", "prob")
    if not (zl or zr or pl or pr):
        return ""
    if zl == zr and zl in ("mask", "squares", "spread", "rows"):
        return zl
    other = zl or zr
    return other if other in ("squares", "spread") and not (pl or pr) else "zero"


def _contracted(operands: list[Value]) -> str:
    """Why a contraction (`a @ b`, matmul, einsum, bmm, ...) can be exactly 0: it is a sum of
    products of its operands' elements, so it keeps what the product and then the sum keep (a
    softmax-weighted mix of sigmoid outputs is 0 where every sigmoid underflows)."""
    if len(operands) < 2:
        return ""
    product = operands[0]
    for operand in operands[1:]:
        product = replace(product, prob="", zero=_product_zero(product, operand))
    return _summed(product)


def _probability_by_hand(expr: cst.BinaryOperation, left: Value, right: Value, sub) -> str:
    """"softmax" for `e / e.sum(dim)` (`torch.sum(e, dim)`) of an exponential `e`; "sigmoid" for
    `1 / (1 + exp(z))` and `e / (1 + e)`: ratios that underflow to exactly 0 as the library's do."""
    denominator = expr.right
    while type(denominator) is cst.Call:
        function = dotted_name(denominator.func) or ""
        if function.rsplit(".", 1)[0] in ("torch", "th") and function.endswith(".sum") and denominator.args:
            summed = denominator.args[0].value  # torch.sum(e, dim)
        elif type(denominator.func) is cst.Attribute and \
                denominator.func.attr.value in ("sum", "unsqueeze", "view", "reshape", "expand_as"):
            summed = denominator.func.value  # e.sum(dim, keepdim=True), e.sum(dim).unsqueeze(1)
        else:
            return ""
        if left.prob == "exp" and summed.deep_equals(expr.left):
            return "softmax"
        denominator = summed
    if type(denominator) is not cst.BinaryOperation or type(denominator.operator) is not cst.Add:
        return ""
    for one, other in ((denominator.left, denominator.right), (denominator.right, denominator.left)):
        if literal_number(one) == 1.0 and sub(other).prob == "exp" and \
                (literal_number(expr.left) == 1.0 or (left.prob == "exp" and other.deep_equals(expr.left))):
            return "sigmoid"
    return ""


def _square_of_tanh(expr: cst.BaseExpression, sub) -> bool:
    """`t ** 2`, `t.pow(2)`, `t.square()`, `torch.pow(t, 2)`, `t * t` of a tanh output `t`."""
    base = None
    if type(expr) is cst.BinaryOperation:
        if type(expr.operator) is cst.Power and literal_number(expr.right) == 2.0:
            base = expr.left
        elif type(expr.operator) is cst.Multiply and expr.left.deep_equals(expr.right):
            base = expr.left
    elif type(expr) is cst.Call and type(expr.func) is cst.Attribute:
        method = expr.func.attr.value
        if (method == "pow" and expr.args and literal_number(expr.args[0].value) == 2.0) or \
                (method == "square" and not expr.args):
            base = expr.func.value
        elif dotted_name(expr.func) in ("torch.pow", "torch.square") and expr.args and \
                (len(expr.args) == 1 or literal_number(expr.args[1].value) == 2.0):
            base = expr.args[0].value
    return base is not None and sub(base).prob == "tanh"


def _even(exponent: cst.BaseExpression) -> bool:
    number = literal_number(exponent)
    return number is not None and number > 0 and number == int(number) and int(number) % 2 == 0


def _squared(base: Value) -> str:
    """What `base ** 2` (`abs(base)`, `base * base`) is: 0 only where `base` can be. The square of a
    ReLU's output stays "selected": the NaN that sqrt's inf times the square's 0 makes there is
    dropped by ReLU's backward, which passes nothing where its output is 0."""
    if base.zero in _NONZERO:
        return "safe"
    if base.zero == "selected":
        return "selected"
    return "squares" if base.zero in ZERO_POSSIBLE else ""


def _summed(value: Value) -> str:
    """What a sum or mean of `value`'s elements is."""
    if value.zero in ("mask", "count"):
        return "count"  # a sum of counts is 0 where every count is: `(m > t).sum(-1).sum(-1)` of a mask's pixels
    if value.zero in _NONZERO or value.zero in ("offdiag", "selfpair"):
        return "safe"  # a sum of positives, or one that holds its diagonal
    return value.zero if value.zero in _ZERO_KEPT_BY_SUMS else ""


def _parsed_call(source: str) -> cst.Call | None:
    """A constructor call another file's summary spells (`torch.nn.BCELoss(reduction='sum')`), parsed."""
    try:
        node = cst.parse_expression(source) if source else None
    except cst.ParserSyntaxError:
        return None
    return node if type(node) is cst.Call else None


def _argument_node(call: cst.Call, param: str, position: int) -> cst.BaseExpression | None:
    """The expression `call` passes for `param` (by keyword, else at `position`), when it is plain."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == param:
            return a.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional) or not 0 <= position < len(positional):
        return None
    return positional[position].value


def over_rows(call: cst.Call, dim_position: int) -> bool:
    """The reduction runs over some dimensions (`x.norm(dim=1)`, `torch.norm(x, 2, 1)`, `adj.sum(-1)`):
    one value per row, not one for the whole tensor (a whole batch's count or norm is 0 only for an
    empty batch, where PyTorch's own mean is NaN too)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return len(positional) > dim_position or \
        any(a.keyword is not None and a.keyword.value in ("dim", "axis") for a in call.args)


def _logged(function: str, value: Value) -> str:
    """What `log(value)` or `log1p(value)` is: 0 where `value` is 1 (log of `n + 1`), or where it
    is 0 (log1p)."""
    if function == "log":
        return "zero" if value.zero == "one" else ""
    return "zero" if value.zero in ZERO_POSSIBLE else "safe" if value.zero in _NONZERO else ""


def _learned_output(value: Value) -> bool:
    """The output of a learned module (a Linear, a model or its encode method): its norm is
    0 only for an input in the layer's null space and a zero bias, which training never
    produces. A ReLU's output, a mask or a square can be all zeros."""
    return value.role == "output" and value.grad == "known" and value.zero not in ("selected", "zero", "mask",
                                                                                   "squares")


def _zero_indicator(term: cst.BaseExpression, name: cst.BaseExpression, bound) -> bool:
    """`term` is a positive constant exactly where `name` is 0 and 0 elsewhere: `(name == 0)`, cast,
    times a positive constant (`(p == 0).float() * eps`), or a local bound to that (`z = ...`) while
    `name` still holds what it tested (not rebound since). `name + term` is then never 0."""
    value, order = bound(term)
    if value is not None:
        if bound(name)[1] > order:
            return False  # `name` was rebound after the indicator tested it
        term = value
    while type(term) is cst.BinaryOperation and type(term.operator) is cst.Multiply:
        if positive_constant(term.right):
            term = term.left
        elif positive_constant(term.left):
            term = term.right
        else:
            return False
    return _tests_zero(term, name)


def _tests_zero(test: cst.BaseExpression, name: cst.BaseExpression) -> bool:
    """`test` is `(name == 0)` (maybe cast: `.float()`, `.int()`, `.to(x)`, `.type_as(x)`)."""
    while type(test) is cst.Call and type(test.func) is cst.Attribute and \
            test.func.attr.value in ("float", "int", "long", "double", "half", "to", "type_as"):
        test = test.func.value
    target = dotted_name(name)
    return type(test) is cst.Comparison and target is not None and dotted_name(test.left) == target and \
        len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.Equal and \
        literal_number(test.comparisons[0].comparator) == 0.0


def _self_attribute_writers(klass: cst.ClassDef) -> dict[str, set[str]]:
    """attribute -> the names of the class's methods that assign `self.attribute` (one walk of the
    class, kept per lint: several attributes of one class are asked about)."""
    writers: dict[str, set[str]] = {}
    for method in klass.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        for node in iter_nodes(method):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
                [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
            for target in targets:
                for element in (target.elements if isinstance(target, (cst.Tuple, cst.List)) else ()):
                    targets.append(element.value)
                name = dotted_name(target)
                if name is not None and name.startswith("self.") and name.count(".") == 1:
                    writers.setdefault(name[5:], set()).add(method.name.value)
    return writers


def _reads_no_grad_binding(scope, definition) -> bool:
    """`loss = outputs.loss` where `outputs` was bound under no_grad: this binding of the name
    has no history, even if another binding of it (in the training loop) is backpropagated."""
    if definition.value is None:
        return False
    return any(isinstance(node, cst.Name) and scope.bound_without_grad(node.value, definition.order - 1)
               for node in iter_nodes(definition.value))


def literal_data(node: cst.BaseExpression) -> bool:
    """A number, a bool, or lists and tuples of them: data written out in the source."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(literal_data(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation):
        return literal_data(node.expression)
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    return isinstance(node, (cst.Integer, cst.Float))


def _from_literal_data(value: cst.BaseExpression | None) -> bool:
    """`tensor([[1, 1, 0], [1, 0, 0]])`: data written out in the source, whose values the
    reader sees; what such a variable is named says nothing about where it comes from."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return False
    data = value.args[0].value
    return isinstance(data, (cst.List, cst.Tuple)) and literal_data(data)
