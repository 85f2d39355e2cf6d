"""The rule catalog is valid, complete and its generated docs are current."""

from __future__ import annotations


from cli_helpers import traindoctor
from traindoctor.catalog import load_rules
from traindoctor.docs import docs_dir, expected_pages, readme_path, readme_with_rules_table
from traindoctor.lint.engine import all_rules


def test_catalog_loads_and_matches_the_rule_classes():
    rules = load_rules()
    codes = {rule.CODE for rule in all_rules()}
    assert codes <= set(rules), f"rule classes without a catalog entry: {codes - set(rules)}"
    assert set(rules) <= codes, f"catalog entries without a rule: {set(rules) - codes}"
    for info in rules.values():
        assert info.references and all(ref.url.startswith("https://") for ref in info.references)


def test_generated_docs_are_current():
    pages = expected_pages()
    folder = docs_dir()
    for name, text in pages.items():
        path = folder / name
        assert path.is_file(), f"{path} missing: run `make docs`"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `make docs`"
    extra = {p.name for p in folder.glob("*.md")} - set(pages)
    assert not extra, f"docs for rules that no longer exist: {extra}"
    readme = readme_path().read_text(encoding="utf-8")
    assert readme_with_rules_table(readme) == readme, "README rules table is stale: run `make docs`"


def test_rules_command_lists_and_explains():
    listing = traindoctor("rules")
    assert listing.returncode == 0
    assert "TRN101" in listing.stdout and "loss-accumulation-keeps-graph" in listing.stdout
    page = traindoctor("rules", "TRN101")
    assert page.returncode == 0
    assert "## Why is this bad?" in page.stdout and "loss.item()" in page.stdout
    unknown = traindoctor("rules", "TRN999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr and "Traceback" not in unknown.stderr
