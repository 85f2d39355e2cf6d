"""TRN101 loss-accumulation-keeps-graph.

A tensor that carries autograd history (a model output, a loss, anything
derived from them, or a name that `.backward()` is called on) accumulated in a
loop into something that outlives the iteration keeps every iteration's graph
alive. The analysis is a small taint tracking per function (and per module
for scripts), in source order:

- sources: calls of models and losses (by import, by how the object was
  built, or by the names people give them), `.backward()` receivers;
- propagation: arithmetic, indexing, tensor methods, `.loss`/`.logits`
  attributes, dicts and lists of losses, loops over them;
- sinks: `+=`, `x = x + ...`, `.append/.extend/.insert`, `meter.update(...)`
  on an accumulator not rebound inside the loop;
- cleansers: `.item()`, `.detach()`, `float()`, `.tolist()`, `.numpy()`,
  `.data`, and anything under no-grad.

Decisions that depend on later code (is the accumulator itself backpropagated
or returned from a single-graph loop?) are taken when the function ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from ..context import dotted_name
from ..walk import iter_nodes
from ..rule import FactCollector, FixSpec, Invalid, Related, Replace, Rule

Kind = Literal["loss", "output"]

_MODEL_WORDS = re.compile(
    r"(?:^|_)(model|models|net|network|encoder|decoder|classifier|backbone|generator|gen|discriminator|disc|"
    r"critic|actor|policy|head|module|transformer|unet|vae|gpt|bert|resnet|lm|teacher|student|ddp_model|"
    r"autoencoder|predictor|regressor)(?:$|_|\d)",
    re.IGNORECASE,
)
_LOSS_WORDS = re.compile(r"loss|criterion|criteria|objective", re.IGNORECASE)
# Methods that leave the autograd graph behind.
_DETACHING_METHODS = {"item", "detach", "detach_", "tolist", "numpy"}
# Attributes that are not tensors with history.
_PLAIN_ATTRIBUTES = {"data", "shape", "dtype", "device", "grad", "requires_grad", "ndim", "is_cuda", "size",
                     "grad_fn", "is_leaf"}
# Tensor methods that return plain Python values.
# Results without autograd history: comparisons, indices, integer/bool casts.
_NO_HISTORY_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "equal", "argmax", "argmin", "argsort", "isnan", "isinf",
                   "isfinite", "isclose", "long", "int", "bool", "nonzero", "count_nonzero", "sign", "round",
                   "floor", "ceil", "logical_and", "logical_or", "logical_not", "bucketize", "searchsorted"}
_NON_TENSOR_METHODS = {"size", "dim", "numel", "nelement", "element_size", "stride", "get_device",
                       "is_contiguous", "data_ptr"}
_DETACHING_BUILTINS = {"float", "int", "bool", "str", "len", "round", "repr", "print", "isinstance", "type"}
_MODEL_METHODS_WITH_HISTORY = {"forward", "__call__", "training_step", "compute_loss", "loss"}
_ACCUMULATING_METHODS = {"append", "extend", "insert", "update", "add", "add_", "push", "accumulate"}
# `x.update(...)`/`x.add(...)` on metric objects take model outputs by design;
# only losses make them keep graphs in this rule's reading.
_LIST_METHODS = {"append", "extend", "insert"}
_TORCH_LOSS_FUNCTIONS = {
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "ctc_loss", "cosine_embedding_loss", "margin_ranking_loss",
    "triplet_margin_loss", "hinge_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss", "multi_margin_loss",
    "triplet_margin_with_distance_loss",
}
_BACKWARD_HELPERS = {"backward", "manual_backward"}  # accelerator.backward(loss), self.manual_backward(loss)
_STEP_METHODS = {"step"}


class _ModuleObjects(FactCollector):
    """Names bound to model or loss objects anywhere in the file, so that a
    call of them elsewhere is known to produce history."""

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            name = self.facts.qualify(base.value) or ""
            if name.endswith(("nn.Module", "LightningModule", "PreTrainedModel")) or name in ("Module",):
                self.add("trn101.module_class", node.name.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Call):
            return
        callee = self.facts.qualify(node.value.func) or ""
        kind = None
        if callee.startswith("torch.nn.") and callee.rsplit(".", 1)[-1].endswith("Loss"):
            kind = "loss"
        elif (callee.startswith(("torch.nn.", "torchvision.models.", "timm.", "transformers."))
              and not callee.rsplit(".", 1)[-1].endswith("Loss")):
            kind = "model"
        elif callee.endswith((".from_pretrained", ".create_model")):
            kind = "model"
        if kind is None:
            kind = f"call:{callee.rsplit('.', 1)[-1]}"  # resolved against module classes later
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self.add("trn101.object", (name.removeprefix("self."), kind))


@dataclass
class _Candidate:
    statement: cst.CSTNode  # the accumulation statement (the finding's range)
    value: cst.BaseExpression  # the accumulated expression (the fix target)
    accumulator: str
    kind: Kind | None  # None: only a history source if `.backward()` is called on `pending_name`
    pending_name: str | None
    origin: cst.CSTNode | None
    loop: cst.CSTNode
    method: str  # "+=", "=", or the method name


@dataclass
class _Scope:
    node: cst.CSTNode
    history: dict[str, tuple[Kind, cst.CSTNode]] = field(default_factory=dict)
    loss_dicts: set[str] = field(default_factory=set)
    backward_names: set[str] = field(default_factory=set)
    backward_nodes: dict[str, cst.CSTNode] = field(default_factory=dict)
    returned_names: set[str] = field(default_factory=set)
    # name -> names its assigned values were computed from (to see what feeds a backward)
    sources: dict[str, set[str]] = field(default_factory=dict)
    training: bool = False  # backward or an optimizer step somewhere in the scope
    loops_with_steps: set[int] = field(default_factory=set)
    rebound: dict[int, set[str]] = field(default_factory=dict)  # loop id -> names assigned inside it
    candidates: list[_Candidate] = field(default_factory=list)


def _names_in(expr: cst.CSTNode) -> set[str]:
    """Names and dotted names used in `expr`."""
    found: set[str] = set()
    for node in iter_nodes(expr):
        if type(node) is cst.Name:
            found.add(node.value)
        elif type(node) is cst.Attribute:
            name = dotted_name(node)
            if name is not None:
                found.add(name)
    return found


def _container_name(expr: cst.BaseExpression) -> str | None:
    """`history` for `history["loss"]` or `history[k][0]`; dotted names as they are."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return dotted_name(expr)


