"""Generates docs/rules/<CODE>.md from the catalog (`make docs`).

The pages are generated, never edited by hand: tests/lint/test_catalog.py
fails when they are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .catalog import RuleInfo, load_rules, rules_dir


_STRICT_NOTE = ' (opt-in: `select = ["strict"]`)'


def render_rule(info: RuleInfo) -> str:
    refs = "\n".join(f"- [{ref.title}]({ref.url})" for ref in info.references)
    return f"""<!-- Generated from rules/lint/{info.code}.yaml by `make docs`; do not edit. -->
# {info.code} `{info.name}`

Failure mode: `{info.mode}` · default severity: `{info.severity.value}` · set: `{info.rule_set}`{_STRICT_NOTE if info.rule_set == "strict" else ""}

## What it does
{info.summary}

{info.message}

## Why is this bad?
{info.why}

## Example
```python
{info.bad.rstrip()}
```

## Use instead
```python
{info.good.rstrip()}
```

The examples on this page are the rule's tests (`valid`/`invalid` in rules/lint/{info.code}.yaml).

{info.fix}

## References
{refs}
"""


def render_index(rules: dict[str, RuleInfo]) -> str:
    rows = "\n".join(
        f"| [{r.code}]({r.code}.md) | `{r.name}` | `{r.mode}` | `{r.rule_set}` | {r.summary} |" for r in rules.values()
    )
    return f"""<!-- Generated from rules/lint/*.yaml by `make docs`; do not edit. -->
# Rules

| Code | Name | Failure mode | Set | What it finds |
| --- | --- | --- | --- | --- |
{rows}
"""


def expected_pages() -> dict[str, str]:
    rules = load_rules()
    pages = {f"{code}.md": render_rule(info) for code, info in rules.items()}
    pages["README.md"] = render_index(rules)
    return pages


_TABLE_START, _TABLE_END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def readme_with_rules_table(readme: str) -> str:
    """README.md with its rules table (between the markers) regenerated."""
    start, end = readme.find(_TABLE_START), readme.find(_TABLE_END)
    if start < 0 or end < start:
        return readme
    rows = "\n".join(
        f"| [{r.code}](docs/rules/{r.code}.md) | `{r.name}` | `{r.mode}` | `{r.rule_set}` | {r.summary} |"
        for r in load_rules().values()
    )
    table = f"| Code | Name | Failure mode | Set | What it finds |\n| --- | --- | --- | --- | --- |\n{rows}"
    return readme[: start + len(_TABLE_START)] + "\n" + table + "\n" + readme[end:]


def readme_path() -> Path:
    return rules_dir().parent / "README.md"


def docs_dir() -> Path:
    return rules_dir().parent / "docs" / "rules"


def main() -> int:
    target = docs_dir()
    target.mkdir(parents=True, exist_ok=True)
    pages = expected_pages()
    for stale in target.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (target / name).write_text(text, encoding="utf-8")
    readme = readme_path()
    if readme.is_file():
        readme.write_text(readme_with_rules_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {len(pages)} pages to {target} and the rules table in {readme.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
