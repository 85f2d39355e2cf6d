"""The accuracy table's pure logic (bench/accuracy.py): rows per rule from the two halves of the
ecosystem check, the real-bug benchmark's JSON and the per-rule fix check, and their totals.
No network, no extracted sources: the measurement itself is not run here."""

from __future__ import annotations

import json

import pytest

from bench_scripts import load_bench_script

acc = load_bench_script("accuracy.py", "accuracy")
eco = acc.eco

RULE_SETS = {"TRN101": "default", "TRN204": "default", "TRN406": "strict"}


def score(tp=0, fp=0, debatable=0, unjudged=0):
    return eco.RuleScore(tp, fp, debatable, unjudged)


def by_rule(rows):
    return {row.rule: row for row in rows}


def test_every_catalog_rule_gets_a_row_with_zeros_where_a_measured_source_has_nothing():
    rows = by_rule(acc.accuracy_rows(RULE_SETS, {"TRN101": score(tp=1)}, {}, {"rules": {}}, {"rules": {}}))
    assert rows["TRN204"].dev.findings == 0 and rows["TRN204"].dev.precision is None
    assert rows["TRN204"].bugs == {"labelled": 0, "hits": 0, "quiet_after": 0}
    assert rows["TRN204"].fixes == {"files_changed": 0, "files_broken": 0}
    assert rows["TRN406"].rule_set == "strict"


def test_totals_split_the_default_set_from_the_strict_set():
    dev = {"TRN101": score(tp=2, fp=1), "TRN406": score(fp=5, debatable=1)}
    test = {"TRN204": score(tp=1, unjudged=2), "TRN406": score(tp=1, fp=1)}
    bugs = {"rules": {"TRN101": {"labelled": 10, "hits": 4, "quiet_after": 3},
                      "TRN406": {"labelled": 2, "hits": 1, "quiet_after": 1}}}
    fixes = {"rules": {"TRN101": {"fixes": 3, "files_changed": 2, "files_broken": 1}}}
    rows = by_rule(acc.accuracy_rows(RULE_SETS, dev, test, bugs, fixes))
    default, strict = rows["all default"], rows["all strict"]
    assert (default.dev.tp, default.dev.judged, default.dev.precision) == (2, 3, 2 / 3)
    assert (strict.dev.tp, strict.dev.judged) == (2, 9)
    assert (default.test.tp, default.test.judged, default.test.unjudged) == (1, 1, 2)
    assert (strict.test.tp, strict.test.judged) == (2, 3)
    assert default.bugs == {"labelled": 10, "hits": 4, "quiet_after": 3}
    assert strict.bugs == {"labelled": 12, "hits": 5, "quiet_after": 4}
    assert strict.fixes == {"files_changed": 2, "files_broken": 1}


def test_a_code_only_a_source_knows_still_gets_a_row():
    bugs = {"rules": {"TRN999": {"labelled": 1, "hits": 0, "quiet_after": 0}}}
    rows = by_rule(acc.accuracy_rows(RULE_SETS, {}, {}, bugs, None))
    assert rows["TRN999"].rule_set == "?" and rows["TRN999"].bugs["labelled"] == 1
    assert rows["all strict"].bugs["labelled"] == 1 and rows["all default"].bugs["labelled"] == 0


def test_an_unmeasured_source_says_so_in_its_columns_and_the_rest_still_print():
    rows = acc.accuracy_rows(RULE_SETS, {"TRN101": score(tp=1, fp=1)}, None, None, None)
    lines = acc.format_accuracy(rows)
    trn101 = next(line for line in lines if line.startswith("| TRN101 "))
    cells = [c.strip() for c in trn101.strip("|").split("|")]
    assert cells[:5] == ["TRN101", "default", "2", "1", "0.50"]
    assert cells[5] == "not measured" and cells[8] == "not measured" and cells[11] == "not measured"
    assert all(len(line.split("|")) == len(lines[0].split("|")) for line in lines)


def test_cells_show_recall_quiet_after_unjudged_and_broken_fixes():
    bugs = {"rules": {"TRN101": {"labelled": 8, "hits": 2, "quiet_after": 1}}}
    fixes = {"rules": {"TRN101": {"files_changed": 5, "files_broken": 2}}}
    lines = acc.format_accuracy(acc.accuracy_rows(RULE_SETS, {"TRN101": score(tp=3, unjudged=2)}, {}, bugs, fixes))
    cells = [c.strip() for c in next(line for line in lines if line.startswith("| TRN101 ")).strip("|").split("|")]
    assert cells == ["TRN101", "default", "5+2?", "3", "1.00", "0", "0", "-", "8", "0.25", "1/2", "5", "2"]


def test_a_missing_bug_file_is_not_measured_and_a_foreign_json_is_refused(tmp_path):
    data, note = acc.read_bugs(tmp_path / "nope.json")
    assert data is None and "not measured" in note
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"recall": 0.3}))
    with pytest.raises(SystemExit, match="no 'rules' object"):
        acc.read_bugs(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"rules": {"TRN101": {"labelled": 1, "hits": 1, "quiet_after": 0}}, "overall": {}}))
    data, note = acc.read_bugs(good)
    assert data["rules"]["TRN101"]["hits"] == 1 and str(good) in note
