"""The pure logic of bench/watch/score.py: the label schema, the split rule and the verdict (every
expected kind reported, nothing outside expect and allow; quiet cases only with no finding). No
training script runs here: the benchmark itself runs them."""

from __future__ import annotations

import hashlib

import pytest

from bench_scripts import load_bench_script

score = load_bench_script("watch/score.py", "watch_score")


def raw(**over):
    base = {"id": "w_case", "mode": "lr-too-high", "url": "https://example.org/t/1", "why": "lr=1e3",
            "expect": ["nan-onset"], "allow": ["divergence"]}
    base.update(over)
    base.setdefault("split", score.split_of(base["id"]))
    return base


def case(**over):
    return score.parse_case(raw(**over))


def test_split_follows_the_first_byte_of_the_id_hash():
    for n in range(40):
        even = hashlib.sha256(f"c{n}".encode()).digest()[0] % 2 == 0
        assert score.split_of(f"c{n}") == ("dev" if even else "test")
    assert {score.split_of(f"c{n}") for n in range(40)} == {"dev", "test"}


@pytest.mark.parametrize("over, message", [
    ({"id": "Bad Id"}, "id must be"),
    ({"url": "http://x"}, "url must be"),
    ({"why": " "}, "why must be"),
    ({"expect": "nan-onset"}, "expect must be a list"),
    ({"expect": ["NaN onset"]}, "not a kind"),
    ({"allow": ["a|b"]}, "allow lists single kinds"),
    ({"expect": [], "allow": ["divergence"]}, "expects nothing allows nothing"),
])
def test_bad_labels_are_refused_with_the_reason(over, message):
    with pytest.raises(score.LabelError, match=message):
        score.parse_case(raw(**over))


def test_a_split_that_disagrees_with_the_hash_is_refused():
    other = "test" if score.split_of("w_case") == "dev" else "dev"
    with pytest.raises(score.LabelError, match="hash puts it in"):
        score.parse_case(raw(split=other))


def test_a_missing_or_extra_field_is_refused():
    label = raw()
    del label["allow"]
    with pytest.raises(score.LabelError, match="fields must be"):
        score.parse_case(label)


def _test_id():
    return next(f"m{n}" for n in range(100) if score.split_of(f"m{n}") == "test")


def test_a_recorded_move_from_test_to_dev_is_accepted():
    moved = case(id=_test_id(), split="dev", moved="2026-12-05: fixed after the test half showed it")
    assert moved.split == "dev" and moved.moved.startswith("2026-12-05")


@pytest.mark.parametrize("split, moved, message", [
    ("dev", "fixed", "moved must read"),  # no date
    ("test", "2026-12-05: x", "only a test case moves"),  # a move that moves nothing
])
def test_a_move_without_its_record_or_in_the_other_direction_is_refused(split, moved, message):
    with pytest.raises(score.LabelError, match=message):
        score.parse_case(raw(id=_test_id(), split=split, moved=moved))
    dev_id = next(f"m{n}" for n in range(100) if score.split_of(f"m{n}") == "dev")
    with pytest.raises(score.LabelError, match="only a test case moves"):
        score.parse_case(raw(id=dev_id, split="test", moved="2026-12-05: x"))


def test_every_expected_kind_must_be_reported():
    expected = case(expect=["nan-onset", "memory-leak"], allow=[])
    assert score.judge(expected, ["nan-onset", "memory-leak"]).passed
    verdict = score.judge(expected, ["nan-onset"])
    assert not verdict.passed and verdict.missing == ("memory-leak",)


def test_alternatives_are_satisfied_by_either_kind():
    either = case(expect=["no-learning|plateau"], allow=[])
    assert score.judge(either, ["plateau"]).passed
    assert score.judge(either, ["no-learning"]).passed
    assert score.judge(either, []).missing == ("no-learning|plateau",)


def test_allowed_kinds_are_tolerated_and_others_fail():
    lr = case()
    assert score.judge(lr, ["nan-onset", "divergence", "nan-onset"]).passed
    verdict = score.judge(lr, ["nan-onset", "eval-mode"])
    assert not verdict.passed and verdict.unexpected == ("eval-mode",) and not verdict.missing


def test_a_quiet_case_passes_only_without_findings():
    quiet = case(expect=[], allow=[])
    assert quiet.quiet and score.judge(quiet, []).passed
    assert score.judge(quiet, ["memory-leak"]).unexpected == ("memory-leak",)


def test_the_stored_labels_are_valid_and_each_has_its_script():
    cases = score.load_cases()
    assert len(cases) >= 24
    assert all(c.script.is_file() for c in cases)
    assert {c.split for c in cases} == {"dev", "test"}
