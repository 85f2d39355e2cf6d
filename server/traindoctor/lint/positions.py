"""Source ranges of nodes in one block, computed only where they are needed.

libcst's PositionProvider regenerates the code of the whole tree it is given,
which for one large top-level class (a 1,000-line Trainer) costs hundreds of
milliseconds on every edit inside it. For such a block the ranges are computed
per statement of the class body: the statement is rendered alone inside a copy
of the class header (so its indentation is right) and shifted to the line
Python's `ast` gives for it. Small blocks are positioned whole.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState

from libcst._position import CodePosition

from .walk import iter_nodes

# Below this many lines, positioning the whole block at once is cheap enough.
_SPLIT_ABOVE_LINES = 150


# node id -> (node, (start line, column), (end line, column)): keeping the node keeps its id
# from being reused (the copies made to position one statement of a class die otherwise).
Spans = dict[int, tuple[cst.CSTNode, tuple[int, int], tuple[int, int]]]


class _Syntactic:
    """`with state.record_syntactic_position(node, ...)`: a node's span without the
    whitespace it owns (libcst's version is a generator-based context manager)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_SpanState", node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        spans = self.state.provider
        start = spans[id(self.start_node)][1] if self.start_node is not None else self.start
        end = spans[id(self.end_node)][2] if self.end_node is not None else (self.state.line, self.state.column)
        spans[id(self.node)] = (self.node, start, end)


class _SpanState(PositionProvidingCodegenState):
    """libcst's PositionProvider rendering, recording plain (line, column) pairs: the
    CodePosition and CodeRange objects it builds for every node, a libcst hash per node
    and a regex split of every token were two thirds of the time of positioning a block.
    `provider` holds the Spans."""

    __slots__ = ()

    def add_token(self, value: str) -> None:
        self.tokens.append(value)  # Module's rendering asks whether there are any
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:  # spaces and tabs only
            self.tokens.append(token)
            self.column += len(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if id(node) not in self.provider:  # a syntactic span recorded inside it wins
            self.provider[id(node)] = (node, start, (self.line, self.column))

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


def _resolve(module: cst.Module) -> Spans:
    """The spans `MetadataWrapper(module).resolve(PositionProvider)` gives, without the
    wrapper's visit of the whole tree with no visitors in it (libcst runs one for the
    batchable providers even when there are none), which cost as much as the rendering."""
    spans: Spans = {}
    module._codegen(_SpanState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=spans))
    return spans


def _range(spans: Spans, node: cst.CSTNode, shift: int = 0) -> CodeRange | None:
    found = spans.get(id(node))
    if found is None or found[0] is not node:
        return None
    (start_line, start_column), (end_line, end_column) = found[1], found[2]
    return CodeRange(CodePosition(start_line + shift, start_column), CodePosition(end_line + shift, end_column))


class BlockPositions:
    def __init__(self, module: cst.Module, text: str) -> None:
        self._module = module
        self._text = text
        self._whole: Spans | None = None
        self._class = self._splittable_class(module, text)
        self._child_of: dict[int, int] | None = None
        self._children: dict[int, tuple[Spans, int]] = {}  # statement index -> its spans, line shift
        self._child_lines: list[int] | None = None

    @staticmethod
    def _splittable_class(module: cst.Module, text: str) -> cst.ClassDef | None:
        if text.count("\n") < _SPLIT_ABOVE_LINES or len(module.body) != 1:
            return None
        node = module.body[0]
        if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
            return node
        return None

    def get(self, node: cst.CSTNode) -> CodeRange | None:
        if self._whole is not None or self._class is None:
            return _range(self._all(), node)
        index = self._index().get(id(node))
        if index is not None:
            spans, shift = self._child(index)
            return _range(spans, node, shift)
        if node is self._class or node is self._class.body or node is self._module:
            return _range(self._all(), node)  # their ends depend on the whole body
        # The class header (decorators, name, bases) reads the same in the
        # rendering with the first statement only, unshifted.
        spans, shift = self._child(0, header=True)
        return _range(spans, node, shift)

    def _all(self) -> Spans:
        if self._whole is None:
            self._whole = _resolve(self._module)
        return self._whole

    def _index(self) -> dict[int, int]:
        if self._child_of is None:
            assert self._class is not None
            self._child_of = {
                id(node): index
                for index, child in enumerate(self._class.body.body)
                for node in iter_nodes(child)
            }
        return self._child_of

    def _lines_of_children(self) -> list[int] | None:
        """1-based line of each class-body statement, from `ast` (None if the
        two parsers disagree on the statements, then the block is positioned whole)."""
        if self._child_lines is None:
            assert self._class is not None
            try:
                tree = ast.parse(self._text)
            except (SyntaxError, ValueError):
                return None
            klass = tree.body[0] if tree.body else None
            if not isinstance(klass, ast.ClassDef):
                return None
            statements = iter(klass.body)
            lines = []
            for child in self._class.body.body:
                count = len(child.body) if isinstance(child, cst.SimpleStatementLine) else 1
                taken = [next(statements, None) for _ in range(count)]
                if taken[0] is None or any(s is None for s in taken):
                    return None
                lines.append(taken[0].lineno)
            if next(statements, None) is not None:
                return None
            self._child_lines = lines
        return self._child_lines

    def _child(self, index: int, header: bool = False) -> tuple[Spans, int]:
        key = -1 if header else index
        found = self._children.get(key)
        if found is not None:
            return found
        lines = self._lines_of_children()
        if lines is None:
            return self._all(), 0
        assert self._class is not None
        child = self._class.body.body[index]
        # The block rendered with this one statement in the class body: up to
        # the statement it reads exactly like the block itself.
        alone = self._module.with_changes(body=[self._class.with_changes(body=self._class.body.with_changes(body=[child]))])
        spans = _resolve(alone)
        shift = 0 if header else lines[index] - spans[id(child)][1][0]
        self._children[key] = spans, shift
        return spans, shift
