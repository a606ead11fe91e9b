"""Edit -> diagnostics latency of the language server, next to plain torch.fx.

A real LSP client (pygls, VS Code's capabilities) starts ``fxscope serve`` with its default
settings on a generated workspace, opens a ~200-node and a ~2000-node model, and times
``textDocument/didChange`` -> ``textDocument/publishDiagnostics`` for that version (debounce
included) over isolated edits. It prints, per model: the raw in-process
``torch.fx.symbolic_trace`` time, a fresh ``python -c "import torch; trace"``, the ratios against
the budget (within 1.5x raw + 150 ms; at least 10x faster than the fresh process), the hover
latency, and the resident memory of the server and of its worker processes (the zygote and the
spare child it keeps forked for the next job; PSS counts their shared pages once).

With ``--analyses fx,compile,export`` the workspace runs those analyses: each edit's diagnostics
are its fx phase's (the compile/export phase follows it, in the background), so the figures say
whether the analyses slow an edit down.

    .venv/bin/python benchmarks/edit_latency.py [--edits 8] [--analyses fx,compile,export]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_client import bench_client

MODEL = '''"""A generated stack of {layers} Linear+ReLU layers (~{nodes} graph nodes)."""

import torch
from torch import nn


class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range({layers}))

    def forward(self, x):
        x = x * 1.0  # EDIT
        for layer in self.layers:
            x = layer(x).relu()
        return x
'''


def write_workspace(root: Path, sizes: dict[str, int], analyses: list[str] | None = None) -> dict[str, Path]:
    names = ", ".join(f'"{a}"' for a in analyses or ())
    (root / "pyproject.toml").write_text("[tool.fxscope]\n" + (f"analyses = [{names}]\n" if analyses else ""))
    out = {}
    for name, layers in sizes.items():
        path = root / f"{name.lower()}.py"
        path.write_text(MODEL.format(name=name, layers=layers, nodes=2 * layers + 3))
        out[name] = path
    return out


def raw_trace_ms(root: Path, name: str, repeat: int = 7) -> tuple[float, int]:
    import torch.fx

    sys.path.insert(0, str(root))
    model = getattr(importlib.import_module(name.lower()), name)()
    torch.fx.symbolic_trace(model)  # warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        gm = torch.fx.symbolic_trace(model)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), len(gm.graph.nodes)


def fresh_process_ms(root: Path, name: str, repeat: int = 3) -> float:
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); import torch, torch.fx; "
            f"from {name.lower()} import {name}; torch.fx.symbolic_trace({name}())")
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _proc_mb(path: str, key: str) -> float:
    """The ``key:`` line of a /proc status file, in MB (0 when unreadable)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    return _proc_mb(f"/proc/{pid}/status", "VmRSS")


def pss_mb(pid: int) -> float:
    """Proportional set size: shared pages counted once per sharer (a forked child shares most of
    the zygote's pages, which RSS counts again)."""
    return _proc_mb(f"/proc/{pid}/smaps_rollup", "Pss")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


class Bench:
    def __init__(self) -> None:
        self.published: list[tuple[float, str, int | None]] = []
        self.progress_ended = asyncio.Event()
        self.arrived = asyncio.Event()
        self.client = bench_client(self._published, on_progress=self._progress)

    def _published(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append((time.perf_counter(), params.uri, params.version))
        self.arrived.set()

    def _progress(self, params: types.ProgressParams) -> None:
        value = params.value if isinstance(params.value, dict) else {}
        if value.get("kind") == "end":
            self.progress_ended.set()

    async def wait_version(self, uri: str, version: int, since: float, timeout: float = 120) -> float:
        """When diagnostics for ``version`` of ``uri`` arrived (woken by each arrival: a polling
        client would compete with the server and its worker for the two cores it measures)."""
        deadline = time.monotonic() + timeout
        while True:
            self.arrived.clear()
            for t, u, v in self.published:
                if u == uri and v == version and t >= since:
                    return t
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except asyncio.TimeoutError:
                pass


async def run(args: argparse.Namespace) -> None:
    from pytest_lsp import client_capabilities

    sizes = {"Stack200": 100, "Stack2000": 1000}
    with tempfile.TemporaryDirectory(prefix="fxscope-bench-") as tmp:
        root = Path(tmp)
        analyses = [a for a in args.analyses.split(",") if a]
        paths = write_workspace(root, sizes, analyses)
        raw = {name: raw_trace_ms(root, name) for name in sizes}
        fresh = {name: fresh_process_ms(root, name) for name in sizes}

        bench = Bench()
        client = bench.client
        await client.start_io(sys.executable, "-m", "fxscope", "serve")
        server_pid = client._server.pid
        await client.initialize_async(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)]))
        client.initialized(types.InitializedParams())
        await asyncio.wait_for(bench.progress_ended.wait(), 300)

        results = {}
        for name, path in paths.items():
            uri = from_fs_path(str(path))
            text = path.read_text()
            client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text)))
            await bench.wait_version(uri, 1, 0.0)
            latencies = []
            for i in range(args.edits):
                version = i + 2
                edited = text.replace("x * 1.0  # EDIT", f"x * {1.0 + (i + 1) / 100:.2f}  # EDIT")
                await asyncio.sleep(1.0)  # an isolated edit
                t0 = time.perf_counter()
                client.text_document_did_change(types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
                t1 = await bench.wait_version(uri, version, t0)
                latencies.append((t1 - t0) * 1000)
            line = next(i for i, l in enumerate(text.split("\n")) if "layer(x).relu()" in l)
            hovers = []
            for _ in range(20):
                t0 = time.perf_counter()
                h = await client.text_document_hover_async(types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=14)))
                hovers.append((time.perf_counter() - t0) * 1000)
            assert h is not None, "no hover on a traced line"
            results[name] = (statistics.median(latencies), min(latencies), max(latencies), statistics.median(hovers))

        server_rss = rss_mb(server_pid)
        workers = [(pid, rss_mb(pid), pss_mb(pid), cmdline(pid)) for pid in descendants(server_pid)]
        await client.shutdown_async(None)
        client.exit(None)
        await asyncio.wait_for(client._server.wait(), 30)
        await client.stop()

    print(f"fxscope edit -> diagnostics latency (server defaults, {args.edits} isolated edits per model"
          f"{', analyses ' + args.analyses if args.analyses else ''})")
    print(f"{'model':<10} {'nodes':>6} {'raw fx':>9} {'fresh py':>9} {'edit p50':>9} {'min':>7} {'max':>7}"
          f" {'/raw':>6} {'budget':>8} {'fresh/x':>8} {'hover':>7}")
    for name in sizes:
        raw_ms, nodes = raw[name]
        med, lo, hi, hover = results[name]
        budget = 1.5 * raw_ms + 150
        print(f"{name:<10} {nodes:>6} {raw_ms:>7.1f}ms {fresh[name]:>7.0f}ms {med:>7.1f}ms {lo:>5.0f}ms {hi:>5.0f}ms"
              f" {med / raw_ms:>5.1f}x {budget:>6.0f}ms {fresh[name] / med:>7.1f}x {hover:>5.2f}ms"
              f"  {'within budget' if med <= budget else 'OVER budget'}")
    print(f"server RSS {server_rss:.1f} MB (pid {server_pid})")
    for pid, mb, pss, cmd in workers:
        print(f"  worker pid {pid}: RSS {mb:.1f} MB, PSS {pss:.1f} MB  {cmd[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=8)
    parser.add_argument("--analyses", default="", help="comma-separated analyses of the workspace (fx,compile,export)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
