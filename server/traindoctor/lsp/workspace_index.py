"""The project index of the workspace, built in the background (issue 27).

The editor runs this server only in trusted workspaces (package.json: untrusted workspaces
are not supported); indexing reads files and runs nothing, and `indexWorkspace: false`
turns it off. The build never delays an open file's diagnostics: open files are linted
with whatever summaries exist, and re-linted when the facts they read change — after each
chunk of the build, and after an edit changes another open file's summary. An edit whose
summary is unchanged re-lints nothing else. Files that change on disk outside the editor (a
`git checkout`, a generator, another tool; `workspace/didChangeWatchedFiles`) and files closed
with unsaved edits are summarized again from disk, the same way.

Progress: `window/workDoneProgress/create`, then `$/progress` begin, report (per chunk), end.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ..lint.analysis.project import ProjectIndex
from ..lint.project import new_index, summarize_file

if TYPE_CHECKING:
    from .documents import DocumentState
    from .host import Host

logger = logging.getLogger(__name__)

CHUNK = 100  # files summarized between two progress reports and checks of the open files
MAX_FILES = 20_000


class WorkspaceIndex:
    def __init__(self) -> None:
        self.index: ProjectIndex = new_index()
        # One thread of its own: the lint pool stays free for the open files.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="traindoctor-index")
        self.task: asyncio.Task | None = None
        self.built = False

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the background build ------------------------------------------------------------

    def start(self, ls: "Host") -> None:
        self.index.set_base_folders(ls.workspace_dirs())  # a project without a marker imports from its folder
        if self.task is None and ls.settings.index_workspace and ls.workspace_dirs():
            self.task = asyncio.ensure_future(self._build(ls))

    async def _build(self, ls: "Host") -> None:
        from ..lint.files import python_files

        folders = ls.workspace_dirs()

        def workspace_sources() -> list[str]:  # the same walker as `traindoctor check`
            return [str(p) for p in python_files(folders) if p.is_file() and p.suffix == ".py"]

        loop = asyncio.get_running_loop()
        try:
            files = (await loop.run_in_executor(self._pool, workspace_sources))[:MAX_FILES]
        except RuntimeError:  # the pool is gone: shutting down
            return
        token = await self._begin(ls, len(files))
        done = 0
        try:
            for start in range(0, len(files), CHUNK):
                open_now = _open_paths(ls)
                chunk = [p for p in files[start:start + CHUNK] if os.path.abspath(p) not in open_now]
                results = await loop.run_in_executor(self._pool, _summaries, chunk)
                changed = False
                open_now = _open_paths(ls)  # documents opened while the chunk was summarized keep their buffer's
                for path, summary in results:
                    if os.path.abspath(path) not in open_now:
                        changed |= self.index.set_summary(path, summary)
                done = min(start + CHUNK, len(files))
                if token is not None:
                    ls.work_done_progress.report(token, lsp.WorkDoneProgressReport(
                        message=f"{done}/{len(files)} files", percentage=int(100 * done / max(len(files), 1))))
                if changed:
                    self.relint_readers(ls)
        except (asyncio.CancelledError, RuntimeError):
            return
        except Exception:  # a bug in the index must not take the server down: open files lint without it
            logger.exception("the workspace index build failed")
            return
        finally:
            if token is not None:
                ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=f"{done} files indexed"))
                ls.work_done_progress.tokens.pop(token, None)
        self.built = True

    async def _begin(self, ls: "Host", count: int) -> str | None:
        if not ls.client.work_done_progress:
            return None
        token = f"traindoctor-index-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 10)
            ls.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
                title="traindoctor: indexing the workspace", cancellable=False, message=f"0/{count} files",
                percentage=0))
        except Exception as exc:  # a client that refuses: build without progress
            logger.info("no index progress: %s", exc)
            return None
        return token

    # -- files that changed on disk ---------------------------------------------------------------

    def reread(self, ls: "Host", paths: list[str]) -> None:
        """Summarize these files again from disk (a deleted one leaves the index), in the
        background; open documents keep the summary of their buffer."""
        if not ls.settings.index_workspace or not paths:
            return
        roots = [os.path.abspath(d) + os.sep for d in ls.workspace_dirs()]
        wanted = [p for p in paths if p.endswith(".py") and any(os.path.abspath(p).startswith(r) for r in roots)]
        if wanted:
            asyncio.ensure_future(self._reread(ls, wanted))

    async def _reread(self, ls: "Host", paths: list[str]) -> None:
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._pool, _disk_summaries, paths)
        except RuntimeError:  # the pool is gone: shutting down
            return
        open_paths = _open_paths(ls)
        changed = False
        for path, summary in results:
            if os.path.abspath(path) in open_paths:
                continue
            changed |= self.index.remove(path) if summary is None else self.index.set_summary(path, summary)
        if changed:
            self.relint_readers(ls)

    # -- after a lint of an open file ---------------------------------------------------------

    def project_for(self, doc: "DocumentState"):
        """What a lint of the document resolves its imports through (None: not a project file)."""
        return self.index if doc.path and doc.path.endswith(".py") else None

    def linted(self, ls: "Host", doc: "DocumentState") -> None:
        """The document's lint left its summary in its cache: when it changed, the other
        open files whose imported facts changed are linted again."""
        summary = doc.cache.summary
        if summary is None or not doc.path:
            return
        if self.index.set_summary(doc.path, summary):
            self.relint_readers(ls, skip=doc)
        self.relint_readers(ls, only=doc)  # facts that changed while it was being linted

    def relint_readers(self, ls: "Host", skip: "DocumentState | None" = None,
                       only: "DocumentState | None" = None) -> None:
        for other in [only] if only is not None else list(ls.documents.values()):
            if other is skip or not other.path or other.cache.summary is None or other.cache.model is None:
                continue
            if other.scheduled > (other.latest.generation if other.latest else 0):
                continue  # a lint is on its way: when it ends, it checks its facts (`linted`)
            facts = self.index.imported_for(other.path, other.cache.summary.imports)
            if facts != other.cache.model.imported:
                other.bump()
                other.refresh_on_finish = True  # a pull client did not edit: it is told to pull
                ls.schedule_lint(other, 0)


def _open_paths(ls: "Host") -> set[str]:
    """The open documents' files: the index holds their buffers' summaries, not the disk's."""
    return {os.path.abspath(d.path) for d in ls.documents.values() if d.path}


def _summaries(paths: list[str]) -> list:
    return [summarize_file(path) for path in paths]


def _disk_summaries(paths: list[str]) -> list:
    """(path, summary), or (path, None) for a file that is gone."""
    return [summarize_file(path) if os.path.isfile(path) else (path, None) for path in paths]
