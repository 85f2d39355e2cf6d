"""Evidence from the user's own code on the stack: what the traceback alone cannot say.

Reads (bounded) the local files of the user frames, found with the one frame resolver
(`correlate.resolve`), and answers the questions the fixes depend on:

- `eval_function`: the failing user function evaluates (its name, or `model.eval()` in it)
  and does not already run under `torch.no_grad()` / `torch.inference_mode()`;
- `gan_step`: the code trains a generator and a discriminator;
- `masked_inf`: logits are masked with `-inf` (a fully masked row or `0 * -inf` gives NaN);
- `locate_inplace`: the in-place operation on a tensor produced by the op an autograd
  error names (`output 0 of SigmoidBackward0` -> `torch.sigmoid(...)`), in the functions on
  the stack.

Never raises: unreadable or unparsable files give no evidence.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..model import Frame
from .correlate import resolve

_MAX_FILE_BYTES = 2_000_000
_MAX_FILES = 8
_EVAL_NAME = re.compile(r"(?i)(?:^|_)(?:val|valid|validate|validation|eval|evaluate|evaluation|test|predict|"
                        r"prediction|infer|inference|generate|sample)(?:_|$|\d)|^(?:evaluate|validate|predict|infer)")
_NO_GRAD = re.compile(r"\b(?:no_grad|inference_mode)\b")
_GAN = re.compile(r"(?i)\b(?:netD|netG|discriminator|generator|d_loss|g_loss|loss_D|loss_G|lossD|lossG|"
                  r"optimizer_D|optimizer_G|optD|optG|fake_(?:img|image|data|out|pred)s?|gen_imgs)\b")
_MASKED_INF = re.compile(r"""(?:float\(\s*['"]-inf['"]\s*\)|-\s*float\(\s*['"]inf['"]\s*\)|-\s*(?:math|np|numpy|torch)\.inf\b|"""
                         r"""float\(\s*['"]-infinity['"]\s*\)|-1e\s*\+?\s*(?:3[89]|[4-9]\d)\b)""")


@dataclass(frozen=True)
class UserSource:
    frame: Frame
    path: Path
    text: str
    lines: list[str]
    function: ast.AST | None  # the def the frame's line is in (None at module level)

    @property
    def function_text(self) -> str:
        node = self.function
        if node is None:
            return "\n".join(self.lines[max(0, self.frame.line - 40):self.frame.line + 5])
        end = getattr(node, "end_lineno", node.lineno) or node.lineno
        return "\n".join(self.lines[node.lineno - 1:end])


def user_sources(frames: tuple[Frame, ...] | list[Frame], base_dir: Path) -> list[UserSource]:
    """The local sources of the user frames, deepest first."""
    out: list[UserSource] = []
    trees: dict[Path, tuple[str, ast.AST | None]] = {}
    for frame in reversed(list(frames)):
        if not frame.is_user or len(out) >= _MAX_FILES * 4:
            continue
        local = resolve(frame.path, base_dir)
        if local is None:
            continue
        if local not in trees:
            if len(trees) >= _MAX_FILES:
                continue
            try:
                if local.stat().st_size > _MAX_FILE_BYTES:
                    continue
                text = local.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            try:
                tree: ast.AST | None = ast.parse(text)
            except (SyntaxError, ValueError):
                tree = None
            trees[local] = (text, tree)
        text, tree = trees[local]
        out.append(UserSource(frame, local, text, text.splitlines(), _enclosing(tree, frame.line)))
    return out


def _enclosing(tree: ast.AST | None, line: int) -> ast.AST | None:
    if tree is None:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno >= best.lineno):
                best = node
    return best


def eval_function(frames: tuple[Frame, ...] | list[Frame], sources: list[UserSource]) -> str | None:
    """The user function on the stack that evaluates without no_grad, or None."""
    by_frame = {id(s.frame): s for s in sources}
    for frame in reversed(list(frames)):
        if not frame.is_user:
            continue
        source = by_frame.get(id(frame))
        body = source.function_text if source is not None else ""
        named = bool(_EVAL_NAME.search(frame.function or ""))
        if not named and ".eval()" not in body:
            continue
        if source is not None and _NO_GRAD.search(body):
            return None  # already without autograd: the fix is elsewhere
        if _under_no_grad_decorator(source):
            return None
        return frame.function
    return None


def _under_no_grad_decorator(source: UserSource | None) -> bool:
    if source is None or source.function is None:
        return False
    return any(_NO_GRAD.search(ast.unparse(d)) for d in getattr(source.function, "decorator_list", []))


def gan_step(frames: tuple[Frame, ...] | list[Frame], sources: list[UserSource]) -> bool:
    text = "\n".join(f"{f.function} {f.code or ''}" for f in frames if f.is_user)
    text += "\n".join(s.function_text for s in sources)
    return len(set(m.group(0).lower() for m in _GAN.finditer(text))) >= 2


def masked_inf(sources: list[UserSource], extra: str = "") -> bool:
    if _MASKED_INF.search(extra):
        return True
    return any(_MASKED_INF.search(s.function_text) for s in sources)


# autograd node -> the forward calls that create it
_OPS = {
    "Sigmoid": ("sigmoid",), "Tanh": ("tanh",), "Relu": ("relu",), "Exp": ("exp",), "Log": ("log",),
    "Softmax": ("softmax",), "LogSoftmax": ("log_softmax",), "Pow": ("pow", "**"), "Sqrt": ("sqrt",),
    "Rsqrt": ("rsqrt",), "Mul": ("mul", "*"), "Div": ("div", "/"), "Add": ("add", "+"), "Sub": ("sub", "-"),
    "Addmm": ("linear", "addmm", "fc", "Linear"), "Mm": ("mm", "matmul", "@"), "Bmm": ("bmm", "matmul", "@"),
    "Mv": ("mv", "matmul", "@"), "Cudnn": ("conv", "lstm", "gru", "rnn"), "Convolution": ("conv",),
    "Clamp": ("clamp", "clip"), "Gelu": ("gelu",), "Silu": ("silu",), "LeakyRelu": ("leaky_relu",),
    "Elu": ("elu",), "Abs": ("abs",), "Sin": ("sin",), "Cos": ("cos",), "NativeLayerNorm": ("layer_norm", "norm"),
    "NativeBatchNorm": ("batch_norm", "bn", "norm"), "Embedding": ("embedding", "embed"),
    "View": ("view", "reshape"), "Unsqueeze": ("unsqueeze",), "Transpose": ("transpose", ".T"),
    "Index": ("[",), "Cat": ("cat",), "Stack": ("stack",), "Mean": ("mean",), "Sum": ("sum",),
}


@dataclass(frozen=True)
class InplaceSite:
    path: str  # as the frame printed it
    line: int
    code: str
    name: str  # the tensor modified
    producer_line: int
    producer_code: str
    op: str  # the forward op that produced it


def locate_inplace(grad_fn: str, sources: list[UserSource]) -> InplaceSite | None:
    """The in-place modification of a tensor produced by `grad_fn`'s forward op, in the
    functions on the stack (deepest first)."""
    node = re.sub(r"Backward\d*$", "", grad_fn or "")
    ops = _OPS.get(node) or ((node.lower(),) if node else ())
    seen: set[tuple[Path, int]] = set()
    for source in sources:
        key = (source.path, getattr(source.function, "lineno", 0))
        if key in seen:
            continue
        seen.add(key)
        scope = source.function if source.function is not None else None
        body = scope.body if scope is not None else _module_body(source.text)
        if body is None:
            continue
        site = _find_in(body, ops, source)
        if site is not None:
            return site
    return None


def _module_body(text: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(text).body
    except (SyntaxError, ValueError):
        return None


def _produced_by(value: ast.AST, ops: tuple[str, ...], segment: str) -> str | None:
    if not ops:
        return None
    for op in ops:
        if op in ("*", "/", "+", "-", "@", "**", "[", ".T"):
            if op in segment:
                return op
            continue
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name == op or name.lower().startswith(op.lower()) or op.lower() in name.lower():
                    return name
    return None


def _target_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _find_in(body: list[ast.stmt], ops: tuple[str, ...], source: UserSource) -> InplaceSite | None:
    statements = sorted((n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.stmt)),
                        key=lambda n: n.lineno)
    produced: dict[str, tuple[int, str, str]] = {}  # name -> (line, code, op)
    for stmt in statements:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt is not source.function:
            continue
        segment = ast.get_source_segment(source.text, stmt) or ""
        code = " ".join(segment.split()) if len(segment) < 300 else segment.splitlines()[0].strip()
        modified = _inplace_target(stmt)
        if modified is not None and modified in produced:
            line, producer_code, op = produced[modified]
            return InplaceSite(source.frame.path, stmt.lineno, code, modified, line, producer_code, op)
        if isinstance(stmt, ast.Assign):
            segment = ast.get_source_segment(source.text, stmt.value) or ""
            op = _produced_by(stmt.value, ops, segment)
            for target in stmt.targets:
                name = _target_name(target)
                if name is None:
                    continue
                if op is not None:
                    produced[name] = (stmt.lineno, code, op)
                else:
                    produced.pop(name, None)  # rebound to something else
    return None


def _inplace_target(stmt: ast.stmt) -> str | None:
    """The name a statement modifies in place: `x += 1`, `x.mul_(2)`, `x[i] = v`, `f(x, inplace=True)`."""
    if hasattr(stmt, "body"):
        return None  # a compound statement: its own statements are visited one by one
    if isinstance(stmt, ast.AugAssign):
        return _target_name(stmt.target)
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                return _target_name(target.value)
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.endswith("__") \
                and func.attr not in ("requires_grad_", "share_memory_", "retain_grad_"):
            name = _target_name(func.value)
            if name is not None:
                return name
        if any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in node.keywords) and node.args:
            name = _target_name(node.args[0])
            if name is not None:
                return name
    return None


def out_of_place(site: InplaceSite) -> str:
    """The statement rewritten without the in-place modification."""
    code = site.code
    found = re.match(r"^(?P<t>[\w.]+)\s*(?P<op>[-+*/@%]|//|\*\*)=\s*(?P<v>.+)$", code)
    if found:
        return f"{found['t']} = {found['t']} {found['op']} {found['v']}"
    found = re.match(r"^(?P<t>[\w.]+)\.(?P<m>[a-z]\w*?)_\((?P<a>.*)\)$", code)
    if found:
        return f"{found['t']} = {found['t']}.{found['m']}({found['a']})"
    if "inplace=True" in code:
        return code.replace("inplace=True", "inplace=False")
    if re.match(rf"^{re.escape(site.name)}\[", code):
        return f"{site.name} = {site.name}.clone(); {code}"
    return f"{site.name} = {site.name}.clone()  # before: {code}"
