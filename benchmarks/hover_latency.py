"""Warm hover latency of the language server against the size of the workspace.

For N = 10 and N = 1,000 targets it writes a workspace of N small model files (one class each,
every third with an `if` on a traced value), fills the result cache with one `fxscope check`,
starts `fxscope serve` with VS Code's capabilities (the start-up check answers from the cache),
opens one model file and times `textDocument/hover` requests on it: on a traced line (the graph
nodes it produced) and on the class name (its summary: status, targets, instances, findings).
The servers of both sizes run side by side and are hovered in turn, so a busy machine slows them
alike. After warm-up hovers it prints p50 and p99 per workspace size and kind of hover; a hover
answered from the result store costs what the hovered file holds, so both sizes should print the
same.

    .venv/bin/python benchmarks/hover_latency.py [--sizes 10,1000] [--hovers 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from check_scaling import env
from check_scaling import write_workspace as write_model_files


def write_workspace(root: Path, n: int) -> Path:
    """N model files (check_scaling.py's workspace); returns the one the hovers are on."""
    write_model_files(root, n)
    return root / "model_001.py"  # traces (model_000 has the branch)


def fill_cache(root: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", ".", "--format", "json"], cwd=root,
                          env=env(), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"fxscope check failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Server:
    """One ``fxscope serve`` on one workspace, with a document open in it."""

    def __init__(self, root: Path, path: Path) -> None:
        self.root, self.path = root, path
        self.client = LanguageClient("fxscope-hover-bench", "1")
        self.ended = asyncio.Event()
        self.published: dict[str, int | None] = {}
        c = self.client

        @c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _pub(params: types.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = params.version

        @c.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @c.feature(types.PROGRESS)
        def _progress(params: types.ProgressParams) -> None:
            value = params.value if isinstance(params.value, dict) else {}
            if value.get("kind") == "end":
                self.ended.set()

        @c.feature(types.WORKSPACE_CONFIGURATION)
        def _config(params: types.ConfigurationParams) -> list[None]:
            return [None for _ in params.items]

        for method in (types.CLIENT_REGISTER_CAPABILITY, types.WORKSPACE_CODE_LENS_REFRESH,
                       types.WINDOW_LOG_MESSAGE):
            c.feature(method)(lambda params: None)

    async def start(self) -> None:
        from pytest_lsp import client_capabilities

        client = self.client
        await client.start_io(sys.executable, "-m", "fxscope", "serve", env=env(), cwd=str(self.root))
        uri = from_fs_path(str(self.root))
        await client.initialize_async(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=self.root.name)]))
        client.initialized(types.InitializedParams())
        await asyncio.wait_for(self.ended.wait(), 1800)  # the start-up check, from the cache
        self.doc = from_fs_path(str(self.path))
        text = self.path.read_text()
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=self.doc, language_id="python", version=1, text=text)))
        while self.published.get(self.doc) != 1:
            await asyncio.sleep(0.05)
        lines = text.split("\n")
        self.spots = {
            "traced line": types.Position(line=next(i for i, t in enumerate(lines) if "self.hidden(x)" in t),
                                          character=24),
            "class name": types.Position(line=next(i for i, t in enumerate(lines) if t.startswith("class ")),
                                         character=8),
        }

    async def hover(self, kind: str) -> float:
        """Milliseconds of one hover of ``kind``."""
        params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=self.doc),
                                   position=self.spots[kind])
        t0 = time.perf_counter()
        hover = await self.client.text_document_hover_async(params)
        elapsed = (time.perf_counter() - t0) * 1000
        assert hover is not None, f"no hover on the {kind}"
        return elapsed

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.wait_for(self.client._server.wait(), 60)
        await self.client.stop()


async def measure(workspaces: dict[int, tuple[Path, Path]], hovers: int) -> dict[int, dict[str, list[float]]]:
    """Hover times per workspace size and kind; the servers run side by side and each round of
    hovers visits every one of them, so a busy machine slows them alike."""
    servers = {n: Server(root, path) for n, (root, path) in workspaces.items()}
    try:
        for server in servers.values():
            await server.start()
        times: dict[int, dict[str, list[float]]] = {n: {} for n in servers}
        for kind in ("traced line", "class name"):
            for server in servers.values():
                for _ in range(20):  # warm-up: indexes, caches
                    await server.hover(kind)
            for _ in range(hovers):
                for n, server in servers.items():
                    times[n].setdefault(kind, []).append(await server.hover(kind))
        return times
    finally:
        for server in servers.values():
            await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,1000")
    parser.add_argument("--hovers", type=int, default=300)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="fxscope-hover-") as tmp:
        workspaces, cold = {}, {}
        for n in sizes:
            root = Path(tmp) / f"ws{n}"
            workspaces[n] = (root, write_workspace(root, n))
            cold[n] = fill_cache(root)
        times = asyncio.run(measure(workspaces, args.hovers))
    print(f"fxscope warm hover latency through the language server ({args.hovers} hovers each after warm-up; "
          "the servers run side by side, hovered in turn)")
    print(f"{'targets':>8} {'cold check':>11} {'hover on':<12} {'p50':>9} {'p99':>9}")
    for n in sizes:
        for kind, values in times[n].items():
            print(f"{n:>8} {cold[n]:>10.1f}s {kind:<12} {statistics.median(values):>7.2f}ms "
                  f"{_percentile(values, 0.99):>7.2f}ms")
    if len(sizes) > 1:
        small, large = times[min(sizes)], times[max(sizes)]
        for kind in small:
            p50 = statistics.median(large[kind]) / statistics.median(small[kind])
            p99 = _percentile(large[kind], 0.99) / _percentile(small[kind], 0.99)
            print(f"{kind}: p50 x{p50:.2f}, p99 x{p99:.2f} ({max(sizes)} targets against {min(sizes)})")


if __name__ == "__main__":
    main()