def _with_method(expr: cst.BaseExpression, method: str) -> cst.BaseExpression:
    """`expr.method()`, parenthesised when needed."""
    base = expr
    if not isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        base = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if not expr.lpar else expr
    return cst.Call(func=cst.Attribute(value=base, attr=cst.Name(method)))


class LossAccumulationKeepsGraph(Rule):
    CODE = "TRN101"
    Collector = _ModuleObjects

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._scopes: list[_Scope] = [_Scope(node=cst.Module(body=[]))]
        self._objects: dict[str, str] | None = None

    # --- what carries history ---------------------------------------------------

    def _object_kinds(self) -> dict[str, str]:
        if self._objects is None:
            classes = set(self.facts.get("trn101.module_class"))
            kinds: dict[str, str] = {}
            for name, kind in self.facts.get("trn101.object"):  # type: ignore[misc]
                if kind.startswith("call:"):
                    kind = "model" if kind[5:] in classes else ""
                if kind:
                    kinds[name] = kind
            self._objects = kinds
        return self._objects

    def _callee_kind(self, func: cst.BaseExpression) -> Kind | None:
        qualified = self.facts.qualify(func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.nn.functional.") and last in _TORCH_LOSS_FUNCTIONS:
            return "loss"
        if qualified.startswith("torch."):
            return None  # other torch functions: derived only through their arguments
        name = dotted_name(func)
        if name is None:
            return None
        local = name.removeprefix("self.")
        known = self._object_kinds().get(local)
        if known == "loss":
            return "loss"
        if known == "model":
            return "output"
        parts = local.split(".")
        if _LOSS_WORDS.search(parts[-1]):
            return "loss"
        if _MODEL_WORDS.search(parts[-1]):
            return "output"
        # model.forward(x), model.module(x)
        if len(parts) >= 2 and parts[-1] in _MODEL_METHODS_WITH_HISTORY and (
            _MODEL_WORDS.search(parts[-2]) or self._object_kinds().get(".".join(parts[:-1])) == "model"
        ):
            return "loss" if parts[-1] in ("compute_loss", "loss", "training_step") else "output"
        return None

    def _history(self, expr: cst.BaseExpression) -> tuple[Kind, cst.CSTNode] | None:
        """(kind, origin) when `expr` carries autograd history, else None."""
        scope = self._scopes[-1]
        if isinstance(expr, cst.Name):
            return scope.history.get(expr.value)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _PLAIN_ATTRIBUTES:
                return None
            full = dotted_name(expr)
            if full is not None and full in scope.history:
                return scope.history[full]
            inner = self._history(expr.value)
            if inner is not None and expr.attr.value in ("loss", "losses"):
                return ("loss", inner[1])
            return inner
        if isinstance(expr, cst.Subscript):
            return self._history(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in _DETACHING_METHODS or method in _NON_TENSOR_METHODS or method in _NO_HISTORY_OPS:
                    return None
                receiver = self._history(func.value)
                if receiver is not None:
                    return receiver
            if isinstance(func, cst.Name) and func.value in _DETACHING_BUILTINS:
                return None
            kind = self._callee_kind(func)
            if kind is not None:
                return (kind, expr)
            qualified = self.facts.qualify(func) or ""
            if qualified.rsplit(".", 1)[-1] in _NO_HISTORY_OPS:
                return None
            if qualified.startswith("torch.") or qualified in ("sum", "max", "min"):
                for arg in expr.args:
                    found = self._history(arg.value)
                    if found is not None:
                        return found
            return None
        if isinstance(expr, cst.BinaryOperation):
            return self._history(expr.left) or self._history(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._history(expr.expression)
        if isinstance(expr, cst.IfExp):
            return self._history(expr.body) or self._history(expr.orelse)
        if isinstance(expr, (cst.List, cst.Tuple)):
            for element in expr.elements:
                found = self._history(element.value)
                if found is not None:
                    return found
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found = self._history(element.value)
                    if found is not None:
                        return found
        return None

    # --- scopes ---------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_Scope(node=node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._finish(self._scopes.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        while self._scopes:
            self._finish(self._scopes.pop())

    def _loop_key(self) -> int | None:
        loop = self.walk.innermost_loop()
        return id(loop) if loop is not None else None

    def _mark_rebound(self, name: str) -> None:
        scope = self._scopes[-1]
        for loop in reversed(self.walk.loops):
            if isinstance(loop, cst.FunctionDef):
                break
            scope.rebound.setdefault(id(loop), set()).add(name)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, history) -> None:
        scope = self._scopes[-1]
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None, history)
            return
        name = dotted_name(target)
        if name is None:
            return
        self._mark_rebound(name)
        if history is not None:
            scope.history[name] = history
            if isinstance(value, cst.Dict):
                scope.loss_dicts.add(name)
        else:
            scope.history.pop(name, None)
            scope.loss_dicts.discard(name)

    # --- statements -------------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        history = self._history(node.value)
        used = _names_in(node.value)
        for target in node.targets:
            for name in _names_in(target.target):
                self._scopes[-1].sources.setdefault(name, set()).update(used)
        if len(node.targets) == 1 and isinstance(node.value, cst.BinaryOperation):
            self._check_rebinding_sum(node, node.targets[0].target, node.value)
        for target in node.targets:
            self._bind(target.target, node.value, history)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value, self._history(node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = dotted_name(node.target.value if isinstance(node.target, cst.Subscript) else node.target)
        if target is not None and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            self._consider(node, node.value, target, "+=")
        history = self._history(node.value)
        name = dotted_name(node.target)
        if name is not None and history is not None:
            self._scopes[-1].history[name] = history

    def _check_rebinding_sum(self, node: cst.Assign, target: cst.BaseExpression, value: cst.BinaryOperation) -> None:
        name = dotted_name(target)
        if name is None or not isinstance(value.operator, (cst.Add, cst.Subtract)):
            return
        operands = [value.left, value.right]
        own = [o for o in operands if dotted_name(o) == name]
        others = [o for o in operands if dotted_name(o) != name]
        if own and len(others) == 1:
            self._consider(node, others[0], name, "=")

    def visit_For(self, node: cst.For) -> None:
        # `for name, value in losses.items()` over a dict of losses
        iterable = node.iter
        history = None
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and \
                iterable.func.attr.value in ("items", "values"):
            history = self._history(iterable.func.value)
        elif isinstance(iterable, (cst.Name, cst.Attribute)):
            history = self._history(iterable)
        scope = self._scopes[-1]
        targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
        for element in targets:
            value = element.value if isinstance(element, cst.Element) else element
            name = dotted_name(value)
            if name is None:
                continue
            self._mark_rebound(name)
            if history is not None:
                scope.history[name] = history
            else:
                scope.history.pop(name, None)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._scopes[-1].returned_names |= _names_in(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        scope = self._scopes[-1]
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method in _BACKWARD_HELPERS:
            receivers = _names_in(func.value) if method == "backward" and not node.args else set()
            if method == "backward" and (self.facts.qualify(func.value) or "").startswith("torch.autograd"):
                receivers = set()
            for arg in node.args[:1]:
                receivers |= _names_in(arg.value)
            if method == "backward" and not node.args:
                receivers |= _names_in(func.value)
            for name in receivers:
                scope.backward_names.add(name)
                scope.backward_nodes.setdefault(name, node)
            self._note_training_step()
        elif method in _STEP_METHODS:
            receiver = dotted_name(func.value) or ""
            if re.search(r"optim|opt$|^opt|scaler|sgd|adam", receiver.split(".")[-1], re.IGNORECASE):
                self._note_training_step()
        elif method in _ACCUMULATING_METHODS and node.args:
            receiver = _container_name(func.value)
            parent = self.walk.parent
            if receiver is not None and isinstance(parent, cst.Expr):
                self._consider(node, node.args[-1].value if method == "insert" else node.args[0].value,
                               receiver, method)

    def _note_training_step(self) -> None:
        scope = self._scopes[-1]
        scope.training = True
        for loop in self.walk.loops:
            if not isinstance(loop, cst.FunctionDef):
                scope.loops_with_steps.add(id(loop))

    # --- sinks ----------------------------------------------------------------------------

    def _consider(self, statement: cst.CSTNode, value: cst.BaseExpression, accumulator: str, method: str) -> None:
        if self.walk.in_no_grad:
            return
        loop = self.walk.innermost_loop()
        if loop is None:
            return
        scope = self._scopes[-1]
        base = accumulator.split("[")[0]
        if base in scope.rebound.get(id(loop), set()):
            return  # rebound every iteration: does not outlive it
        history = self._history(value)
        pending = None
        if history is None:
            # `total += loss` where `loss.backward()` comes later
            pending = dotted_name(value)
            if pending is None or pending in scope.history:
                return
        kind = history[0] if history else None
        if method not in _LIST_METHODS and method not in ("+=", "=") and kind == "output":
            return  # metric.update(outputs, y): metric objects take model outputs by design
        scope.candidates.append(_Candidate(
            statement=statement if method in ("+=", "=") else statement,
            value=value,
            accumulator=base,
            kind=kind,
            pending_name=pending,
            origin=history[1] if history else None,
            loop=loop,
            method=method,
        ))

    def _finish(self, scope: _Scope) -> None:
        if not scope.candidates:
            return
        feeding_backward = set(scope.backward_names)
        frontier = list(feeding_backward)
        while frontier:  # names the backpropagated values were computed from
            for source in scope.sources.get(frontier.pop(), ()):
                if source not in feeding_backward:
                    feeding_backward.add(source)
                    frontier.append(source)
        for candidate in scope.candidates:
            kind = candidate.kind
            origin = candidate.origin
            if kind is None:
                if candidate.pending_name not in scope.backward_names:
                    continue
                kind = "loss"
                origin = scope.backward_nodes.get(candidate.pending_name or "")
            if candidate.accumulator in feeding_backward:
                continue  # what is collected is backpropagated later: one graph by design
            loop_trains = id(candidate.loop) in scope.loops_with_steps
            if candidate.accumulator in scope.returned_names and not loop_trains:
                continue  # e.g. summing per-head losses inside one training step
            if kind == "output" and not scope.training:
                continue  # only flag collected model outputs inside training code
            self._report(candidate, kind, origin, scope)

    def _report(self, candidate: _Candidate, kind: Kind, origin: cst.CSTNode | None, scope: _Scope) -> None:
        value_text = cst.Module(body=[]).code_for_node(candidate.value)
        collecting = candidate.method in _LIST_METHODS
        method = "detach" if collecting or kind == "output" else "item"
        fix = FixSpec(
            title=f"Accumulate `{value_text}.{method}()` instead of the tensor",
            changes=(Replace(candidate.value, _with_method(candidate.value, method)),),
            safe=True,
        )
        what = "the model output" if kind == "output" else "the loss"
        if candidate.method in ("+=", "="):
            how = f"`{candidate.accumulator}` sums {what} `{value_text}` with its autograd graph"
        else:
            how = f"`{candidate.accumulator}.{candidate.method}({value_text})` stores {what} with its autograd graph"
        message = (
            f"{how}: every iteration's graph (activations included) stays alive, so memory grows "
            f"each step until CUDA OOM. Use `{value_text}.{method}()`."
        )
        related = []
        if origin is not None and origin is not candidate.value:
            related.append(Related(origin, "the tensor with autograd history comes from here"))
        backward = next(iter(scope.backward_nodes.values()), None)
        if backward is not None:
            related.append(Related(backward, "backward() is called here: the graph is meant to be freed after it"))
        self.report(candidate.statement, message, fix=fix, related=related)

    # --- examples --------------------------------------------------------------------------

    VALID = [
        # .item() / .detach() / float() cleanse
        """import torch
total = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.item()
""",
        """import torch
losses = []
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    losses.append(loss.detach())
    running = float(loss)
""",
        # gradient accumulation: rebinding inside the iteration
        """import torch
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss = loss / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        optimizer.step()
""",
        # under no_grad
        """import torch
@torch.no_grad()
def evaluate(model, loader):
    total = 0
    outs = []
    for x, y in loader:
        out = model(x)
        total += criterion(out, y)
        outs.append(out)
    return total
""",
        """import torch
def evaluate(model, loader):
    total = 0
    with torch.inference_mode():
        for x, y in loader:
            total += criterion(model(x), y)
    return total
""",
        # summing per-head losses within one step, then backward on the sum
        """import torch
for x, y in loader:
    loss = 0
    for head in heads:
        loss += criterion(head(x), y)
    loss.backward()
    optimizer.step()
""",
        """import torch
def training_step(self, batch, batch_idx):
    x, y = batch
    total = 0
    for head in self.heads:
        total = total + F.cross_entropy(head(x), y)
    return total
""",
        # accumulating inputs and labels
        """import torch
all_labels = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    all_labels.append(y)
    seen += x.size(0)
""",
        # metric objects take model outputs by design
        """import torch
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    accuracy.update(out, y)
    running_loss += loss.item() * x.size(0)
""",
        # .data is detached
        """import torch
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    epoch_loss += loss.data
""",
    ]

    VALID += [
        # comparisons and argmax carry no history
        """import torch
for x, y in loader:
    output = model(x)
    loss = criterion(output, y)
    loss.backward()
    optimizer.step()
    pred = output.argmax(dim=1, keepdim=True)
    correct += pred.eq(y.view_as(pred)).sum()
    hits += torch.argmax(output, 1).eq(y).sum()
""",
        # REINFORCE: log-probs collected on purpose, backpropagated after the episode
        """import torch
from torch.distributions import Categorical
def finish_episode(policy, env, optimizer):
    log_probs = []
    for t in range(1000):
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample()
        log_probs.append(m.log_prob(action))
        total_reward += reward
    policy_loss = -(torch.stack(log_probs) * returns).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
""",
    ]

    INVALID = [
        Invalid(
            """import torch
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss
""",
            line=7,
            fixed="""import torch
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss.item()
""",
        ),
        Invalid(
            """import torch
import torch.nn.functional as F
def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses
""",
            line=10,
            fixed="""import torch
import torch.nn.functional as F
def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses
""",
        ),
        Invalid(
            """import torch
running = 0
for x, y in loader:
    out = net(x)
    running = running + criterion(out, y)
    compute(x).backward()
""",
            line=5,
            fixed="""import torch
running = 0
for x, y in loader:
    out = net(x)
    running = running + criterion(out, y).item()
    compute(x).backward()
""",
        ),
        # dict of losses
        Invalid(
            """import torch
stats = {}
for batch in loader:
    losses = {"ce": ce_loss(batch), "kl": kl_term(batch)}
    sum(losses.values()).backward()
    for k, v in losses.items():
        stats[k] += v
""",
            line=7,
        ),
        # HF-style output.loss, meter.update
        Invalid(
            """import torch
class Trainer:
    def train_epoch(self):
        for batch in self.loader:
            output = self.model(**batch)
            output.loss.backward()
            self.optimizer.step()
            self.meter.update(output.loss)
""",
            line=8,
        ),
        # a list inside a dict of histories
        Invalid(
            """import torch
history = {"train_loss": []}
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    history["train_loss"].append(loss)
""",
            line=6,
            fixed="""import torch
history = {"train_loss": []}
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    history["train_loss"].append(loss.detach())
""",
        ),
        # collected model outputs in a training loop
        Invalid(
            """import torch
outputs = []
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    outputs.append(model(x))
""",
            line=8,
        ),
        # the loss only known by its backward() call, accumulated before it
        Invalid(
            """import torch
def fit(loader):
    epoch_loss = 0
    for batch in loader:
        loss = step_fn(batch)
        epoch_loss += loss
        loss.backward()
    return epoch_loss
""",
            line=6,
        ),
        # returned epoch loss from a loop that trains
        Invalid(
            """import torch
def train_epoch(model, loader, optimizer, loss_fn):
    total = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
    return total / len(loader)
""",
            line=9,
        ),
    ]
