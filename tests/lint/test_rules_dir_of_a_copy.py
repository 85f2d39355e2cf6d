"""Code run from a copy of the checkout reads the copy's rules, not the installed checkout's.

The benchmarks freeze a copy of server/ and rules/ and run it through PYTHONPATH while the
editable install still points at the working checkout; a copy that read the working
checkout's rules would measure a mix of two versions.
"""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_copy_of_the_checkout_reads_its_own_rules(tmp_path):
    copy = tmp_path / "frozen"
    shutil.copytree(ROOT / "server", copy / "server", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", copy / "rules")
    found = subprocess.run(
        [sys.executable, "-c", "from traindoctor.catalog import rules_dir; print(rules_dir())"],
        env={"PYTHONPATH": str(copy / "server"), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert Path(found) == copy / "rules"
