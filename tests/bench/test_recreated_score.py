"""The pure logic of bench/recreated/score.py: the label schema, the split rule, what counts as a
hit (near a labelled line, or anywhere in the function of a bug of absence) and the tally. The
linter is never run on the cases here: they are scored by the integrator, before any change."""

from __future__ import annotations

import hashlib
import textwrap

import pytest

from bench_scripts import load_bench_script

score = load_bench_script("recreated/score.py", "recreated_score")

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

URL = "https://github.com/example/project/issues/1"


def raw(**over):
    base = {"id": "r900", "url": URL, "rule": "TRN101", "lines": [10], "absence": False, "code": "quoted",
            "reason": "Thread: 'total += loss keeps the graph'."}
    base.update(over)
    base.setdefault("split", score.split_of(base["url"]))
    return base


def case(**over):
    return score.parse_case(raw(**over))


def test_split_follows_the_first_byte_of_the_url_hash():
    for n in range(40):
        url = f"https://github.com/a/b/issues/{n}"
        even = hashlib.sha256(url.encode()).digest()[0] % 2 == 0
        assert score.split_of(url) == ("dev" if even else "test")
    assert {score.split_of(f"https://x/{n}") for n in range(40)} == {"dev", "test"}


@pytest.mark.parametrize("over, message", [
    ({"rule": "TRN1"}, "rule must be"),
    ({"lines": []}, "lines must be"),
    ({"lines": [0]}, "lines must be"),
    ({"lines": [True]}, "lines must be"),
    ({"absence": "no"}, "absence must be"),
    ({"reason": " "}, "reason must be"),
    ({"url": "http://insecure"}, "url must be"),
    ({"id": "R 1"}, "id must be"),
    ({"code": "guessed"}, "code must be one of"),
])
def test_bad_labels_are_refused_with_the_reason(over, message):
    with pytest.raises(score.LabelError, match=message):
        score.parse_case(raw(**over))


def test_a_split_that_disagrees_with_the_hash_is_refused():
    other = "test" if score.split_of(URL) == "dev" else "dev"
    with pytest.raises(score.LabelError, match="hash puts it in"):
        score.parse_case(raw(split=other))


def test_missing_and_unknown_fields_are_named():
    r = raw()
    del r["reason"]
    with pytest.raises(score.LabelError, match="missing reason"):
        score.parse_case(r)
    with pytest.raises(score.LabelError, match="unknown field"):
        score.parse_case(raw(found_by="me"))


def test_unknown_rule_code_is_refused():
    with pytest.raises(score.LabelError, match="no rule TRN999"):
        score.parse_case(raw(rule="TRN999"), known_rules={"TRN101"})


def test_enclosing_function_is_the_innermost_def_or_the_module():
    assert score.enclosing_function(SOURCE, 10) == (4, 11)
    assert score.enclosing_function(SOURCE, 17) == (14, 18)
    assert score.enclosing_function(SOURCE, 1) == (1, 18)
    assert score.enclosing_function("def (:\n", 1) == (1, 1)


def test_a_hit_is_the_labelled_rule_within_three_lines():
    c = case(lines=[10])
    assert score.is_hit(c, {"code": "TRN101", "line": 10}, SOURCE)
    assert score.is_hit(c, {"code": "TRN101", "line": 7}, SOURCE)
    assert score.is_hit(c, {"code": "TRN101", "line": 13}, SOURCE)
    assert not score.is_hit(c, {"code": "TRN101", "line": 6}, SOURCE)
    assert not score.is_hit(c, {"code": "TRN102", "line": 10}, SOURCE)
    # a finding spanning lines counts from its last line too
    assert score.is_hit(c, {"code": "TRN101", "line": 2, "end_line": 7}, SOURCE)


def test_a_bug_of_absence_is_hit_anywhere_in_its_function_only():
    c = case(rule="TRN102", lines=[16], absence=True)
    assert score.is_hit(c, {"code": "TRN102", "line": 14}, SOURCE)
    assert score.is_hit(c, {"code": "TRN102", "line": 18}, SOURCE)
    assert not score.is_hit(c, {"code": "TRN102", "line": 9}, SOURCE)


