"""Issue 27, third pass ("flow"): a meter's summary in the language server's project index. An edit
of the meter's file (another file, open in the editor) changes the TRN101 finding published for the
training file. Real server, real pytest-lsp clients."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types as lsp
from project_helpers import write_project

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lint"))
from test_flow_recall import MEASURES, METER, TRAIN_METER  # noqa: E402
from test_workspace_index import _codes, _index_built  # noqa: E402


async def test_an_edit_of_the_meter_changes_the_finding_of_the_training_file(client, workspace: Path):
    write_project(workspace, {"utils/__init__.py": "", "utils/generic.py": METER, "utils/measures.py": MEASURES,
                              "train.py": TRAIN_METER})
    meter = client.open(workspace / "utils" / "generic.py")
    train = client.open(workspace / "train.py")
    await _index_built(client)
    found = await client.eventually(train, lambda ds: "TRN101" in _codes(ds))
    assert [d.range.start.line for d in found if str(d.code) == "TRN101"] == [20]
    lines = client.texts[meter].splitlines()
    line = next(i for i, text in enumerate(lines) if text.endswith("self.iters[name] + value"))
    column = len(lines[line]) - len("value")
    # the meter now adds a number: nothing it keeps has a graph
    client.edit(meter, lsp.Range(lsp.Position(line, column), lsp.Position(line, column + len("value"))),
                "float(value)")
    await client.eventually(train, lambda ds: "TRN101" not in _codes(ds))
    column_end = column + len("float(value)")
    client.edit(meter, lsp.Range(lsp.Position(line, column), lsp.Position(line, column_end)), "value")
    await client.eventually(train, lambda ds: "TRN101" in _codes(ds))
