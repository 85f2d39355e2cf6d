"""The lint engine: source -> Findings, incrementally.

Flow for one file (see docs/ARCHITECTURE.md, "The lint engine"):
  pre-filter (no torch: nothing to do) -> split into top-level blocks ->
  parse each block (cached by its text) -> import aliases (statement-level
  scan) -> the analysis of each block (cached by text + aliases) -> the file
  model (merged facts, one version number per fact category) -> the rules
  over each block in one traversal, each rule's results cached by the block
  and the versions of the categories it reads -> positions only for blocks
  with reports -> suppressions and config.

After an edit inside one block only that block is parsed and checked again,
plus the rules (in other blocks) that read a fact category the edit changed.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import pkgutil
import re
import dataclasses
from typing import Hashable, Iterator, Sequence

import libcst as cst
from libcst.metadata import CodeRange

from ..catalog import get_rule
from ..config import Config
from ..model import Finding, Fix, Position, Range, RelatedLocation, TextEdit
from .blocks import Block, BlockSplitter, source_lines
from .analysis.autograd_off import call_turns_grad_off
from .analysis.collect import BlockAnalysis
from .analysis.facts import CATEGORIES
from .analysis.model import FileModel
from .analysis.names import Names, top_level_aliases
from .analysis.summarize import summarize_model
from .analysis.summary import EMPTY_IMPORTS, imports_of
from .analysis.values import Values
from .context import WalkState
from .parsing import parse_module
from .positions import BlockPositions
from .rule import FixSpec, InsertBefore, Replace, Report, ReportSink, Rule, RuleContext
from .walk import forget_children, walk as walk_tree


class LintError(Exception):
    """The file could not be linted; the message is one line for the user."""


@functools.cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every Rule subclass in `traindoctor.lint.rules`, sorted by code."""
    from . import rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and "CODE" in vars(value):
                found[value.CODE] = value
    return tuple(found[code] for code in sorted(found))


_NONE: frozenset[int] = frozenset()


class _ParsedBlock:
    """One block's parse tree and what is derived from it, each cached under
    the key of what it depends on besides the text."""

    __slots__ = ("text", "module", "aliases", "_positions", "_analysis", "_reports", "_lines")

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.module = parse_module(text)
        except cst.ParserSyntaxError as exc:
            raise LintError(f"syntax error: {exc.message}") from None
        except RecursionError:
            raise LintError("syntax error: nesting too deep to parse") from None
        self.aliases = top_level_aliases(self.module)
        self._positions: BlockPositions | None = None
        self._analysis: tuple[Hashable, BlockAnalysis] | None = None
        # rule code -> (key, reports, ids of nodes of other blocks they point at)
        self._reports: dict[str, tuple[Hashable, Sequence[Report], frozenset[int]]] = {}
        self._lines: list[str] | None = None

    def position_of(self, node: cst.CSTNode) -> CodeRange | None:
        if self._positions is None:
            self._positions = BlockPositions(self.module, self.text)
        return self._positions.get(node)

    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = source_lines(self.text)
        return self._lines

    def analysis(self, names: Names) -> BlockAnalysis:
        if self._analysis is None or self._analysis[0] != names.aliases:
            self._analysis = (names.aliases, BlockAnalysis(self.module, names, self.text))
            self._reports.clear()
        return self._analysis[1]

    def reports(self, model: FileModel, plan: "_RulePlan") -> list[Report]:
        """Every rule's results for this block; a rule runs again only when the fact
        categories it reads changed or a node its results point at is gone. A rule with
        nothing to visit in the block (Rule.applies_to) gets no results without a traversal."""
        cache = self._reports
        rules, keys, owners = plan.rules, plan.keys, plan.owners
        if cache:
            stale = []
            for index, (rule, key) in enumerate(zip(rules, keys)):
                cached = cache.get(rule.CODE)
                if cached is None or cached[0] != key or (cached[2] and not all(i in owners for i in cached[2])):
                    stale.append(index)
        else:
            stale = range(len(rules))
        if stale:
            analysis = self.analysis(model.names)
            applicable = plan.applicable(analysis)
            visiting = []
            for index in stale:
                if applicable[index]:
                    visiting.append(index)
                else:
                    cache[rules[index].CODE] = plan.nothing[index]
            if visiting:
                sinks = [ReportSink() for _ in visiting]
                walk = WalkState(model.names, grad_off_call=functools.partial(call_turns_grad_off, model))
                context = RuleContext(walk, model, analysis, Values(model, analysis, walk))
                visitors = [rules[index](context, sink) for index, sink in zip(visiting, sinks)]
                walk_tree(self.module, visitors, walk)
                for index, sink in zip(visiting, sinks):
                    reports = sink.reports
                    if not reports:
                        cache[rules[index].CODE] = plan.nothing[index]
                        continue
                    foreign = frozenset(id(n) for r in reports for n in _report_nodes(r) if id(n) in owners)
                    cache[rules[index].CODE] = (keys[index], reports, foreign)
            if plan.runs is not None:
                plan.runs.extend(rules[index].CODE for index in stale)
        found: list[Report] = []
        for rule in rules:
            reports = cache[rule.CODE][1]
            if reports:
                found.extend(reports)
        return found


