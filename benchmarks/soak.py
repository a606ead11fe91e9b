"""Soak: thousands of edits against one language server; its memory and descriptors stay flat.

A real LSP client (pygls, VS Code's capabilities) starts ``fxscope serve`` on a generated
workspace and sends ``--edits`` edits (default 2,000) over about ``--seconds`` seconds (default
600) to one model, alternating between a traceable version and one with an ``if`` on a traced
value (so diagnostics change), plus a hover every tenth edit. It prints the resident memory and
the open file descriptors of the server and of its worker zygote at the start and at the end, and
the percentiles of the edit -> ``publishDiagnostics`` latency of the versions that were published
(an edit superseded within the debounce is never traced: that is the debounce working).

``--samples N`` also prints the server's RSS at N evenly spaced points (growth that levels off
is the allocator settling, a steady slope is a leak). ``--tracemalloc`` runs the server under
tracemalloc and prints the 15 source lines whose live allocations grew most between the first
sample and the end (the server writes a snapshot on SIGUSR1), to find what holds the growth.

    .venv/bin/python benchmarks/soak.py [--edits 2000] [--seconds 600] [--samples 10] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from edit_latency import Bench, cmdline, descendants, rss_mb

#: ``fxscope serve`` under tracemalloc: SIGUSR1 writes a snapshot to $FXSCOPE_SOAK_SNAPSHOT.N.
TRACED_SERVER = """
import itertools, os, signal, sys, tracemalloc
tracemalloc.start(10)
count = itertools.count()
def dump(signum, frame):
    tracemalloc.take_snapshot().dump(os.environ['FXSCOPE_SOAK_SNAPSHOT'] + '.' + str(next(count)))
