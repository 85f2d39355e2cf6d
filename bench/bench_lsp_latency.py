"""Language server latency: didChange -> the publishDiagnostics of that version.

    make bench            (or: .venv/bin/python bench/bench_lsp_latency.py [--edits 50] [--memory-edits 1000])

One-line edits inside 300-, 1,000- and 3,000-line training scripts (bench/corpus.py),
each sent as an incremental didChange and timed until the server publishes the
diagnostics of exactly that version; p50 and p95 over the edits, debounce 0.
Fixit's server (`fixit lsp`, also pygls + libcst) gets the same files and the same
edits in the same run. Then the resident memory of the traindoctor server after
10 and after 1,000 such edits (1,000-line file). Then, with the project index (issue 27):
the same edits in the 1,000-line file of a 50-file workspace whose index is built (the file
star-imports four of its modules), and the background build of a 3,000-file workspace's
index (seconds until its progress ends; whether the open file's diagnostics came first).
`--index-only` runs these two alone. Prints a table with ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import REPO, training_file  # noqa: E402

SIZES = (300, 1000, 3000)
MEMORY_LINES = 1000
TIMEOUT_S = 60


def fixit_command() -> list[str] | None:
    for candidate in (REPO / ".venv-bench" / "bin" / "fixit", REPO / ".venv" / "bin" / "fixit"):
        if candidate.exists():
            return [str(candidate), "lsp", "--debounce-interval", "0"]
    found = shutil.which("fixit")
    return [found, "lsp", "--debounce-interval", "0"] if found else None


SERVERS = {
    "traindoctor": [sys.executable, "-m", "traindoctor", "serve"],
}


class Session:
    """A bare LSP client that records when each (uri, version) was published."""

    def __init__(self, command: list[str]):
        self.command = command
        self.client = LanguageClient("bench", "1")
        self.published: dict[tuple[str, int | None], float] = {}
        self.changed = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: lsp.PublishDiagnosticsParams) -> None:
            self.published[(params.uri, params.version)] = time.perf_counter()
            self.changed.set()

        self.progress_ended: dict[str, float] = {}

        @self.client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_create(params) -> None:
            return None

        @self.client.feature(lsp.PROGRESS)
        def on_progress(params) -> None:
            value = params.value if isinstance(params.value, dict) else {}
            if value.get("kind") == "end":
                self.progress_ended[str(params.token)] = time.perf_counter()
                self.changed.set()

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params) -> None:
            pass

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def on_show(params) -> None:
            pass

    async def start(self, root: Path) -> None:
        await self.client.start_io(*self.command)
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(
                    text_document=lsp.TextDocumentClientCapabilities(
                        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(related_information=True)
                    ),
                    general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
                    window=lsp.WindowClientCapabilities(work_done_progress=True),
                ),
                root_uri=root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(root.as_uri(), root.name)],
                initialization_options={"traindoctor": {"lintDelay": 0}},
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def wait_published(self, uri: str, version: int) -> float:
        deadline = time.perf_counter() + TIMEOUT_S
        while (uri, version) not in self.published:
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"{self.command[0]}: no diagnostics for version {version}")
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self.published[(uri, version)]

    async def wait_index(self) -> float:
        """When the server's workspace index build ended (its progress `end`)."""
        deadline = time.perf_counter() + 20 * TIMEOUT_S
        while not any(t.startswith("traindoctor-index-") for t in self.progress_ended):
            self.changed.clear()
            if time.perf_counter() > deadline:
                raise TimeoutError("the index build never ended")
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except asyncio.TimeoutError:
                pass
        return next(v for t, v in self.progress_ended.items() if t.startswith("traindoctor-index-"))

    def open(self, uri: str, text: str) -> None:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, text))
        )

    async def edit(self, uri: str, version: int, line: int, column: int, insert: str) -> float:
        """Send one one-line edit; seconds until that version's diagnostics arrive."""
        start = time.perf_counter()
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, column), lsp.Position(line, column)), text=insert)],
            )
        )
        return await self.wait_published(uri, version) - start

    def rss_kib(self) -> int:
        pid = self.client._server.pid  # type: ignore[union-attr]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        except Exception:
            pass
        await self.client.stop()