class _RulePlan:
    """The rules of one lint: the version key of the fact categories each reads, which
    blocks own which fact nodes, and which rules can report on a block of a given shape."""

    def __init__(self, rules: Sequence[type[Rule]], model: FileModel, owners: dict[int, int],
                 runs: list[str] | None) -> None:
        self.rules = rules
        # Every rule reads the project's facts through values.py (what an imported function
        # returns): its cached results go when they change.
        self.keys = [model.version_key(rule.READS + ("project",)) for rule in rules]
        # A rule's cached result "no reports" under the current key, shared by every block
        # (one per block and rule was two fifths of the memory of a file of one-liners).
        self.nothing: list[tuple[Hashable, tuple[()], frozenset[int]]] = [(key, (), _NONE) for key in self.keys]
        self.owners = owners
        self.runs = runs  # tests: receives each rule whose results a block recomputed
        self._applicable: dict[Hashable, tuple[bool, ...]] = {}

    def applicable(self, analysis: BlockAnalysis) -> tuple[bool, ...]:
        found = self._applicable.get(analysis.shape)
        if found is None:
            found = self._applicable[analysis.shape] = tuple(rule.applies_to(analysis) for rule in self.rules)
        return found


class LintCache:
    """Parsed blocks of one document, reused across edits. Keep one per open
    document; not thread-safe (lint one version of a document at a time)."""

    def __init__(self) -> None:
        # text -> parsed blocks with that text (identical blocks, e.g. two
        # `import numpy as np` lines, must stay distinct trees: nodes are
        # told apart by identity)
        self._blocks: dict[str, list[_ParsedBlock]] = {}
        self.splitter = BlockSplitter()
        self.model: FileModel | None = None
        self.runs: list[str] | None = None  # tests: a list records each rule whose results a block recomputed
        self.summary = None  # the file's project summary (analysis/summary.py) of the last lint, when asked
        self.summary_key: tuple = ()  # the fact versions it was built from

    def blocks_for(self, blocks: Sequence[Block]) -> list[_ParsedBlock]:
        available = {text: list(parsed) for text, parsed in self._blocks.items()}
        found: list[_ParsedBlock | None] = []
        for block in blocks:
            reusable = available.get(block.text)
            found.append(reusable.pop(0) if reusable else None)
        parsed = [item if item is not None else _ParsedBlock(block.text) for item, block in zip(found, blocks)]
        # Keep only what the current text uses: memory stays flat over edits.
        kept: dict[str, list[_ParsedBlock]] = {}
        for item in parsed:
            kept.setdefault(item.text, []).append(item)
        self._blocks = kept
        return parsed


# --- suppressions ---------------------------------------------------------------

_SUPPRESS = re.compile(
    r"#\s*(?:traindoctor:\s*ignore(?:\[(?P<td>[^\]]*)\])?(?!-)|noqa(?::\s*(?P<nq>[A-Za-z0-9_, -]+))?)",
    re.IGNORECASE,
)
_IGNORE_FILE = re.compile(r"#\s*traindoctor:\s*ignore-file\b", re.IGNORECASE)


def _suppressed_codes(line: str) -> set[str] | None:
    """Codes suppressed on a line; an empty set means all; None means none."""
    if "#" not in line:
        return None
    codes: set[str] | None = None
    for match in _SUPPRESS.finditer(line):
        listed = match.group("td") if match.group("td") is not None else match.group("nq")
        if listed is None:
            return set()
        codes = (codes or set()) | {c.strip().upper() for c in re.split(r"[,\s]+", listed) if c.strip()}
    return codes


def is_suppressed(lines: Sequence[str], finding: Finding) -> bool:
    for number in range(finding.range.start.line, min(finding.range.end.line, len(lines) - 1) + 1):
        codes = _suppressed_codes(lines[number])
        if codes is not None and (not codes or finding.code in codes):
            return True
    return False


def ignores_file(source: str) -> bool:
    return "ignore-file" in source and _IGNORE_FILE.search(source) is not None


# --- from reports to findings ---------------------------------------------------