signal.signal(signal.SIGUSR1, dump)
from fxscope.lsp.server import serve
sys.exit(serve())
"""

MODEL = '''import torch
from torch import nn


class Soaked(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(20))

    def forward(self, x):
        x = x * {scale}  # EDIT
{branch}        for layer in self.layers:
            x = layer(x).relu()
        return x
'''
BRANCH = "        if x.sum() > 0:\n            x = x + 1\n"


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def zygote_of(server: int) -> int | None:
    return next((p for p in descendants(server) if "fxscope.worker.zygote" in cmdline(p)), None)


def sample(server: int) -> dict[str, float]:
    zygote = zygote_of(server)
    return {"server_rss": rss_mb(server), "server_fds": fds(server),
            "zygote_rss": rss_mb(zygote) if zygote else -1.0, "zygote_fds": fds(zygote) if zygote else -1,
            "zygote": zygote or -1}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def snapshot(server: int, base: Path, index: int) -> Path:
    """Have the traced server write its tracemalloc snapshot ``index``; its path once written."""
    import signal

    out = base.with_name(f"{base.name}.{index}")
    os.kill(server, signal.SIGUSR1)
    for _ in range(600):
        await asyncio.sleep(0.1)
        if out.exists() and out.stat().st_size > 0:
            await asyncio.sleep(1.0)  # let the dump finish
            return out
    raise TimeoutError("the server wrote no tracemalloc snapshot")


def growth_report(first: Path, last: Path, top: int = 15) -> list[str]:
    import tracemalloc

    ignore = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*")]
    a = tracemalloc.Snapshot.load(str(first)).filter_traces(ignore)
    b = tracemalloc.Snapshot.load(str(last)).filter_traces(ignore)
    out = [f"live Python allocations: {sum(s.size for s in a.statistics('filename')) / 1e6:.2f} MB -> "
           f"{sum(s.size for s in b.statistics('filename')) / 1e6:.2f} MB; grown most (by line):"]
    for stat in b.compare_to(a, "lineno")[:top]:
        frame = stat.traceback[0]
        out.append(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  {frame.filename}:{frame.lineno}")
    out.append("the 5 allocation sites grown most in blocks, with their callers:")
    for stat in sorted(b.compare_to(a, "traceback"), key=lambda s: -s.count_diff)[:5]:
        out.append(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
        out.extend(f"      {f.filename}:{f.lineno}" for f in list(stat.traceback)[-6:])
    return out


async def run(args: argparse.Namespace) -> None:
    from pytest_lsp import client_capabilities

    with tempfile.TemporaryDirectory(prefix="fxscope-soak-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.fxscope]\n")
        path = root / "soaked.py"
        path.write_text(MODEL.format(scale="1.0", branch=""))
        bench = Bench()
        client = bench.client
        snapshots = Path(tmp) / "snapshot"
        if args.tracemalloc:
            os.environ["FXSCOPE_SOAK_SNAPSHOT"] = str(snapshots)
            await client.start_io(sys.executable, "-c", TRACED_SERVER)
        else:
            await client.start_io(sys.executable, "-m", "fxscope", "serve")
        server = client._server.pid
        await client.initialize_async(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)]))
        client.initialized(types.InitializedParams())
        await asyncio.wait_for(bench.progress_ended.wait(), 300)
        uri = from_fs_path(str(path))
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=path.read_text())))
        await bench.wait_version(uri, 1, 0.0)
        start = sample(server)
        every = max(1, args.edits // args.samples) if args.samples else 0
        points: list[tuple[int, float]] = [(0, start["server_rss"])]
        first: Path | None = None  # after a tenth of the edits: one-time warm-up is not growth
        sent: dict[int, float] = {}
        interval = args.seconds / args.edits
        began = time.perf_counter()
        for i in range(args.edits):
            version = i + 2
            text = MODEL.format(scale=f"{1 + (i % 97) / 100:.2f}", branch=BRANCH if (i // 7) % 2 else "")
            sent[version] = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
            if i % 10 == 9:
                await client.text_document_hover_async(types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=13, character=16)))
            await asyncio.sleep(max(0.0, began + (i + 1) * interval - time.perf_counter()))
            if every and (i + 1) % every == 0:
                points.append((i + 1, rss_mb(server)))
            if args.tracemalloc and first is None and i + 1 >= max(1, args.edits // 10):
                first = await snapshot(server, snapshots, 0)
        last = args.edits + 1
        await bench.wait_version(uri, last, sent[last])
        await asyncio.sleep(2.0)
        end = sample(server)
        elapsed = time.perf_counter() - began
        growth = growth_report(first, await snapshot(server, snapshots, 1)) if first is not None else []
        latencies = [(t - sent[v]) * 1000 for t, u, v in bench.published if u == uri and v in sent and t >= sent[v]]
        await client.shutdown_async(None)
        client.exit(None)
        await asyncio.wait_for(client._server.wait(), 30)
        await client.stop()

    print(f"fxscope soak: {args.edits} edits in {elapsed:.0f} s ({len(latencies)} versions published)")
    print(f"{'':<8} {'server RSS':>11} {'fds':>5} {'zygote RSS':>11} {'fds':>5}")
    for name, s in (("start", start), ("end", end)):
        print(f"{name:<8} {s['server_rss']:>8.1f} MB {s['server_fds']:>5} {s['zygote_rss']:>8.1f} MB"
              f" {s['zygote_fds']:>5}   (zygote pid {s['zygote']})")
    print(f"growth   {end['server_rss'] - start['server_rss']:>+8.1f} MB {end['server_fds'] - start['server_fds']:>+5}"
          f" {end['zygote_rss'] - start['zygote_rss']:>+8.1f} MB {end['zygote_fds'] - start['zygote_fds']:>+5}")
    if every:
        print("server RSS by edits: " + ", ".join(f"{n}: {mb:.1f}" for n, mb in points) + " MB")
    for line in growth:
        print(line)
    if latencies:
        print("edit -> diagnostics latency: " + ", ".join(
            f"p{int(q * 100)} {percentile(latencies, q):.0f} ms" for q in (0.5, 0.9, 0.99))
            + f", max {max(latencies):.0f} ms, mean {statistics.mean(latencies):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--samples", type=int, default=0, help="print the server RSS at this many points")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace the server's allocations; print what grew most (slows the server)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
