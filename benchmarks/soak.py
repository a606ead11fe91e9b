"""Soak: thousands of edits against one language server; its memory and descriptors stay flat.

A real LSP client (pygls, VS Code's capabilities) starts ``fxscope serve`` on a generated
workspace and sends ``--edits`` edits (default 2,000) over about ``--seconds`` seconds (default
600) to one model, alternating between a traceable version and one with an ``if`` on a traced
value (so diagnostics change), plus a hover every tenth edit. It prints the resident memory and
the open file descriptors of the server and of its worker zygote at the start and at the end, and
the percentiles of the edit -> ``publishDiagnostics`` latency of the versions that were published
(an edit superseded within the debounce is never traced: that is the debounce working).

    .venv/bin/python benchmarks/soak.py [--edits 2000] [--seconds 600]
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


async def run(args: argparse.Namespace) -> None:
    from pytest_lsp import client_capabilities

    with tempfile.TemporaryDirectory(prefix="fxscope-soak-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.fxscope]\n")
        path = root / "soaked.py"
        path.write_text(MODEL.format(scale="1.0", branch=""))
        bench = Bench()
        client = bench.client
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
        last = args.edits + 1
        await bench.wait_version(uri, last, sent[last])
        await asyncio.sleep(2.0)
        end = sample(server)
        elapsed = time.perf_counter() - began
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
    if latencies:
        print("edit -> diagnostics latency: " + ", ".join(
            f"p{int(q * 100)} {percentile(latencies, q):.0f} ms" for q in (0.5, 0.9, 0.99))
            + f", max {max(latencies):.0f} ms, mean {statistics.mean(latencies):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=600.0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
