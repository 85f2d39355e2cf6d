"""Generates docs/rules/<CODE>.md from the catalog (`make docs`).

The pages are generated, never edited by hand: tests/lint/test_catalog.py
fails when they are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .catalog import RuleInfo, load_rules, rules_dir


def render_rule(info: RuleInfo) -> str:
    refs = "\n".join(f"- [{ref.title}]({ref.url})" for ref in info.references)
    return f"""<!-- Generated from rules/lint/{info.code}.yaml by `make docs`; do not edit. -->
# {info.code} `{info.name}`

Failure mode: `{info.mode}` · default severity: `{info.severity.value}`

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

{info.fix}

## References
{refs}
"""


def render_index(rules: dict[str, RuleInfo]) -> str:
    rows = "\n".join(
        f"| [{r.code}]({r.code}.md) | `{r.name}` | `{r.mode}` | {r.summary} |" for r in rules.values()
    )
    return f"""<!-- Generated from rules/lint/*.yaml by `make docs`; do not edit. -->
# Rules

| Code | Name | Failure mode | What it finds |
| --- | --- | --- | --- |
{rows}
"""


def expected_pages() -> dict[str, str]:
    rules = load_rules()
    pages = {f"{code}.md": render_rule(info) for code, info in rules.items()}
    pages["README.md"] = render_index(rules)
    return pages


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
    print(f"wrote {len(pages)} pages to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