class _Locator:
    """Absolute ranges for nodes of any block; positions are computed only
    for blocks that own a reported node. A node outside the reporting block
    can only have reached the rule through a collector's record, so records
    tell which block owns it (no search through every block)."""

    def __init__(self, blocks: Sequence[Block], parsed: Sequence[_ParsedBlock],
                 owners: dict[int, int]) -> None:
        self.blocks = blocks
        self.parsed = parsed
        self.owners = owners

    def find(self, node: cst.CSTNode, hint: int) -> tuple[int, CodeRange] | None:
        found = self.parsed[hint].position_of(node)
        if found is not None:
            return hint, found
        owner = self.owners.get(id(node))
        if owner is None or owner == hint:
            return None
        found = self.parsed[owner].position_of(node)
        return (owner, found) if found is not None else None

    def range(self, node: cst.CSTNode, hint: int) -> Range | None:
        found = self.find(node, hint)
        if found is None:
            return None
        index, code_range = found
        offset = self.blocks[index].start_line
        return Range(
            Position(code_range.start.line - 1 + offset, code_range.start.column),
            Position(code_range.end.line - 1 + offset, code_range.end.column),
        )

    def edits(self, spec: FixSpec, hint: int) -> tuple[TextEdit, ...] | None:
        edits = []
        for change in spec.changes:
            found = self.find(change.node, hint)
            if found is None:
                return None
            index, code_range = found
            block, parsed = self.blocks[index], self.parsed[index]
            offset = block.start_line
            if isinstance(change, Replace):
                new = change.new if isinstance(change.new, str) else parsed.module.code_for_node(change.new)
                edits.append(TextEdit(
                    Range(Position(code_range.start.line - 1 + offset, code_range.start.column),
                          Position(code_range.end.line - 1 + offset, code_range.end.column)),
                    new,
                ))
            else:
                lines = parsed.lines()
                first = lines[code_range.start.line - 1]
                indent = first[: len(first) - len(first.lstrip(" \t"))]
                text = "".join(
                    (indent + line if line.strip() else "") + "\n" for line in change.text.splitlines()
                )
                if isinstance(change, InsertBefore):
                    at = Position(code_range.start.line - 1 + offset, 0)
                else:
                    end_line = code_range.end.line - 1
                    if end_line + 1 < len(lines) or lines[end_line].endswith(("\n", "\r")):
                        at = Position(end_line + 1 + offset, 0)
                    else:  # last line of the file without a newline
                        at = Position(end_line + offset, len(lines[end_line]))
                        text = "\n" + text
                edits.append(TextEdit(Range(at, at), text))
        return tuple(edits)


def _findings_for(
    path: str,
    blocks: Sequence[Block],
    parsed: Sequence[_ParsedBlock],
    per_block: Sequence[list[Report]],
    config: Config,
    owners: dict[int, int],
) -> list[Finding]:
    locator = _Locator(blocks, parsed, owners)
    findings: list[Finding] = []
    groups: dict[int, tuple[Range, str]] = {}  # id(finding) -> its group node's range, the label of other places
    for index, reports in enumerate(per_block):
        for report in reports:
            info = get_rule(report.code)
            if info is None:
                continue
            where = locator.range(report.node, index)
            if where is None:
                continue
            fix = None
            if report.fix is not None:
                edits = locator.edits(report.fix, index)
                if edits:
                    fix = Fix(report.fix.title, edits, report.fix.safe)
            related = []
            for rel in report.related:
                rel_range = locator.range(rel.node, index)
                if rel_range is not None:
                    related.append(RelatedLocation(rel.message, rel_range))
            finding = Finding(
                code=info.code,
                name=info.name,
                mode=info.mode,
                severity=config.severity_for(info.code, info.severity, path),
                message=report.message or info.message,
                path=path,
                range=where,
                fix=fix,
                related=tuple(related),
            )
            findings.append(finding)
            group = locator.range(report.group.node, index) if report.group is not None else None
            if group is not None:
                groups[id(finding)] = (group, report.group.message)
    if groups:
        findings = _grouped(findings, groups)
    findings.sort(key=lambda f: (f.range, f.code))
    # one finding per code and range (a node reached twice)
    unique: list[Finding] = []
    for finding in findings:
        if not unique or (unique[-1].range, unique[-1].code) != (finding.range, finding.code):
            unique.append(finding)
    return unique


