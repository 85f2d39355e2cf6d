"""`traindoctor rules [CODE]`: list the rules, or print one rule's page."""

from __future__ import annotations

import argparse

from ..catalog import CatalogError, get_rule, load_rules
from ..docs import render_rule
from . import errors


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rules", help="list the lint rules, or explain one")
    parser.add_argument("rule", nargs="?", metavar="CODE", help="a rule code (TRN101) or name")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        rules = load_rules()
    except CatalogError as exc:
        return errors.error(f"broken rule catalog: {exc}")
    if args.rule:
        info = get_rule(args.rule)
        if info is None:
            return errors.error(f"unknown rule {args.rule!r} (see `traindoctor rules`)")
        print(render_rule(info).split("\n", 1)[1].strip())
        return 0
    width = max((len(r.name) for r in rules.values()), default=0)
    for info in rules.values():
        print(f"{info.code}  {info.name:<{width}}  {info.mode:<14}  {info.summary}")
    return 0
