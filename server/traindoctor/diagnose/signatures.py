"""Loads traceback signatures from rules/signatures/*.yaml and matches them.

A signature is data (see rules/signatures/README.md): regular expressions that
select it, regular expressions whose named groups become *facts*, and
templates for the title, root cause and fixes that are filled from those facts.
A template entry is either a string or `{text|title+detail, when: [fact, '!fact']}`;
it is used only when every `{placeholder}` has a value and every `when` holds.
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from ..catalog import rules_dir
from ..model import FAILURE_MODES, FixSuggestion

_KIND_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def kinds() -> tuple[str, ...]:
    """The kinds a diagnosis can name: one per signature file's `kind`, "other" last.
    Adding a kind is adding a YAML file under rules/signatures/."""
    found = dict.fromkeys(s.kind for s in sorted(load_signatures(), key=lambda s: s.source.name))
    found.pop("other", None)
    return (*found, "other")


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # computed from the catalog on first use
        return kinds()
    raise AttributeError(name)

_FORMATTER = string.Formatter()
_SITE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::\s.*)?$")  # path:line, or path:line: code


class SignatureError(ValueError):
    """A signature file that does not follow the schema."""


@dataclass(frozen=True)
class Template:
    text: str
    when: tuple[str, ...] = ()
    detail: str = ""  # fixes only
    fields: tuple[str, ...] = ()
    at: str = ""  # fixes only: the fact holding "path:line" of the line the fix edits

    def location(self, facts: Mapping[str, Any]) -> dict[str, Any] | None:
        """{path, line} of the line this fix edits (its `at` fact), or None."""
        found = _SITE.match(str(facts.get(self.at) or "")) if self.at else None
        return {"path": found.group("path"), "line": int(found.group("line"))} if found else None

    def applies(self, facts: Mapping[str, Any]) -> bool:
        for cond in self.when:
            negate = cond.startswith("!")
            value = bool(facts.get(cond.lstrip("!")))
            if value == negate:
                return False
        return all(_known(facts.get(name)) for name in self.fields)

    def render(self, facts: Mapping[str, Any]) -> tuple[str, str]:
        values = {name: facts[name] for name in self.fields}
        return self.text.format_map(values), self.detail.format_map(values)


@dataclass(frozen=True)
class Signature:
    id: str
    kind: str
    mode: str
    priority: int
    confidence: float
    scope: str  # "exception" or "log"
    symptom: bool  # a consequence of another failure (peer crash, launcher summary)
    patterns: tuple[re.Pattern[str], ...]
    extract: tuple[re.Pattern[str], ...]
    extract_log: tuple[re.Pattern[str], ...]
    context: tuple[re.Pattern[str], ...]  # one must match the chain's frames or the log too
    titles: tuple[Template, ...]
    root_cause: tuple[Template, ...]
    fixes: tuple[Template, ...]
    related_rules: tuple[str, ...]
    source: Path
    # other explanations of the same message: (kind, cause template, weight relative to this one)
    alternatives: tuple[tuple[str, Template, float], ...] = ()
    location_expected: bool = True  # a Python line is expected; without one the diagnosis is less sure
    # a log line that stands in for an exception the paste lost: no candidate when its traceback follows
    exception_missing: bool = False

    def match(self, text: str) -> dict[str, str] | None:
        """Facts from the first pattern that matches `text`, or None."""
        for pattern in self.patterns:
            found = pattern.search(text)
            if found:
                return {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    def extract_facts(self, text: str, log_text: str) -> dict[str, str]:
        facts: dict[str, str] = {}
        for pattern, haystack in [(p, text) for p in self.extract] + [(p, log_text) for p in self.extract_log]:
            found = pattern.search(haystack)
            if found:
                for key, value in found.groupdict().items():
                    if value is not None and key not in facts:
                        facts[key] = value
        return facts

    def title_for(self, facts: Mapping[str, Any]) -> str:
        for template in self.titles:
            if template.applies(facts):
                return template.render(facts)[0]
        return self.kind

    def root_cause_for(self, facts: Mapping[str, Any]) -> str:
        return " ".join(t.render(facts)[0] for t in self.root_cause if t.applies(facts))

    def fix_suggestions(self, facts: Mapping[str, Any]) -> list[FixSuggestion]:
        return fix_suggestions(self.fixes, facts)

    def fixes_for(self, facts: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [t.render(facts) for t in self.fixes if t.applies(facts)]


def fix_suggestions(templates: Iterable[Template], facts: Mapping[str, Any]) -> list[FixSuggestion]:
    """The fixes that apply, each with the location of the line it edits when its template names one."""
    return [FixSuggestion(*t.render(facts), location=t.location(facts)) for t in templates if t.applies(facts)]


def _known(value: Any) -> bool:
    return value is not None and value != "" and value != ()


_FIELD_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _fields(*texts: str) -> tuple[str, ...]:
    names: list[str] = []
    for text in texts:
        try:
            parsed = list(_FORMATTER.parse(text))
        except ValueError as exc:
            raise SignatureError(f"bad template {text!r}: {exc} (write literal braces as {{{{ }}}})") from None
        for _, name, spec, _ in parsed:
            if name is None:
                continue
            if not _FIELD_NAME.match(name) or spec:
                raise SignatureError(f"bad placeholder {{{name}}} in {text!r} (write literal braces as {{{{ }}}})")
            if name not in names:
                names.append(name)
    return tuple(names)


def _templates(raw: Any, where: str, *, fix: bool = False) -> tuple[Template, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SignatureError(f"{where}: expected a list")
    out = []
    for item in raw:
        try:
            parsed = _template(item, where, fix)
        except SignatureError as exc:
            raise SignatureError(f"{where}: {exc}") from None
        out.append(parsed)
    return tuple(out)


def _template(item: Any, where: str, fix: bool) -> Template:
    if isinstance(item, str) and not fix:
        return Template(item, fields=_fields(item))
    if not isinstance(item, dict):
        raise SignatureError("each entry must be a string or a mapping")
    when = item.get("when") or []
    if isinstance(when, str):
        when = [when]
    if fix:
        title, detail = str(item.get("title", "")), str(item.get("detail", ""))
        if not title:
            raise SignatureError("a fix needs a title")
        return Template(title, tuple(map(str, when)), detail, _fields(title, detail), str(item.get("at") or ""))
    text = str(item.get("text", ""))
    if not text:
        raise SignatureError("a conditional entry needs `text`")
    return Template(text, tuple(map(str, when)), fields=_fields(text))


def _regexes(raw: Any, where: str) -> tuple[re.Pattern[str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SignatureError(f"{where}: expected a list of regular expressions")
    out = []
    for source in raw:
        try:
            out.append(re.compile(str(source), re.MULTILINE))
        except re.error as exc:
            raise SignatureError(f"{where}: bad regular expression {source!r}: {exc}") from None
    return tuple(out)


def _parse_signature(data: Any, path: Path) -> Signature:
    if not isinstance(data, dict):
        raise SignatureError(f"{path.name}: each signature must be a mapping")
    sid = str(data.get("id") or "")
    where = f"{path.name}:{sid or '?'}"
    kind, mode = str(data.get("kind") or ""), str(data.get("mode") or "")
    if not sid:
        raise SignatureError(f"{where}: missing id")
    if not _KIND_NAME.match(kind):
        raise SignatureError(f"{where}: kind {kind!r} must be lower-case words joined by '-'")
    if mode not in FAILURE_MODES:
        raise SignatureError(f"{where}: unknown failure mode {mode!r}")
    scope = str(data.get("scope") or "exception")
    if scope not in ("exception", "log"):
        raise SignatureError(f"{where}: scope must be exception or log")
    try:
        confidence = float(data.get("confidence", 0.5))
        priority = int(data.get("priority", 50))
    except (TypeError, ValueError):
        raise SignatureError(f"{where}: confidence and priority must be numbers") from None
    if not 0.0 <= confidence <= 1.0:
        raise SignatureError(f"{where}: confidence must be within 0..1")
    patterns = _regexes(data.get("patterns"), where)
    if not patterns and kind != "other":
        raise SignatureError(f"{where}: needs at least one pattern")
    titles = _templates(data.get("title"), f"{where} title")
    if not titles:
        raise SignatureError(f"{where}: needs a title")
    return Signature(
        id=sid,
        kind=kind,
        mode=mode,
        priority=priority,
        confidence=confidence,
        scope=scope,
        symptom=bool(data.get("symptom", False)),
        patterns=patterns,
        extract=_regexes(data.get("extract"), where),
        extract_log=_regexes(data.get("extract_log"), where),
        context=_regexes(data.get("context"), where),
        titles=titles,
        root_cause=_templates(data.get("root_cause"), f"{where} root_cause"),
        fixes=_templates(data.get("fixes"), f"{where} fixes", fix=True),
        related_rules=tuple(str(r) for r in data.get("related_rules") or ()),
        source=path,
        alternatives=_alternatives(data.get("alternatives"), where),
        location_expected=bool(data.get("location_expected", True)),
        exception_missing=bool(data.get("exception_missing", False)),
    )


def _alternatives(raw: Any, where: str) -> tuple[tuple[str, Template, float], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SignatureError(f"{where} alternatives: expected a list")
    out = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("kind") or not item.get("cause"):
            raise SignatureError(f"{where} alternatives: each needs `kind` and `cause`")
        kind = str(item["kind"])
        if not _KIND_NAME.match(kind):
            raise SignatureError(f"{where} alternatives: bad kind {kind!r}")
        try:
            weight = float(item.get("weight", 0.5))
        except (TypeError, ValueError):
            raise SignatureError(f"{where} alternatives: weight must be a number") from None
        template = _template({"text": item["cause"], "when": item.get("when") or []}, where, False)
        out.append((kind, template, weight))
    return tuple(out)


_FILE_DEFAULTS = ("location_expected",)


def load_signatures_from(directory: Path) -> tuple[Signature, ...]:
    signatures: list[Signature] = []
    seen: set[str] = set()
    for path in sorted(directory.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise SignatureError(f"{path.name}: invalid YAML: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
            raise SignatureError(f"{path.name}: expected a mapping with a `signatures` list")
        defaults = {k: data[k] for k in _FILE_DEFAULTS if k in data}  # file-level keys apply to every signature
        for entry in data["signatures"]:
            signature = _parse_signature({**defaults, **entry} if isinstance(entry, dict) else entry, path)
            if signature.id in seen:
                raise SignatureError(f"{path.name}: duplicate signature id {signature.id!r}")
            seen.add(signature.id)
            signatures.append(signature)
    if not any(s.kind == "other" for s in signatures):
        raise SignatureError(f"{directory}: no `other` fallback signature")
    # Highest priority first: the first match is the most specific explanation.
    signatures.sort(key=lambda s: -s.priority)
    return tuple(signatures)


@functools.cache
def load_signatures() -> tuple[Signature, ...]:
    """All signatures of the installed catalog, highest priority first."""
    return load_signatures_from(rules_dir() / "signatures")


def fallback() -> Signature:
    return next(s for s in load_signatures() if s.kind == "other")


def exception_signatures() -> tuple[Signature, ...]:
    return tuple(s for s in load_signatures() if s.scope == "exception" and s.patterns)


def log_signatures() -> tuple[Signature, ...]:
    return tuple(s for s in load_signatures() if s.scope == "log")


def match_exception(text: str, candidates: Iterable[Signature] | None = None,
                    context: str = "") -> tuple[Signature, dict[str, str]] | None:
    """The highest-priority exception signature matching `Type: message`; a signature
    with `context` patterns also needs one of them in `context` (the frames, the log)."""
    signatures = tuple(candidates) if candidates is not None else exception_signatures()
    # a message hard-wrapped by a terminal or a paste (mid-word, or at a space the wrap ate)
    haystacks = (text, _WRAP.sub("", text), _WRAP.sub(" ", text)) if "\n" in text else (text,)
    for signature in signatures:
        if signature.context and not any(p.search(context) for p in signature.context):
            continue
        for haystack in haystacks:
            facts = signature.match(haystack)
            if facts is not None:
                return signature, facts
    return None


_WRAP = re.compile(r"\n(?= ?\S)")  # a line break inside a message: the next line continues it, unindented