def test_judge_and_tally_count_recall_and_precision_per_half_and_rule():
    dev = "https://x/0"
    while score.split_of(dev) != "dev":
        dev += "0"
    test = "https://y/0"
    while score.split_of(test) != "test":
        test += "0"
    found = score.judge(case(id="a", url=dev), [{"code": "TRN101", "line": 10}], SOURCE, [])
    missed = score.judge(case(id="b", url=dev), [{"code": "TRN102", "line": 10}], SOURCE, [])
    noisy = score.judge(case(id="c", url=test), [{"code": "TRN101", "line": 9}], SOURCE,
                        [{"code": "TRN101", "line": 9}, {"code": "TRN101", "line": 3}, {"code": "TRN701", "line": 2}])
    assert (found.found, found.false_on_fixed) == (True, 0)
    assert (missed.found, missed.false_on_fixed) == (False, 0)
    assert (noisy.found, noisy.false_on_fixed) == (True, 2)
    result = score.tally([found, missed, noisy])
    assert result["splits"]["dev"]["total"] == {"cases": 2, "found": 1, "false_on_fixed": 0,
                                                "recall": 0.5, "precision": 1.0}
    # the fixed file with findings counts once, however many findings it has
    assert result["splits"]["test"]["rules"]["TRN101"] == {"cases": 1, "found": 1, "false_on_fixed": 1,
                                                           "recall": 1.0, "precision": 0.5}
    assert result["all"]["recall"] == pytest.approx(0.667)
    table = score.format_table(result)
    assert "dev: 2 cases, recall 0.50" in table and "TRN101" in table
    assert result["code"]["quoted"]["cases"] == 3 and result["code"]["posted"]["cases"] == 0


def test_precision_is_undefined_without_any_finding():
    miss = score.judge(case(), [], SOURCE, [])
    assert score.tally([miss])["all"]["precision"] is None
    assert "precision -" in score.format_table(score.tally([miss]))


def test_the_committed_labels_are_well_formed(tmp_path):
    cases = score.load_cases(known_rules=score.known_rule_codes())
    assert len(cases) >= 20
    assert {c.split for c in cases} == {"dev", "test"}
    for c in cases:
        bug = (score.CASES / f"{c.id}_bug.py").read_text()
        fixed = (score.CASES / f"{c.id}_fixed.py").read_text()
        assert bug != fixed, c.id
        compile(bug, c.id, "exec")
        compile(fixed, c.id, "exec")
    assert score.main(["--validate"]) == 0


def test_duplicate_urls_and_missing_files_are_refused(tmp_path):
    labels = tmp_path / "labels.yaml"
    labels.write_text(f"- {{id: a, url: '{URL}', rule: TRN101, lines: [1], absence: false, code: posted, reason: r, "
                      f"split: {score.split_of(URL)}}}\n"
                      f"- {{id: b, url: '{URL}', rule: TRN101, lines: [1], absence: false, code: posted, reason: r, "
                      f"split: {score.split_of(URL)}}}\n")
    with pytest.raises(score.LabelError, match="used by another case"):
        score.load_cases(labels, cases_dir=None)
    labels.write_text(f"- {{id: a, url: '{URL}', rule: TRN101, lines: [1], absence: false, code: posted, reason: r, "
                      f"split: {score.split_of(URL)}}}\n")
    with pytest.raises(score.LabelError, match="no file a_bug.py"):
        score.load_cases(labels, cases_dir=tmp_path)
    (tmp_path / "a_bug.py").write_text("x = 1\n")
    (tmp_path / "a_fixed.py").write_text("x = 2\n")
    assert [c.id for c in score.load_cases(labels, cases_dir=tmp_path)] == ["a"]
    (tmp_path / "b_bug.py").write_text("x = 3\n")
    with pytest.raises(score.LabelError, match="without a label: b_bug.py"):
        score.load_cases(labels, cases_dir=tmp_path)
    (tmp_path / "b_bug.py").unlink()
    labels.write_text(labels.read_text().replace("lines: [1]", "lines: [5]"))
    with pytest.raises(score.LabelError, match="past the end"):
        score.load_cases(labels, cases_dir=tmp_path)
