"""TRN201 unseeded-dataloader-workers and TRN202 incomplete-seeding on whole
training scripts (tests/lint/cases/trn2xx_*.py).

Each case marks the lines that must be flagged with `# expect: TRN20x`; every
other line must stay quiet. Fixes must parse, converge, and remove the finding.
The slow tests run real scripts with real DataLoader workers to show the bug
the rule describes and that the fix removes it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from traindoctor.config import Config
from traindoctor.lint import apply_fixes, fix_source, lint_source

CASES = Path(__file__).parent / "cases"
CODES = ("TRN201", "TRN202")
CONFIG = Config()
_EXPECT = re.compile(r"#\s*expect:\s*((?:TRN\d{3}[ ,]*)+)")


def _case_files() -> list[Path]:
    return sorted(CASES.glob("trn2xx_*.py"))


def _expected(source: str) -> set[tuple[str, int]]:
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found.update((code, number) for code in re.findall(r"TRN\d{3}", match.group(1)) if code in CODES)
    return found


def _ours(source: str, path: str = "case.py"):
    result = lint_source(source, path, CONFIG)
    assert result.error is None, result.error
    return [f for f in result.findings if f.code in CODES]


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: p.stem)
def test_case_findings(path: Path):
    source = path.read_text()
    got = {(f.code, f.range.start.line + 1) for f in _ours(source, str(path))}
    assert got == _expected(source)


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: p.stem)
def test_case_fixes_converge(path: Path):
    source = path.read_text()
    findings = _ours(source, str(path))
    unsafe = {(f.code) for f in findings if f.fix is not None and not f.fix.safe}
    fixed, _ = fix_source(source, str(path), CONFIG)
    ast.parse(fixed)
    assert fix_source(fixed, str(path), CONFIG)[0] == fixed
    left = [f for f in _ours(fixed, str(path)) if not (f.fix is not None and not f.fix.safe)]
    assert left == [], left
    # Unsafe fixes (a dataset's own RNG) apply and parse too.
    if unsafe:
        manual = apply_fixes(source, findings, safe_only=False)
        ast.parse(manual)
        assert not _ours(manual, str(path))










@pytest.mark.parametrize("snippet", [
    # torch.manual_seed seeds every GPU: no cuda seed needed
    "import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    # torch_geometric loaders take worker_init_fn too, and a kwargs splat may carry it
    "import torch\nfrom torch_geometric.loader import DataLoader\ntorch.manual_seed(0)\n"
    "loader = DataLoader(graphs, num_workers=4, **loader_kwargs)\n",
    # relative import of a project DataLoader: not torch's
    "import torch\nfrom .data import DataLoader\ntorch.manual_seed(0)\nloader = DataLoader(ds, num_workers=4)\n",
    # tf seeds say nothing about torch
    "import numpy as np\nimport torch\nimport tensorflow as tf\ntf.random.set_seed(0)\nx = np.random.rand(3)\n",
    # worker_init_fn=None is not a worker_init_fn; but no intent and no randomness here
    "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, worker_init_fn=None)\n",
])
def test_more_look_alikes_stay_quiet(snippet):
    assert _ours(snippet) == []




@pytest.mark.slow
def test_own_rng_dataset_repeats_values_across_workers_and_fix_repairs_it(tmp_path: Path):
    """The real failure: two workers each copy the dataset's RNG and produce
    the same jitter; the (unsafe) fix's seed_worker re-creates it per worker."""
    source = (CASES / "trn2xx_own_rng_dataset.py").read_text()
    original = tmp_path / "original.py"
    original.write_text(source)
    fixed = tmp_path / "fixed.py"
    fixed.write_text(apply_fixes(source, _ours(source), safe_only=False))

    def distinct(script: Path) -> tuple[int, int]:
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        total, unique = map(int, run.stdout.split()[-2:])
        return total, unique

    total, unique = distinct(original)
    assert total == 12 and unique == 6  # two workers, the same six values each
    total, unique = distinct(fixed)
    assert total == 12 and unique == 12


@pytest.mark.slow
def test_fixed_cifar_script_runs(tmp_path: Path):
    source = (CASES / "trn2xx_cifar_seeded.py").read_text()
    fixed, _ = fix_source(source, "train.py", CONFIG)
    script = tmp_path / "train.py"
    script.write_text(fixed)
    runs = [subprocess.run([sys.executable, str(script), "--workers", "2"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout  # same seed, same result




@pytest.mark.slow
def test_partially_seeded_script_differs_between_runs_until_fixed(tmp_path: Path):
    """The real failure TRN202 describes: torch is seeded, numpy is not, so two
    runs with the same seed draw different noise; after the fix they agree."""
    source = (
        "import numpy as np\nimport torch\n\nSEED = 7\n\n\ndef main():\n    torch.manual_seed(SEED)\n"
        "    weights = torch.randn(3)\n    noise = np.random.normal(size=3)\n"
        "    print(weights.tolist(), noise.tolist())\n\n\nmain()\n"
    )
    [finding] = _ours(source)
    assert finding.code == "TRN202" and finding.range.start.line + 1 == 8

    def outputs(text: str) -> list[str]:
        script = tmp_path / "train.py"
        script.write_text(text)
        runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
                for _ in range(2)]
        assert all(run.returncode == 0 for run in runs), runs[0].stderr[-2000:]
        return [run.stdout for run in runs]

    first, second = outputs(source)
    assert first != second
    fixed, applied = fix_source(source, "train.py", CONFIG)
    assert applied == 1 and "    np.random.seed(SEED)\n" in fixed
    first, second = outputs(fixed)
    assert first == second