def _grouped(findings: list[Finding], groups: dict[int, tuple[Range, str]]) -> list[Finding]:
    """One finding per rule and group (Rule.report's `group`): the first place, with
    every other place as a related location, and one fix made of all the places' edits
    (none when a place has no fix: a partial rewrite would break the others)."""
    members: dict[tuple[str, Range], list[Finding]] = {}
    labels: dict[tuple[str, Range], str] = {}
    for finding in findings:
        if id(finding) in groups:
            where, label = groups[id(finding)]
            members.setdefault((finding.code, where), []).append(finding)
            labels[(finding.code, where)] = label
    merged: dict[int, Finding | None] = {}
    for key, group in members.items():
        group.sort(key=lambda f: f.range)
        first, others = group[0], group[1:]
        if others:
            related = list(first.related) + [RelatedLocation(labels[key], other.range) for other in others]
            fix = None
            if all(f.fix is not None for f in group):
                edits = tuple(dict.fromkeys(e for f in group for e in f.fix.edits))
                fix = Fix(first.fix.title, edits, all(f.fix.safe for f in group))
            first = dataclasses.replace(
                first, related=tuple(dict.fromkeys(related)), fix=fix,
                message=f"{first.message} ({len(others)} more place{'s' * (len(others) != 1)} in related locations)")
        merged[id(group[0])] = first
        for other in others:
            merged[id(other)] = None
    return [merged.get(id(f), f) for f in findings if merged.get(id(f), f) is not None]


def _report_nodes(report: Report) -> list[cst.CSTNode]:
    nodes = [related.node for related in report.related]
    if report.group is not None:
        nodes.append(report.group.node)
    if report.fix is not None:
        nodes.extend(change.node for change in report.fix.changes)
    return nodes


def _fact_nodes(facts: object) -> Iterator[cst.CSTNode]:
    """The nodes a block's facts carry (fix anchors and related locations)."""
    for category in CATEGORIES:
        for fact in getattr(facts, category):
            for attr in ("node", "stmt"):
                node = getattr(fact, attr, None)
                if node is not None:
                    yield node
            for event in getattr(fact, "events", ()):  # a training Routine's: related locations in helpers
                if event.node is not None:
                    yield event.node


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Parse trees are millions of small objects that live until the lint ends; each
    full cycle collection walks all of them, which cost a third of linting a large
    file. The lint makes no reference cycles worth collecting before it returns.
    Wrap the call that owns the LintCache: a one-off cache is then freed before the
    collector runs again, which spares one more pass over every tree."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lint_blocks(source: str, path: str, config: Config, cache: LintCache, project=None) -> list[Finding]:
    """Lint `source` (already checked to be text worth linting); see collector_paused.
    `project`: what the file reads from the rest of its project, through `imported_for(path,
    imports)` (a ProjectIndex, or check's precomputed facts); with `wants_summary`, the file's
    own summary of this text is left in `cache.summary`."""
    blocks = cache.splitter.split(source)
    try:
        parsed = cache.blocks_for(blocks)
    except LintError:  # a syntax error the split's scan let through: the parser's report, as without it
        blocks = cache.splitter.split(source, exactly=True)
        parsed = cache.blocks_for(blocks)
    names = Names(tuple(alias for p in parsed for alias in p.aliases))
    rules = [] if names.framework_of_another_kind() else [rule for rule in all_rules() if _wanted(rule, config, path)]
    analyses = [p.analysis(names) for p in parsed]
    imported = EMPTY_IMPORTS
    if project is not None:
        imports = imports_of(top.node for a in analyses for top in a.facts.layout)
        imported = project.imported_for(path, imports)
        if any(fact.name == "*" for fact in imports):  # `from utils import *` binding `F`, `nn`...
            own = {local.lstrip("=") for local, _ in names.aliases} | \
                {name for a in analyses for top in a.facts.layout for name in top.names}
            star = tuple((local, full) for local, full in imported.star_aliases() if local not in own)
            if star:
                names = Names(names.aliases + star)
                analyses = [p.analysis(names) for p in parsed]
    model = FileModel(names, analyses, cache.model, path, imported)
    cache.model = model
    owners: dict[int, int] = {}
    for index, analysis in enumerate(analyses):
        for node in _fact_nodes(analysis.facts):
            owners[id(node)] = index
    plan = _RulePlan(rules, model, owners, cache.runs)
    try:
        per_block = [p.reports(model, plan) for p in parsed]
        if getattr(project, "wants_summary", False):
            # the same facts (every category's version) say the same things: the summary stands
            key = tuple(model.versions.items())
            if cache.summary is None or cache.summary_key != key:
                try:
                    cache.summary, cache.summary_key = summarize_model(model), key
                except RecursionError:  # a summary is an extra: the findings stand without it
                    cache.summary, cache.summary_key = None, ()
    finally:
        model.lint_done()
        forget_children()
    findings = _findings_for(path, blocks, parsed, per_block, config, owners)
    if findings and ("#" in source):
        lines = [line for p in parsed for line in p.lines()]
        findings = [f for f in findings if not is_suppressed(lines, f)]
    return findings


def _wanted(rule: type[Rule], config: Config, path: str) -> bool:
    info = get_rule(rule.CODE)
    return info is not None and config.enabled(info.code, info.name, path, info.rule_set)
