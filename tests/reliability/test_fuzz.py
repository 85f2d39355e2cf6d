"""Fuzzing: the traceback parser and the lint engine never fail on any input; the
language server's diagnostics after random edits equal a cold lint of the final text.

Example counts stay modest so the whole suite fits CI's time.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_raw import RawServer

from traindoctor.diagnose import diagnose_text
from traindoctor.lint import lint_source
from traindoctor.lint.api import fix_source

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "tests" / "diagnose" / "data" / "formats").glob("*.log"))
SOURCES = [ROOT / "examples" / "train_classifier.py", ROOT / "examples" / "train_tagger.py",
           ROOT / "tests" / "lsp" / "fixtures" / "train_buggy.py"]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _diagnoses_cleanly(text: str | bytes) -> None:
    diagnosis = diagnose_text(text, correlate=False)
    assert "internal_error" not in diagnosis.details, diagnosis.details["internal_error"]


@FUZZ
@given(st.binary(max_size=4096))
def test_diagnose_random_bytes(data):
    _diagnoses_cleanly(data)


@FUZZ
@given(st.sampled_from(LOGS), st.data())
def test_diagnose_truncated_and_spliced_logs(log, data):
    text = log.read_text(encoding="utf-8", errors="replace")
    cut = data.draw(st.integers(0, len(text)))
    start = data.draw(st.integers(0, cut))
    noise = data.draw(st.text(alphabet=st.sampled_from(list(" \n\r\t:^~|-=()[]'\"\x1b0123456789abcTraceback")),
                              max_size=200))
    _diagnoses_cleanly(text[start:cut] + noise + text[cut:])


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _lints_cleanly(source: str) -> None:
    result = lint_source(source, "fuzz.py")  # never raises
    parses = _parses(source)
    assert not (result.error and parses), result.error  # an error only where Python cannot parse it either
    if parses:
        fixed, _count = fix_source(source, "fuzz.py")
        assert _parses(fixed), fixed  # a fix never breaks parsing


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                   HealthCheck.data_too_large])
@given(hypothesmith.from_grammar())
def test_lint_random_python(source):
    _lints_cleanly(source)


@FUZZ
@given(st.sampled_from(SOURCES), st.data())
def test_lint_truncated_training_scripts(path, data):
    text = path.read_text(encoding="utf-8")
    cut = data.draw(st.integers(0, len(text)))
    tail = data.draw(st.sampled_from(["", "\n", "(", "  # c\n", "total_loss += loss\n", "\x00", "\ufeff"]))
    _lints_cleanly(text[:cut] + tail)


@FUZZ
@given(st.binary(max_size=2048))
def test_lint_random_bytes_decoded(data):
    _lints_cleanly(data.decode("utf-8", "replace"))


# --- the language server under random edit sequences ------------------------------------

SNIPPETS = ["total_loss += loss\n", ".item()", "loss", "\n", "    ", "for x in loader:\n", "(", ")", "#", "x", ""]
_uris = itertools.count()


@pytest.fixture(scope="module")
def server():
    raw = RawServer()
    raw.request("initialize", {"processId": None, "rootUri": None,
                               "capabilities": {"textDocument": {"diagnostic": {"dynamicRegistration": False}}}})
    raw.notify("initialized", {})
    yield raw
    raw.close()


def _position(text: str, offset: int) -> dict:
    before = text[:offset]
    line = before.count("\n")
    return {"line": line, "character": offset - (before.rfind("\n") + 1)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.data())
def test_lsp_random_edits_end_with_a_cold_lint_of_the_final_text(server, data):
    text = SOURCES[2].read_text(encoding="utf-8")
    assert text.isascii()  # offsets are then UTF-16 offsets too
    uri = f"file:///tmp/traindoctor-fuzz/doc{next(_uris)}.py"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": text}})
    edits = data.draw(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 40), st.sampled_from(SNIPPETS)),
                               min_size=1, max_size=30))
    for version, (where, length, insert) in enumerate(edits, start=2):
        start = int(where * len(text))
        end = min(len(text), start + length)
        change = {"range": {"start": _position(text, start), "end": _position(text, end)}, "text": insert}
        text = text[:start] + insert + text[end:]
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [change]})
    report = server.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout=120)["result"]
    got = sorted((d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"],
                  d["range"]["end"]["line"], d["range"]["end"]["character"])
                 for d in report["items"] if d.get("source") == "traindoctor")
    expected = sorted((f.code, f.range.start.line, f.range.start.column, f.range.end.line, f.range.end.column)
                      for f in lint_source(text, uri.removeprefix("file://")).findings)
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert got == expected
