"""Issue 27, point 2 (summaries) in the language server: another file's builder returns DataLoaders
over a shuffling DistributedSampler; the epoch loop of the open training file iterates one without
`set_epoch` (TRN203). An edit of the builder (its sampler stops shuffling) clears the finding, and
undoing it brings it back. Real server, real pytest-lsp client."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lint"))
from test_sampler_summaries import TRAIN_LINE, _project  # noqa: E402
from test_workspace_index import _codes, _index_built  # noqa: E402


async def test_an_edit_of_the_builder_changes_the_finding_of_the_training_file(client, workspace: Path):
    _project(workspace)
    data = client.open(workspace / "data.py")
    train = client.open(workspace / "train.py")
    await _index_built(client)
    found = await client.eventually(train, lambda ds: "TRN203" in _codes(ds))
    assert [d.range.start.line + 1 for d in found if str(d.code) == "TRN203"] == [TRAIN_LINE]
    lines = client.texts[data].splitlines()
    line = next(i for i, text in enumerate(lines) if "shuffle=True" in text)
    column = lines[line].index("shuffle=True") + len("shuffle=")
    client.edit(data, lsp.Range(lsp.Position(line, column), lsp.Position(line, column + 4)), "False")
    await client.eventually(train, lambda ds: "TRN203" not in _codes(ds))
    client.edit(data, lsp.Range(lsp.Position(line, column), lsp.Position(line, column + 5)), "True")
    await client.eventually(train, lambda ds: "TRN203" in _codes(ds))
