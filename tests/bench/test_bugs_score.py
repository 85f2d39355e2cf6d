"""The bug-fix benchmark's pure logic (bench/bugs/score.py): the label schema, what counts as
a hit (near the labelled lines, or anywhere in the loop or function of a bug of absence),
quiet-after, and the tally. The measurement itself needs the fetched repositories and is not
run here."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from bench_scripts import load_bench_script

score = load_bench_script("bugs/score.py", "bugs_score")

SOURCE = textwrap.dedent("""\
    import torch


    def train(model, loader, optimizer):
        total = 0
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            total += loss
        return total


    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            out = model(x)
        return out
    """)


def raw(**changes) -> dict:
    label = {"id": "t001", "repo": "owner/name", "fix": "a" * 40, "parent": "b" * 40, "path": "train.py",
             "lines": [10], "rule": "TRN101", "absence": False, "reason": "why", "found_by": "git log -G"}
    label.update(changes)
    return label


def finding(line: int, code: str = "TRN101", path: str = "train.py", end_line: int | None = None) -> dict:
    return {"code": code, "path": path, "line": line, "end_line": end_line or line, "message": "m"}


def test_a_well_formed_label_parses():
    label = score.parse_label(raw(), {"TRN101"})
    assert label.lines == (10,) and label.slug == "owner+name"


@pytest.mark.parametrize("changes, words", [
    ({"fix": "abc"}, "40-hex"),
    ({"parent": "a" * 40}, "same commit"),
    ({"lines": []}, "lines"),
    ({"lines": [0]}, "lines"),
    ({"lines": [True]}, "lines"),
    ({"rule": "TRN999"}, "no rule"),
    ({"absence": "no"}, "absence"),
    ({"path": "/abs.py"}, "relative"),
    ({"reason": " "}, "reason"),
    ({"extra": 1}, "unknown field"),
])
def test_a_malformed_label_is_refused_with_the_reason(changes, words):
    with pytest.raises(score.LabelError, match=words):
        score.parse_label(raw(**changes), {"TRN101"})


def test_a_missing_field_is_named():
    broken = raw()
    del broken["found_by"]
    with pytest.raises(score.LabelError, match="found_by"):
        score.parse_label(broken, {"TRN101"})


def test_duplicate_ids_and_more_than_eight_commits_of_one_repository_are_refused():
    a = score.parse_label(raw(), None, "a.yaml")
    with pytest.raises(score.LabelError, match="also in"):
        score.check_set([a, score.parse_label(raw(lines=[11]), None, "b.yaml")])
    many = [score.parse_label(raw(id=f"t{i}", fix=f"{i:040x}"), None) for i in range(1, 10)]
    with pytest.raises(score.LabelError, match="at most 8"):
        score.check_set(many)
    score.check_set(many[:8])


def test_label_files_load_across_globs(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump([raw()]))
    labels = score.load_labels([str(tmp_path / "*.yaml")], {"TRN101"})
    assert [label.id for label in labels] == ["t001"]
    with pytest.raises(score.LabelError, match="no label files"):
        score.load_labels([str(tmp_path / "none-*.yaml")])


def test_a_finding_within_three_lines_of_the_labelled_line_is_a_hit():
    label = score.parse_label(raw(lines=[10]))
    assert score.hit_findings(label, [finding(13)], SOURCE)
    assert score.hit_findings(label, [finding(7)], SOURCE)
    assert not score.hit_findings(label, [finding(14)], SOURCE)


def test_a_hit_needs_the_labelled_rule_and_file():
    label = score.parse_label(raw(lines=[10]))
    assert not score.hit_findings(label, [finding(10, code="TRN102")], SOURCE)
    assert not score.hit_findings(label, [finding(10, path="other.py")], SOURCE)


def test_a_rule_split_from_the_labelled_one_counts_but_not_the_other_way():
    # TRN407 (BCE on sigmoid outputs) was split from TRN402 after the b labels were written
    assert score.counted_codes("TRN402") == {"TRN402", "TRN407"}
    assert score.hit_findings(score.parse_label(raw(rule="TRN402")), [finding(10, code="TRN407")], SOURCE)
    assert not score.hit_findings(score.parse_label(raw(rule="TRN407")), [finding(10, code="TRN402")], SOURCE)


def test_a_multiline_finding_counts_from_its_first_to_its_last_line():
    label = score.parse_label(raw(lines=[20]))
    assert score.hit_findings(label, [finding(14, end_line=18)], SOURCE)


def test_a_bug_of_absence_counts_anywhere_in_its_smallest_loop():
    # a missing zero_grad labelled at the loop body: the loop is lines 6-10
    label = score.parse_label(raw(lines=[7], rule="TRN701", absence=True))
    assert score.enclosing_scope(SOURCE, 7) == (6, 10)
    assert score.hit_findings(label, [finding(6, code="TRN701")], SOURCE)
    assert score.hit_findings(label, [finding(10, code="TRN701")], SOURCE)
    assert not score.hit_findings(label, [finding(11, code="TRN701")], SOURCE)


def test_a_bug_of_absence_at_function_level_counts_in_the_whole_function():
    label = score.parse_label(raw(lines=[15], rule="TRN102", absence=True))
    assert score.enclosing_scope(SOURCE, 15) == (14, 18)
    assert score.hit_findings(label, [finding(17, code="TRN102")], SOURCE)
    assert not score.hit_findings(label, [finding(11, code="TRN102")], SOURCE)


def test_the_scope_includes_decorators_and_falls_back_to_the_module():
    source = "import torch\n\n@decorate\ndef f():\n    return 1\n\nx = 2\n"
    assert score.enclosing_scope(source, 4) == (3, 5)
    assert score.enclosing_scope(source, 7) == (1, 7)
    assert score.enclosing_scope("def (:\n", 1) == (1, 1)


def test_enclosing_function_names_methods_by_their_class():
    source = "class T:\n    def fit(self):\n        for b in x:\n            pass\n\ndef g():\n    pass\n"
    assert score.enclosing_function(source, 4) == "T.fit"
    assert score.enclosing_function(source, 7) == "g"
    assert score.enclosing_function(source, 5) == "<module>"


def test_quiet_after_when_the_fixed_line_is_no_longer_flagged():
    label = score.parse_label(raw(lines=[10]))
    hits = score.hit_findings(label, [finding(10)], SOURCE)
    fixed = SOURCE.replace("total += loss", "total += loss.item()")
    assert score.quiet_after(label, hits, SOURCE, [], fixed, "train.py")
    # the same text still flagged at the fix (moved by an unrelated edit): not quiet
    moved = "# header\n" + SOURCE
    assert not score.quiet_after(label, hits, SOURCE, [finding(11)], moved, "train.py")
    # a finding of the rule on another line does not count against the fix
    assert score.quiet_after(label, hits, SOURCE, [finding(2)], fixed, "train.py")


def test_quiet_after_for_absence_looks_at_the_enclosing_function():
    label = score.parse_label(raw(lines=[7], rule="TRN701", absence=True))
    hits = [finding(9, code="TRN701")]
    fixed = SOURCE.replace("        loss = model(x, y)\n", "        optimizer.zero_grad()\n        loss = model(x, y)\n")
    assert score.quiet_after(label, hits, SOURCE, [], fixed, "train.py")
    assert not score.quiet_after(label, hits, SOURCE, [finding(8, code="TRN701")], fixed, "train.py")
    assert score.quiet_after(label, hits, SOURCE, [finding(17, code="TRN701")], fixed, "train.py")


def test_the_tally_keeps_the_keys_that_bench_accuracy_reads():
    cases = [{"rule": "TRN101", "repo": "a/b", "hit": True, "quiet_after": True},
             {"rule": "TRN101", "repo": "c/d", "hit": False, "quiet_after": False},
             {"rule": "TRN102", "repo": "e/f", "hit": True, "quiet_after": False}]
    result = score.tally(cases)
    assert set(result) == {"rules", "overall", "halves", "cases"}
    assert sum(h["labelled"] for h in result["halves"].values()) == 3
    assert result["rules"]["TRN101"] == {"labelled": 2, "hits": 1, "quiet_after": 1}
    assert result["overall"] == {"labelled": 3, "hits": 2, "quiet_after": 1}
    table = score.format_table(result)
    assert "| TRN101 | 2 | 1 | 0.50 | 1/1 |" in table and "| **all** | 3 | 2 | 0.67 | 1/2 |" in table


def test_package_files_start_with_the_labelled_file_and_are_capped(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/sub/train.py", "pkg/sub/util.py", "pkg/model.py", "pkg/other/x.py", "top.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    files = score.package_files(tmp_path, "pkg/sub/train.py")
    assert files[0] == "pkg/sub/train.py" and "pkg/sub/util.py" in files and "pkg/model.py" in files
    assert "top.py" not in files
    assert score.package_files(tmp_path, "pkg/sub/train.py", limit=2) == ["pkg/sub/train.py", "pkg/sub/util.py"]


def test_a_repository_sits_in_one_half_and_both_halves_are_used():
    repos = [f"owner{n}/repo{n}" for n in range(200)]
    halves = [score.half_of(repo) for repo in repos]
    assert halves == [score.half_of(repo) for repo in repos]
    assert 60 < halves.count("dev") < 140