def edit_sites(text: str, count: int) -> list[tuple[int, int]]:
    """`count` (line, end column) sites on indented code lines spread over the file:
    the inside of functions and training loops, where people type."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if line.startswith("        ") and line.strip() and not line.strip().startswith("#")]
    step = max(len(candidates) // count, 1)
    picked = [candidates[(i * step) % len(candidates)] for i in range(count)]
    return [(i, len(lines[i])) for i in picked]


async def measure(command: list[str], root: Path, text: str, edits: int) -> list[float]:
    session = Session(command)
    await session.start(root)
    try:
        path = root / f"train_{len(text.splitlines())}.py"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        session.open(uri, text)
        await session.wait_published(uri, 1)
        latencies = []
        version = 1
        for index, (line, column) in enumerate(edit_sites(text, edits)):
            version += 1
            latencies.append(await session.edit(uri, version, line, column, f"  # edit {index}"))
        return latencies
    finally:
        await session.stop()


async def memory(command: list[str], root: Path, text: str, edits: int) -> tuple[int, int]:
    session = Session(command)
    await session.start(root)
    try:
        path = root / "train_memory.py"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        session.open(uri, text)
        await session.wait_published(uri, 1)
        sites = edit_sites(text, 50)
        version, after_10 = 1, 0
        for index in range(edits):
            line, column = sites[index % len(sites)]
            # Each site's comment grows by a word: the text keeps changing, as when typing.
            column += len(f"  # edit {index}") * (index // len(sites))
            version += 1
            await session.edit(uri, version, line, column, f"  # edit {index}")
            if index + 1 == 10:
                after_10 = session.rss_kib()
        return after_10, session.rss_kib()
    finally:
        await session.stop()


INDEXED_FILES = 50
BIG_INDEX_FILES = 3000


async def measure_indexed(command: list[str], root: Path, edits: int) -> list[float]:
    """One-line edits in the 1,000-line file of a 50-file workspace, once its index is built."""
    workspace = root / "indexed"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    for index in range(INDEXED_FILES - 1):
        (workspace / f"module_{index:02d}.py").write_text(training_file(300).replace("def ", f"def m{index}_"))
    text = "\n".join(f"from module_{i:02d} import *" for i in range(4)) + "\n" + training_file(1000)
    path = workspace / "train_indexed.py"
    path.write_text(text, encoding="utf-8")
    session = Session(command)
    await session.start(workspace)
    try:
        await session.wait_index()
        uri = path.as_uri()
        session.open(uri, text)
        await session.wait_published(uri, 1)
        latencies, version = [], 1
        for index, (line, column) in enumerate(edit_sites(text, edits)):
            version += 1
            latencies.append(await session.edit(uri, version, line, column, f"  # edit {index}"))
        return latencies
    finally:
        await session.stop()


async def big_index(command: list[str], root: Path) -> tuple[float, bool, float]:
    """(seconds from `initialized` to the end of the index build of a 3,000-file workspace,
    whether the open file's diagnostics came before that end, seconds until they came)."""
    workspace = root / "big"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    for package in range(BIG_INDEX_FILES // 100):
        folder = workspace / f"pkg{package:02d}"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for index in range(100 - 1):
            (folder / f"mod{index:03d}.py").write_text(
                f"import torch\n\n\ndef helper_{index}(x):\n    return torch.relu(x) * {index}\n")
    text = training_file(300)
    path = workspace / "train_open.py"
    path.write_text(text, encoding="utf-8")
    session = Session(command)
    start = time.perf_counter()
    await session.start(workspace)
    try:
        uri = path.as_uri()
        session.open(uri, text)
        published = await session.wait_published(uri, 1)
        ended = await session.wait_index()
        return ended - start, published < ended, published - start
    finally:
        await session.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--memory-edits", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--index-only", action="store_true", help="only the project-index measurements")
    args = parser.parse_args()
    if args.index_only:
        with tempfile.TemporaryDirectory(prefix="traindoctor-lsp-bench-") as tmp:
            await _index_rows(Path(tmp), args.edits)
        return 0

    servers = dict(SERVERS)
    fixit = fixit_command()
    if fixit is None:
        print("fixit not found (run `make bench`, which creates .venv-bench): measuring traindoctor only", file=sys.stderr)
    else:
        servers["fixit"] = fixit

    rows = []
    with tempfile.TemporaryDirectory(prefix="traindoctor-lsp-bench-") as tmp:
        root = Path(tmp)
        for size in args.sizes:
            text = training_file(size)
            row = {"size": size}
            for name, command in servers.items():
                latencies = await measure(command, root, text, args.edits)
                row[name] = (statistics.median(latencies) * 1000, percentile(latencies, 0.95) * 1000)
            rows.append(row)
            print(f"  measured {size} lines", file=sys.stderr)
        mem = await memory(servers["traindoctor"], root, training_file(MEMORY_LINES), args.memory_edits)

    print(f"\ndidChange -> publishDiagnostics, one-line edits, debounce 0, {args.edits} edits per file (ms)")
    header = f"{'lines':>6} | {'traindoctor p50':>15} {'p95':>7}"
    if "fixit" in servers:
        header += f" | {'fixit p50':>9} {'p95':>7} | {'p50 ratio':>9} {'p95 ratio':>9}"
    print(header)
    print("-" * len(header))
    for row in rows:
        ours = row["traindoctor"]
        line = f"{row['size']:>6} | {ours[0]:>15.1f} {ours[1]:>7.1f}"
        if "fixit" in row:
            theirs = row["fixit"]
            line += f" | {theirs[0]:>9.1f} {theirs[1]:>7.1f} | {theirs[0] / ours[0]:>8.1f}x {theirs[1] / ours[1]:>8.1f}x"
        print(line)
    after_10, after_n = mem
    print(
        f"\ntraindoctor server RSS, {MEMORY_LINES}-line file: after 10 edits {after_10 / 1024:.1f} MiB, "
        f"after {args.memory_edits} edits {after_n / 1024:.1f} MiB ({after_n / max(after_10, 1):.2f}x)"
    )
    with tempfile.TemporaryDirectory(prefix="traindoctor-lsp-bench-") as tmp:
        await _index_rows(Path(tmp), args.edits)
    return 0


async def _index_rows(root: Path, edits: int) -> None:
    command = SERVERS["traindoctor"]
    latencies = await measure_indexed(command, root, edits)
    print(f"\n1,000-line file in a {INDEXED_FILES}-file indexed workspace, {edits} one-line edits: "
          f"p50 {statistics.median(latencies) * 1000:.1f} ms, p95 {percentile(latencies, 0.95) * 1000:.1f} ms")
    built, first, diagnosed = await big_index(command, root)
    print(f"{BIG_INDEX_FILES}-file workspace index built in the background in {built:.1f} s; the open file's "
          f"diagnostics after {diagnosed:.1f} s, {'before' if first else 'AFTER'} the build ended")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
