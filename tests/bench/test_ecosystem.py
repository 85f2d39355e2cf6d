"""The ecosystem check's pure logic: matching verdicts to findings, precision arithmetic,
and the fix check's breakage detection (bench/ecosystem.py; the measurement itself needs
the extracted repositories and is not run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_scripts import load_bench_script

eco = load_bench_script("ecosystem.py", "ecosystem")


def hit(line: int, text: str, code: str = "TRN401", path: str = "train.py") -> "eco.Hit":
    return eco.Hit("o/r", path, line, code, text)


def verdict(line: int, text: str, kind: str = "fp", code: str = "TRN401", path: str = "train.py") -> "eco.Verdict":
    return eco.Verdict("o/r", path, line, code, eco.normalize(text), kind, "why")


def test_a_verdict_follows_its_line_when_unrelated_code_moves_it():
    pairs, leftover = eco.match([hit(57, "x = a / b")], [verdict(50, "x = a / b")])
    assert pairs[0][1] is not None and pairs[0][1].line == 50
    assert leftover == []


def test_a_changed_line_is_unjudged_even_at_the_same_number():
    pairs, leftover = eco.match([hit(50, "x = a / (b + eps)")], [verdict(50, "x = a / b")])
    assert pairs[0][1] is None
    assert len(leftover) == 1


def test_indentation_and_spacing_do_not_matter():
    pairs, _ = eco.match([hit(10, "    x  =  a / b")], [verdict(10, "x = a / b")])
    assert pairs[0][1] is not None


def test_identical_lines_pair_with_the_nearest_verdict_exact_line_first():
    hits = [hit(100, "loss.backward()", code="TRN101"), hit(20, "loss.backward()", code="TRN101")]
    verdicts = [verdict(22, "loss.backward()", "tp", code="TRN101"),
                verdict(100, "loss.backward()", "fp", code="TRN101")]
    pairs, leftover = eco.match(hits, verdicts)
    assert [v.verdict for _, v in pairs] == ["fp", "tp"]
    assert leftover == []


def test_one_verdict_judges_one_finding_only():
    hits = [hit(5, "y = x / n"), hit(9, "y = x / n")]
    pairs, _ = eco.match(hits, [verdict(5, "y = x / n")])
    assert [v is not None for _, v in pairs] == [True, False]


def test_code_path_and_repo_must_agree():
    hits = [hit(5, "y = x / n", code="TRN402"), hit(5, "y = x / n", path="other.py")]
    pairs, leftover = eco.match(hits, [verdict(5, "y = x / n")])
    assert all(v is None for _, v in pairs)
    assert len(leftover) == 1


def test_a_verdict_without_text_matches_on_the_line():
    pairs, _ = eco.match([hit(5, "y = x / n")], [verdict(5, "")])
    assert pairs[0][1] is not None


def test_precision_counts_debatable_as_not_a_hit_and_ignores_unjudged():
    hits = [hit(i, f"l{i}") for i in range(1, 6)]
    verdicts = [verdict(1, "l1", "tp"), verdict(2, "l2", "tp"), verdict(3, "l3", "fp"), verdict(4, "l4", "debatable")]
    table = eco.score(eco.match(hits, verdicts)[0])
    entry = table["TRN401"]
    assert (entry.tp, entry.fp, entry.debatable, entry.unjudged, entry.findings) == (2, 1, 1, 1, 5)
    assert entry.precision == pytest.approx(0.5)


def test_precision_is_none_when_nothing_is_judged_and_totals_add_up():
    table = eco.score(eco.match([hit(1, "a"), hit(2, "b", code="TRN101")], [verdict(2, "b", "tp", code="TRN101")])[0])
    assert table["TRN401"].precision is None
    assert table["TRN101"].precision == 1.0
    everything = eco.total(table)
    assert (everything.findings, everything.tp, everything.unjudged) == (2, 1, 1)
    rows = {row.split()[0]: row.split() for row in eco.format_table(table)}
    assert rows["all"][-1] == "1.000"  # 1 tp of 1 judged


def test_the_default_and_strict_totals_leave_out_trn000_and_default_leaves_out_strict_rules():
    hits = [hit(1, "a"), hit(2, "b", code="TRN406"), hit(3, "c", code="TRN000"), hit(4, "d", code="TRN101")]
    verdicts = [verdict(1, "a", "tp"), verdict(2, "b", "fp", code="TRN406"), verdict(3, "c", "debatable", code="TRN000"),
                verdict(4, "d", "fp", code="TRN101")]
    rows = {row.split()[0]: row.split() for row in eco.format_table(eco.score(eco.match(hits, verdicts)[0]))}
    assert rows["all"][1:3] == ["4", "1"]
    assert rows["default"][1:3] == ["2", "1"] and rows["default"][-1] == "0.500"  # TRN401, TRN101
    assert rows["strict"][1:3] == ["3", "1"]  # and TRN406, a strict-set rule


def test_a_verdict_must_be_tp_fp_or_debatable():
    with pytest.raises(ValueError, match="verdict must be one of"):
        eco.Verdict.from_dict({"repo": "o/r", "path": "p.py", "line": 1, "code": "TRN101", "verdict": "maybe"})


def test_fix_breakage_is_a_new_undefined_name_or_redefinition_or_a_parse_error():
    before = "from random import random\nx = random()\n"
    shadowed = "from random import random\nimport random\nx = random()\n"
    assert any("RedefinedWhileUnused" in p for p in eco.new_breakages(before, shadowed, "t.py"))
    assert eco.new_breakages("x = 1\n", "g.manual_seed(0)\nx = 1\n", "t.py") == ["UndefinedName: undefined name 'g'"]
    assert eco.new_breakages("x = 1\n", "x = (\n", "t.py")[0].startswith("does not parse")
    # Problems the original already had are not the fix's fault.
    assert eco.new_breakages("print(y)\n", "print(y)\nz = 1\n", "t.py") == []


def test_only_pytorch_cells_of_a_markdown_notebook_are_kept_on_their_own_lines():
    markdown = "\n".join([
        "# Title",                          # 1
        "```{.python .input}",              # 2
        "%%tab pytorch, mxnet",             # 3
        "import torch",                     # 4
        "```",                              # 5
        "```{.python .input  n=2}",         # 6
        "%%tab tensorflow",                 # 7
        "import tensorflow as tf",          # 8
        "```",                              # 9
        "```{.python .input}",              # 10
        "#@tab all",                        # 11
        "x = torch.ones(2)",                # 12
        "%matplotlib inline",               # 13
        "```",                              # 14
        "```python",                        # 15: not an input cell
        "print('shown only')",              # 16
        "```",                              # 17
    ])
    lines = eco.pytorch_cells(markdown).splitlines()
    assert lines[3] == "import torch" and lines[11] == "x = torch.ones(2)"
    assert "import tensorflow as tf" not in lines and "%matplotlib inline" not in lines
    assert "print('shown only')" not in lines
    assert len(lines) == 17


def test_a_message_that_only_moved_is_not_a_new_breakage():
    before = "import os\nimport os\n"
    after = "# header\n\nimport os\nimport os\n"  # "redefinition of unused 'os' from line 1" -> line 3
    assert eco.new_breakages(before, after, "t.py") == []


# --- source kinds: pypi (a pinned sdist) and index (files read from the GitHub index) ---------


def test_an_sdist_is_unpacked_only_under_its_own_top_folder_and_only_python_files_of_the_subdir():
    names = ["ultralytics-8.4.190/PKG-INFO", "ultralytics-8.4.190/ultralytics/__init__.py",
             "ultralytics-8.4.190/ultralytics/nn/tasks.py", "ultralytics-8.4.190/ultralytics/cfg/default.yaml",
             "ultralytics-8.4.190/tests/test_python.py"]
    members = eco.sdist_members(names, "ultralytics", "8.4.190", "ultralytics")
    assert members == {"ultralytics-8.4.190/ultralytics/__init__.py": "ultralytics/__init__.py",
                       "ultralytics-8.4.190/ultralytics/nn/tasks.py": "ultralytics/nn/tasks.py"}
    assert len(eco.sdist_members(names, "ultralytics", "8.4.190", "")) == 3  # "" = every Python file


def test_an_sdist_of_another_version_or_with_unsafe_paths_is_refused():
    with pytest.raises(ValueError, match="not the sdist of ultralytics==8.4.190"):
        eco.sdist_members(["ultralytics-8.4.189/ultralytics/__init__.py"], "ultralytics", "8.4.190", "ultralytics")
    with pytest.raises(ValueError, match="unsafe path"):
        eco.sdist_members(["ultralytics-8.4.190/../../etc/x.py"], "ultralytics", "8.4.190", "")
    with pytest.raises(ValueError, match="unsafe path"):
        eco.sdist_members(["/abs/x.py"], "ultralytics", "8.4.190", "")


def test_sdist_file_names_follow_pep_625():
    assert eco.sdist_name("ultralytics", "8.4.190") == "ultralytics-8.4.190.tar.gz"
    assert eco.sdist_name("Foo.Bar-baz", "1.0") == "foo_bar_baz-1.0.tar.gz"
    # the top folder may keep the name's own spelling (older sdists)
    assert eco.sdist_members(["Foo-Bar-1.0/foo/a.py"], "Foo-Bar", "1.0", "") == {"Foo-Bar-1.0/foo/a.py": "foo/a.py"}


def test_a_pypi_source_must_pin_an_exact_version_and_the_sdist_sha256(tmp_path):
    def repos(**fields):
        entry = {"name": "o/r", "half": "dev", "source": "pypi", "package": "r", "version": "1.2.3", "sha256": "a" * 64,
                 **fields}
        path = tmp_path / "repos.yaml"
        path.write_text(eco.yaml.safe_dump({"repos": [entry]}))
        return eco.load_repos(path)

    repo = repos()[0]
    assert (repo.package, repo.version, repo.pin) == ("r", "1.2.3", "r==1.2.3")
    for bad in ({"version": ">=1.2"}, {"version": ""}, {"sha256": "abc"}, {"package": ""}):
        with pytest.raises(ValueError, match="exact version"):
            repos(**bad)


MANIFEST = """
repo: o/r
files:
  - path: docs/a.py
    commit: {c}
    chars: 5
    sha256: {s}
