"""Fix helpers, in one place: call a method on an expression, add keyword
arguments, make a module importable under a name that shadows nothing."""

from __future__ import annotations

import libcst as cst

from .analysis.scopes import code
from .analysis.model import FileModel
from .rule import InsertAfter, InsertBefore, Replace


def atom(expr: cst.BaseExpression) -> str:
    """Source of `expr` safe to put before `.method()`."""
    text = code(expr)
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or (expr.lpar and expr.rpar):
        return text
    return f"({text})"


def with_method(expr: cst.BaseExpression, method: str) -> str:
    return f"{atom(expr)}.{method}()"


def sum_operand(expr: cst.BaseExpression) -> str:
    """Source of `expr` safe as the left operand of `+`."""
    text = code(expr)
    if not expr.lpar and (isinstance(expr, (cst.IfExp, cst.Lambda, cst.BooleanOperation, cst.Comparison)) or (
            isinstance(expr, cst.BinaryOperation) and isinstance(
                expr.operator, (cst.BitOr, cst.BitAnd, cst.BitXor, cst.LeftShift, cst.RightShift)))):
        return f"({text})"
    return text


def with_kwargs(call: cst.Call, pairs: list[tuple[str, str]]) -> cst.Call:
    """`call` with `key=value` arguments appended, keeping one-argument-per-line layouts."""
    args = list(call.args)
    if not args:
        new = [cst.Arg(cst.parse_expression(v), keyword=cst.Name(k),
                       equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                       comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
               for k, v in pairs]
        new[-1] = new[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return call.with_changes(args=new)
    last = args[-1]
    multiline = isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after,
                                                                 cst.ParenthesizedWhitespace)
    tail = last.comma
    separator: cst.Comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if multiline:
        before = args[-2].comma if len(args) >= 2 else None
        if isinstance(before, cst.Comma) and isinstance(before.whitespace_after, cst.ParenthesizedWhitespace):
            separator = before
        else:
            separator = cst.Comma(whitespace_after=call.whitespace_before_args)  # type: ignore[arg-type]
    args[-1] = last.with_changes(comma=separator)
    for index, (keyword, value) in enumerate(pairs):
        args.append(cst.Arg(
            value=cst.parse_expression(value), keyword=cst.Name(keyword),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")),
            comma=tail if index == len(pairs) - 1 else separator))
    return call.with_changes(args=args)


def free_name(model: FileModel, wanted: str, *, taken: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """`wanted`, or `wanted_2`, ... : a module-level name nothing else binds."""
    name, counter = wanted, 1
    while name in model.module_names or name in taken or model.names.imported(name) is not None:
        counter += 1
        name = f"{wanted}_{counter}"
    return name


def module_reference(model: FileModel, module: str) -> tuple[str, str | None]:
    """How to refer to `module` at module level: (name, import line to add or None).
    An existing plain import is reused; otherwise the import gets a name that
    neither shadows nor is shadowed by an existing binding (`import random as random_`)."""
    alias = model.names.alias_of(module)
    if alias is not None:
        return alias, None
    head = module.split(".")[0]
    if head not in model.module_names and model.names.imported(head) is None:
        return module, f"import {module}"
    name = free_name(model, head + "_")
    return name, f"import {module} as {name}"


def insert_after_imports(model: FileModel, lines: list[str]) -> InsertAfter | InsertBefore | None:
    anchor = model.last_import  # inserted imports go after the last top-level import
    if anchor is not None:
        return InsertAfter(anchor, "\n".join(lines))
    tops = model.facts["layout"]
    return InsertBefore(tops[0].node, "\n".join(lines)) if tops else None


def append_kwargs(call: cst.Call, pairs: list[tuple[str, str]]):
    """A change that appends `key=value` arguments after `call`'s last argument, as text
    next to it, so that a multi-line call keeps its layout and indentation (a whole call
    rendered on its own loses the indentation of its continuation lines)."""
    extra = ", ".join(f"{k}={v}" for k, v in pairs)
    if not call.args:
        return Replace(call, f"{code(call.func)}({extra})")
    last = call.args[-1].value
    text = code(last)
    if "\n" in text:
        return Replace(call, with_kwargs(call, pairs))
    return Replace(last, f"{text}, {extra}")
