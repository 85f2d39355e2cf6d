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
from libcst.metadata import CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from libcst._position import CodePosition

from .walk import iter_nodes

# Below this many lines, positioning the whole block at once is cheap enough.
_SPLIT_ABOVE_LINES = 150


def _resolve(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    """What `MetadataWrapper(module).resolve(PositionProvider)` gives, without the wrapper's
    visit of the whole tree with no visitors in it (libcst runs one for the batchable
    providers even when there are none), which cost as much as the rendering itself."""
    provider = PositionProvider()
    module._codegen(PositionProvidingCodegenState(  # the provider's own _gen_impl, on our tree
        default_indent=module.default_indent, default_newline=module.default_newline, provider=provider))
    return provider._computed  # type: ignore[return-value]


class BlockPositions:
    def __init__(self, module: cst.Module, text: str) -> None:
        self._module = module
        self._text = text
        self._whole: dict[cst.CSTNode, CodeRange] | None = None
        self._class = self._splittable_class(module, text)
        self._child_of: dict[int, int] | None = None
        self._children: dict[int, dict[cst.CSTNode, CodeRange]] = {}
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
            return self._all().get(node)
        index = self._index().get(id(node))
        if index is not None:
            return self._child(index).get(node)
        if node is self._class or node is self._class.body or node is self._module:
            return self._all().get(node)  # their ends depend on the whole body
        # The class header (decorators, name, bases) reads the same in the
        # rendering with the first statement only, unshifted.
        return self._child(0, header=True).get(node)

    def _all(self) -> dict[cst.CSTNode, CodeRange]:
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

    def _child(self, index: int, header: bool = False) -> dict[cst.CSTNode, CodeRange]:
        key = -1 if header else index
        found = self._children.get(key)
        if found is not None:
            return found
        lines = self._lines_of_children()
        if lines is None:
            return self._all()
        assert self._class is not None
        child = self._class.body.body[index]
        # The block rendered with this one statement in the class body: up to
        # the statement it reads exactly like the block itself.
        alone = self._module.with_changes(body=[self._class.with_changes(body=self._class.body.with_changes(body=[child]))])
        positions = _resolve(alone)
        shift = 0 if header else lines[index] - positions[child].start.line
        shifted = {
            node: CodeRange(CodePosition(r.start.line + shift, r.start.column),
                            CodePosition(r.end.line + shift, r.end.column))
            for node, r in positions.items()
        }
        self._children[key] = shifted
        return shifted
