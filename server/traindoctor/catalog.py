"""Loads and validates the rule catalog in rules/ (knowledge as data).

`rules/lint/<CODE>.yaml` holds one lint rule each. The directory is shipped in
the wheel as the package `traindoctor._rules`; in a source checkout or an
editable install it is the top-level `rules/` folder.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .model import FAILURE_MODES, Severity

_REQUIRED = (
    "code",
    "name",
    "mode",
    "severity",
    "summary",
    "message",
    "why",
    "fix",
    "valid",
    "invalid",
    "references",
)
_CODE = re.compile(r"^TRN[1-7]\d\d$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# Rule codes are grouped by failure area (docs/ARCHITECTURE.md).
_CODE_GROUP_MODES = {
    "1": {"oom"},
    "2": {"repro-failure"},
    "3": {"metric-error", "silent-error"},
    "4": {"nan-gradient"},
    "5": {"slow-training", "slow-data"},
    "6": {"crash"},
    "7": {"silent-error"},
}

# libyaml's parser where PyYAML was built with it: ten times faster than the pure-Python
# one, which spent ~0.2 s of every `check` loading rules/.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogError(ValueError):
    """A rule file that does not follow the schema."""


@dataclass(frozen=True)
class Reference:
    title: str
    url: str


@dataclass(frozen=True)
class Example:
    """An `invalid` example: the rule must flag it (at `line`, 1-based, when
    given) and, when `fixed` is given, its fixes must produce exactly that."""

    code: str
    line: int | None = None
    fixed: str | None = None


RULE_SETS = ("default", "strict")


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    mode: str
    severity: Severity
    summary: str  # one line: what the rule finds
    message: str  # the diagnostic text: what happens at run time
    why: str  # why it breaks training
    fix: str  # how to fix it
    bad: str  # example that fires
    good: str  # example that does not
    references: tuple[Reference, ...]
    source: Path  # the YAML file it came from
    rule_set: str = "default"  # "strict": opt-in (risky-but-often-fine patterns)
    valid: tuple[str, ...] = ()  # examples that must not fire (tests and docs)
    invalid: tuple[Example, ...] = ()  # examples that must fire (tests and docs)

    @property
    def doc_path(self) -> str:
        return f"docs/rules/{self.code}.md"

    @property
    def doc_url(self) -> str:
        """Where the rule's page lives: the docs folder of a source checkout,
        else the YAML entry it is generated from."""
        checkout_doc = rules_dir().parent / "docs" / "rules" / f"{self.code}.md"
        target = checkout_doc if checkout_doc.is_file() else self.source
        return target.resolve().as_uri()


def rules_dir() -> Path:
    """The catalog folder, whether installed or in a source checkout.

    The checkout that holds this very file comes first: an editable install's `_rules`
    points at whichever checkout was installed, and code from one checkout (a frozen
    copy run through PYTHONPATH) must never read another checkout's rules.
    """
    package_parent = Path(__file__).resolve().parents[1]
    candidates = [package_parent.parent / "rules"] if package_parent.name == "server" else []
    try:
        from . import _rules  # type: ignore[attr-defined]

        candidates += [Path(p) for p in _rules.__path__]
    except ImportError:
        pass
    for candidate in candidates:
        if (candidate / "lint").is_dir():
            return candidate
    raise CatalogError("rules/ catalog not found: the installation is incomplete")


def _parse_rule(path: Path) -> RuleInfo:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path.name}: expected a mapping")
    missing = [key for key in _REQUIRED if not data.get(key)]
    if missing:
        raise CatalogError(f"{path.name}: missing {', '.join(missing)}")
    code, name, mode = str(data["code"]), str(data["name"]), str(data["mode"])
    if not _CODE.match(code) or path.stem != code:
        raise CatalogError(f"{path.name}: code {code!r} must be TRNnnn and match the file name")
    if not _NAME.match(name):
        raise CatalogError(f"{path.name}: name {name!r} must be kebab-case")
    if mode not in FAILURE_MODES:
        raise CatalogError(f"{path.name}: unknown failure mode {mode!r}")
    if mode not in _CODE_GROUP_MODES[code[3]]:
        raise CatalogError(f"{path.name}: mode {mode!r} does not belong in the {code[3]}xx group")
    try:
        severity = Severity(str(data["severity"]))
    except ValueError:
        raise CatalogError(f"{path.name}: unknown severity {data['severity']!r}") from None
    refs = []
    for ref in data["references"]:
        if not isinstance(ref, dict) or not ref.get("title") or not ref.get("url"):
            raise CatalogError(f"{path.name}: each reference needs a title and a url")
        refs.append(Reference(str(ref["title"]), str(ref["url"])))
    rule_set = str(data.get("set", "default"))
    if rule_set not in RULE_SETS:
        raise CatalogError(f"{path.name}: set must be one of {', '.join(RULE_SETS)}")
    valid = tuple(str(v) for v in data["valid"])
    invalid = []
    for item in data["invalid"]:
        if isinstance(item, str):
            item = {"code": item}
        if not isinstance(item, dict) or not item.get("code"):
            raise CatalogError(f"{path.name}: each invalid example needs `code`")
        invalid.append(Example(str(item["code"]), item.get("line"), item.get("fixed")))
    return RuleInfo(
        rule_set=rule_set,
        valid=valid,
        invalid=tuple(invalid),
        code=code,
        name=name,
        mode=mode,
        severity=severity,
        summary=str(data["summary"]).strip(),
        message=str(data["message"]).strip(),
        why=str(data["why"]).strip(),
        fix=str(data["fix"]).strip(),
        bad=invalid[0].code,
        good=(invalid[0].fixed or valid[0]),
        references=tuple(refs),
        source=path,
    )


@functools.cache
def load_rules() -> dict[str, RuleInfo]:
    """All lint rules by code, sorted by code. Raises CatalogError on a bad entry."""
    rules: dict[str, RuleInfo] = {}
    names: set[str] = set()
    for path in sorted((rules_dir() / "lint").glob("*.yaml")):
        info = _parse_rule(path)
        if info.name in names:
            raise CatalogError(f"{path.name}: duplicate rule name {info.name!r}")
        names.add(info.name)
        rules[info.code] = info
    return rules


def get_rule(code_or_name: str) -> RuleInfo | None:
    rules = load_rules()
    key = code_or_name.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    return next((r for r in rules.values() if r.name == key.lower()), None)
