"""Position conversion and the minimal fixAll edit, checked against the client-side arithmetic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_helpers import apply_text_edits, position_of
from pygls.workspace.position_codec import PositionCodec

from traindoctor.lsp.convert import Converter, split_lines, whole_text_edit

LINES = st.lists(st.sampled_from(["", "x = 1", "total += loss", "é😋", "  # 🔥 comment", "\t"]), max_size=8)
ENDINGS = st.sampled_from(["\n", "\r\n"])
ENCODINGS = ["utf-8", "utf-16", "utf-32"]


def _text(lines: list[str], ending: str, final_newline: bool) -> str:
    return ending.join(lines) + (ending if final_newline and lines else "")


@settings(max_examples=200, deadline=None)
@given(LINES, LINES, ENDINGS, st.booleans(), st.booleans(), st.sampled_from(ENCODINGS))
def test_fix_all_edit_turns_old_text_into_new(old, new, ending, old_nl, new_nl, encoding):
    before, after = _text(old, ending, old_nl), _text(new, ending, new_nl)
    edits = whole_text_edit(before, after, PositionCodec(encoding))
    assert len(edits) <= 1
    assert apply_text_edits(before, edits, encoding) == after


@settings(max_examples=200, deadline=None)
@given(LINES, st.sampled_from(ENCODINGS), st.data())
def test_code_point_columns_map_to_client_units(lines, encoding, data):
    text = "\n".join(lines) + "\n"
    conv = Converter(text, PositionCodec(encoding))
    line = data.draw(st.integers(0, len(lines)))
    body = split_lines(text)[line].rstrip("\r\n")
    column = data.draw(st.integers(0, len(body)))
    offset = sum(len(part) for part in split_lines(text)[:line]) + column
    position = conv.position(line, column)
    assert position == position_of(text, offset, encoding)
    assert conv.model_position(position) == (line, column)


def test_split_lines_only_at_python_line_ends():
    assert split_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", ""]