"""


def test_an_index_manifest_lists_each_file_with_its_commit_and_sha256():
    data = b"x = 1"
    name, files = eco.load_manifest(MANIFEST.format(c="1a" * 20, s=eco.sha256_of(data)))
    assert name == "o/r"
    assert files == [eco.IndexFile("docs/a.py", "1a" * 20, 5, eco.sha256_of(data))]
    # YAML reads an unquoted all-digit hash as a number (leading zeros lost): refused, quoted it loads.
    with pytest.raises(ValueError, match="40 hex digits"):
        eco.load_manifest(MANIFEST.format(c="1" * 40, s=eco.sha256_of(data)))
    assert eco.load_manifest(MANIFEST.format(c="'" + "1" * 40 + "'", s=eco.sha256_of(data)))[1][0].commit == "1" * 40


_C, _S = "ab" * 20, "cd" * 32


@pytest.mark.parametrize("text, error", [
    (MANIFEST.format(c="12ab", s=_S), "40 hex digits"),
    (MANIFEST.format(c=_C, s="nope"), "64 hex digits"),
    (MANIFEST.format(c=_C, s=_S).replace("docs/a.py", "../a.py"), "bad path"),
    (MANIFEST.format(c=_C, s=_S).replace("docs/a.py", "/abs/a.py"), "bad path"),
    (MANIFEST.format(c=_C, s=_S).replace("o/r", "just-a-name"), "owner/name"),
    ("repo: o/r\nfiles: []\n", "no files"),
    (MANIFEST.format(c=_C, s=_S) + MANIFEST.format(c=_C, s=_S).split("files:\n")[1], "listed twice"),
])
def test_a_malformed_index_manifest_is_refused(text, error):
    with pytest.raises(ValueError, match=error):
        eco.load_manifest(text)


def test_index_files_are_checked_against_the_manifest(tmp_path):
    good, changed = b"x = 1\n", "x = 2\n"
    files = [eco.IndexFile("a/ok.py", _C, 6, eco.sha256_of(good)),
             eco.IndexFile("a/changed.py", _C, 6, eco.sha256_of(good)),
             eco.IndexFile("a/missing.py", _C, 6, eco.sha256_of(good))]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ok.py").write_bytes(good)
    (tmp_path / "a" / "changed.py").write_text(changed)
    problems = eco.check_index_files(files, tmp_path)
    assert problems == ["a/changed.py: differs from the manifest (6 characters, 6 read)", "a/missing.py: missing"]
    assert eco.check_index_files(files[:1], tmp_path) == []


def test_a_measured_repository_must_be_in_the_dev_or_the_test_half(tmp_path):
    path = tmp_path / "repos.yaml"
    for half in ("", "train"):
        path.write_text(eco.yaml.safe_dump({"repos": [{"name": "o/r", "source": "mirror", "commit": "a" * 40,
                                                        **({"half": half} if half else {})}]}))
        with pytest.raises(ValueError, match="half must be one of"):
            eco.load_repos(path)
    path.write_text(eco.yaml.safe_dump({"repos": [{"name": "o/r", "source": "missing"}]}))
    assert eco.load_repos(path)[0].half == ""  # not measured: no half needed


def test_each_half_has_at_least_15_repositories_and_none_is_reserved():
    repos = [r for r in eco.load_repos() if r.source in eco.MEASURED]
    for half in eco.HALVES:
        assert sum(r.half == half for r in repos) >= 15, half
    held_out = Path("/work/shared/HELD-OUT.md")
    if held_out.exists():  # the reserved list lives outside the repository
        reserved = {line[2:].strip().lower() for line in held_out.read_text().splitlines() if line.startswith("- ")}
        assert not [r.name for r in repos if r.name.lower() in reserved]


def test_the_committed_repositories_and_manifest_load():
    repos = {r.name: r for r in eco.load_repos()}
    assert repos["ultralytics/ultralytics"].source == "pypi"
    tutorials = repos["pytorch/tutorials"]
    assert tutorials.source == "index"
    name, files = eco.load_manifest((eco.HERE / "ecosystem" / tutorials.manifest).read_text())
    assert name == "pytorch/tutorials" and len(files) >= 20
    assert all(f.path.endswith(".py") and "_downloads/" not in f.path for f in files)


def test_a_verdict_with_a_column_tells_apart_two_findings_on_one_line():
    text = "kl = p0 * (torch.log(p0) - torch.log(p1))"
    hits = [eco.Hit("o/r", "m.py", 42, "TRN402", text, "", 56)]
    verdicts = [eco.Verdict("o/r", "m.py", 42, "TRN402", eco.normalize(text), "fp", "col 30", 30),
                eco.Verdict("o/r", "m.py", 42, "TRN402", eco.normalize(text), "debatable", "col 56", 56)]
    pairs, leftover = eco.match(hits, verdicts)
    assert pairs[0][1].verdict == "debatable" and [v.verdict for v in leftover] == ["fp"]
