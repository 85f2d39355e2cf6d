"""`check --fix` never loses a file: atomic writes, BOM, CRLF and comments kept."""

from __future__ import annotations

import io
from collections import Counter
import os
import resource
import stat
import tokenize

from reliability_helpers import traindoctor

from traindoctor.fsio import match_line_endings

ACCUMULATES = (
    "import torch\n\n\n"
    "def train(model, loader, optimizer, criterion):\n"
    "    total_loss = 0\n"
    "    for x, y in loader:\n"
    "        loss = criterion(model(x), y)\n"
    "        loss.backward()\n"
    "        total_loss += loss\n"
    "    return total_loss\n"
)
FIXED_LINE = "        total_loss += loss.detach()"  # the total is returned: it stays a tensor


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_failed_write_leaves_the_file_byte_for_byte(tmp_path):
    path = tmp_path / "train.py"
    original = ACCUMULATES.encode() + b"# " + b"x" * 400 + b"\n"
    path.write_bytes(original)
    os.chmod(path, 0o640)
    # The kernel refuses writes past RLIMIT_FSIZE (EFBIG), as a full disk refuses them (ENOSPC).
    done = traindoctor("check", "--fix", str(path), preexec_fn=_limit_file_size(len(original) // 2))
    assert path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert done.returncode == 2, done
    errors = done.stderr.strip().splitlines()
    assert errors == [f"{path}: error: cannot write fixes: File too large"], done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no temporary file left


def test_fix_keeps_mode_and_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(ACCUMULATES)
    os.chmod(real, 0o751)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    done = traindoctor("check", "--fix", str(link))
    assert done.returncode == 0, done
    assert link.is_symlink()
    assert FIXED_LINE in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o751


def test_bom_and_crlf_survive_fixes(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"\xef\xbb\xbf" + ACCUMULATES.replace("\n", "\r\n").encode())
    done = traindoctor("check", "--fix", str(path))
    assert done.returncode == 0, done
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert (FIXED_LINE + "\r\n").encode() in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_crlf_survives_a_fix_that_inserts_lines(tmp_path):
    source = (  # TRN202's fix inserts `random.seed(seed)` into the program's seeding function
        "import random\n\nimport numpy as np\nimport torch\n\n\ndef set_seed(seed):\n"
        "    np.random.seed(seed)\n    torch.manual_seed(seed)\n\n\nset_seed(0)\nprint(random.random())\n"
    )
    path = tmp_path / "seeding.py"
    path.write_bytes(source.replace("\n", "\r\n").encode())
    done = traindoctor("check", "--fix", str(path))
    assert done.returncode == 0, done
    data = path.read_bytes()
    assert b"    random.seed(seed)\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def _comments(source: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]


OWNED_RNG = (
    "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
    "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng()\n\n"
    "    def __len__(self):\n        return 64\n\n"
    "    def __getitem__(self, i):\n        return torch.tensor(self.rng.normal())\n\n\n"
)
# TRN201 (a dataset-owned RNG copied into every worker; its fix is unsafe) and TRN301.
MULTILINE_CALLS = {
    "dataloader": (
        OWNED_RNG + "loader = DataLoader(\n    Noisy(),  # the training set\n    batch_size=32,\n"
        "    shuffle=True,\n    num_workers=4,  # one per core\n)\n"
    ),
    "dataloader_joined": (
        OWNED_RNG + "loader = DataLoader(Noisy(), batch_size=32,  # keep in sync with the lr\n"
        "                    shuffle=True, num_workers=4)\n"
    ),
    "cross_entropy": (
        "import torch\nimport torch.nn.functional as F\nfrom torch.nn.utils.rnn import pad_sequence\n\n\n"
        "def step(model, inputs, targets):\n    trg = pad_sequence(targets, batch_first=True)\n"
        "    logits = model(inputs)\n    loss = F.cross_entropy(\n"
        "        logits.view(-1, logits.size(-1)),  # flatten the tokens\n"
        "        trg.view(-1),  # padded with 0\n    )\n    return loss\n"
    ),
}


def test_comments_inside_rewritten_calls_survive(tmp_path):
    for name, source in MULTILINE_CALLS.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        done = traindoctor("check", "--fix", "--unsafe-fixes", str(path))
        fixed = path.read_text()
        assert fixed != source, f"{name}: no fix applied ({done.stdout})"
        lost = Counter(_comments(source)) - Counter(_comments(fixed))  # a fix may add its own comments
        assert not lost, f"{name}:\n{fixed}"


def test_match_line_endings():
    assert match_line_endings("a\r\nb\r\n", "a\r\nx\ny\r\n") == "a\r\nx\r\ny\r\n"
    assert match_line_endings("a\nb\r\n", "a\nx\n") == "a\nx\n"  # mixed: left as the fix made it
    assert match_line_endings("", "x\n") == "x\n"
