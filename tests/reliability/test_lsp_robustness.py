"""Every LSP request gets a response; memory stays flat over many edits (the real server, raw frames)."""

from __future__ import annotations

import pytest
from lsp_raw import RawServer

URI = "file:///tmp/traindoctor-reliability/train.py"
SOURCE = (
    "import torch\n\n\ndef train(model, loader, criterion):\n    total = 0\n    for x, y in loader:\n"
    "        loss = criterion(model(x), y)\n        loss.backward()\n        total += loss\n    return total\n"
)


@pytest.fixture
def server():
    raw = RawServer()
    raw.initialize()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                         "text": SOURCE}})
    yield raw
    raw.close()


def _range(line: int, character: int = 0) -> dict:
    return {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}}


BAD_PARAMS = {
    "negative_line": {"textDocument": {"uri": URI}, "range": _range(-1), "context": {"diagnostics": []}},
    "line_2_40": {"textDocument": {"uri": URI}, "range": _range(2**40), "context": {"diagnostics": []}},
    "array": [],
    "string": "hello",
    "missing_range": {"textDocument": {"uri": URI}, "context": {"diagnostics": []}},
    "wrong_types": {"textDocument": {"uri": 5}, "range": "all", "context": None},
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMS))
def test_an_undeserializable_code_action_gets_an_error_response(server, case):
    response = server.request("textDocument/codeAction", BAD_PARAMS[case], timeout=60)
    assert response["error"]["code"] == -32602, response
    # ... and the server keeps serving.
    good = server.request("textDocument/codeAction", {"textDocument": {"uri": URI}, "range": _range(8),
                                                      "context": {"diagnostics": []}})
    assert "result" in good, good


def test_undeserializable_hover_and_string_ids(server):
    response = server.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": -3}},
                              raw_id="abc")
    assert response["error"]["code"] == -32602, response


def test_memory_is_flat_over_10000_edits(server):
    def edits(count: int, start: int) -> None:
        for version in range(start, start + count):
            text = SOURCE + f"# edit {version % 7}\n"
            server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version},
                                                     "contentChanges": [{"text": text}]})
        server.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
                       timeout=300)

    edits(2_000, 2)  # warm-up: caches, arenas
    before = server.rss_kb()
    edits(10_000, 2_002)
    growth = server.rss_kb() - before
    # pygls alone kept ~3 KB per notification (about 30 MB here); what is left is allocator noise.
    assert growth < 8_000, f"RSS grew by {growth} KB over 10,000 edits"
