"""The compile and export analyses: edit -> diagnostics in the language server, and what each
analysis costs on transformers models.

1. A real LSP client (pygls, VS Code's capabilities) starts ``fxscope serve`` on a workspace whose
   one target runs the compile analysis (``analyses = ["compile"]``, torch.compile's default
   ``dynamic``), opens the model and times ``textDocument/didChange`` ->
   ``textDocument/publishDiagnostics`` for that version over isolated edits (debounce included;
   the warm worker runs the analysis). Next to it: a fresh ``python -c`` that imports torch and runs
   ``torch._dynamo.explain`` on the same model and input, what one does without fxscope (goal: the
   edit is 5x faster or more).
2. The transformers models of tests/hf_models.py (small configs: hidden size 64, two layers), with
   their ``inputs = "auto"``: each analysis (fx with shapes, compile, export) run alone in a child
   forked from a warm process (torch, torch._dynamo, torch.export and transformers imported), as
   the worker runs it; prints its wall time (building the model and importing its transformers
   module included, as in a job), and what it found.

    .venv/bin/python benchmarks/compile_latency.py [--edits 6] [--models gpt2,bert,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODEL = '''import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(8))

    def forward(self, x):
        x = x * 1.0  # EDIT
        for layer in self.layers:
            x = layer(x).relu()
        if x.sum() > 0:
            x = x * 2
        scale = x.abs().max().item()
        return x / (scale + 1)
'''

PYPROJECT = """[tool.fxscope]
auto-targets = false

[tool.fxscope.targets.gated]
factory = "gated:Gated"
inputs = { x = [2, 16] }
analyses = ["compile"]
"""


def fresh_explain_ms(root: Path, repeat: int = 3) -> float:
    """A fresh interpreter: import torch, build the model, ``torch._dynamo.explain`` it."""
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); import torch; from gated import Gated; "
            "torch._dynamo.explain(Gated())(torch.randn(2, 16))")
    env = dict(os.environ)
    times = []
    with tempfile.TemporaryDirectory(prefix="fxscope-bench-tmp-") as scratch:
        env["TMPDIR"] = scratch  # torch's compile caches start empty, as in each fxscope job
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def edit_latency(root: Path, edits: int) -> tuple[list[float], int]:
    """Edit -> diagnostics (ms) for ``edits`` isolated edits of the compile target's file, and how
    many FXS601 diagnostics the last one carried."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient
    from pygls.uris import from_fs_path
    from pytest_lsp import client_capabilities

    client = LanguageClient("fxscope-bench", "1")
    published: list[tuple[float, str, int | None, list[Any]]] = []
    arrived = asyncio.Event()
    ended = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _pub(params: types.PublishDiagnosticsParams) -> None:
        published.append((time.perf_counter(), params.uri, params.version, params.diagnostics))
        arrived.set()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        if isinstance(params.value, dict) and params.value.get("kind") == "end":
            ended.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _config(params: types.ConfigurationParams) -> list[None]:
        return [None for _ in params.items]

    for method in (types.CLIENT_REGISTER_CAPABILITY, types.WORKSPACE_CODE_LENS_REFRESH, types.WINDOW_LOG_MESSAGE):
        client.feature(method)(lambda params: None)

    async def wait_version(uri: str, version: int, since: float) -> tuple[float, list[Any]]:
        deadline = time.monotonic() + 300
        while True:
            arrived.clear()
            for t, u, v, diags in published:
                if u == uri and v == version and t >= since:
                    return t, diags
            if time.monotonic() > deadline:
                raise TimeoutError(f"no diagnostics for version {version}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(arrived.wait(), 5)

    await client.start_io(sys.executable, "-m", "fxscope", "serve")
    await client.initialize_async(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(root)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)]))
    client.initialized(types.InitializedParams())
    await asyncio.wait_for(ended.wait(), 300)
    path = root / "gated.py"
    uri, text = from_fs_path(str(path)), path.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    await wait_version(uri, 1, 0.0)
    latencies, breaks = [], 0
    for i in range(edits):
        await asyncio.sleep(1.0)  # an isolated edit
        edited = text.replace("x * 1.0  # EDIT", f"x * {1.0 + (i + 1) / 100:.2f}  # EDIT")
        t0 = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=i + 2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
        t1, diags = await wait_version(uri, i + 2, t0)
        latencies.append((t1 - t0) * 1000)
        breaks = sum(1 for d in diags if d.code == "FXS601")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies, breaks


# ------------------------------------------------------------------------------ transformers


def _in_child(fn: Any) -> tuple[float, Any]:
    """Run ``fn()`` in a child forked from this (warm) process: (wall ms, its JSON-able result)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            import torch

            torch.set_num_threads(1)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                scratch = tempfile.mkdtemp(prefix="fxscope-bench-job-")
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = scratch
                t = time.perf_counter()
                result = fn()
                ms = (time.perf_counter() - t) * 1000
            os.write(write, json.dumps({"ms": ms, "result": result}).encode())
        except BaseException as e:  # noqa: BLE001 - reported by the parent
            os.write(write, json.dumps({"ms": 0.0, "result": f"{type(e).__name__}: {e}"}).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    out = json.loads(b"".join(chunks) or b'{"ms": 0, "result": "the child died"}')
    return out["ms"], out["result"]


def analysis_costs(names: list[str]) -> list[tuple[str, float, str, float, str, float, str]]:
    """Per model: (name, fx ms, fx result, compile ms, its result, export ms, its result)."""
    import torch  # noqa: F401 - imported once, before the forks (as the worker's zygote does)

    from fxscope.trace.pt2 import Pt2Options, run_pt2
    from fxscope.trace.pt2 import warm_up as warm_pt2
    from hf_models import small_hf_models

    warm_pt2()
    builders = small_hf_models()

    def fx(builder: Any) -> Any:
        from fxscope.trace.analysis import analyze
        from fxscope.trace.build import build_model
        from fxscope.trace.inputs import default_concrete_args, resolve_inputs

        built = build_model(builder, exact_meta=True)
        inputs = resolve_inputs("auto", None, built.model)
        report = analyze(built.model, default_concrete_args(built.model), inputs=inputs)
        return f"{report.status}, {report.nodes} nodes"

    def pt2(builder: Any, analysis: str) -> Any:
        out = run_pt2(builder, "auto", {}, Pt2Options((analysis,)))
        if analysis == "compile":
            c = out["compile"]
            return f"{c['graphs']} graphs, {c['breaks']} breaks, {c['recompiles']} recompiles"
        e = out["export"]
        return "exported" if e["exported"] else f"fails ({e['problems']} problems)"

    rows = []
    for name in names:
        builder = builders[name]
        fx_ms, fx_out = _in_child(lambda b=builder: fx(b))
        c_ms, c_out = _in_child(lambda b=builder: pt2(b, "compile"))
        e_ms, e_out = _in_child(lambda b=builder: pt2(b, "export"))
        rows.append((name, fx_ms, str(fx_out), c_ms, str(c_out), e_ms, str(e_out)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=6)
    parser.add_argument("--models", default="", help="comma-separated names from tests/hf_models.py (default: all)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fxscope-bench-") as tmp:
        root = Path(tmp)
        (root / "gated.py").write_text(MODEL)
        (root / "pyproject.toml").write_text(PYPROJECT)
        fresh = fresh_explain_ms(root)
        latencies, breaks = asyncio.run(edit_latency(root, args.edits))
    p50 = statistics.median(latencies)
    print(f"compile analysis: edit -> diagnostics ({args.edits} isolated edits, server defaults, "
          f"{breaks} FXS601 shown)")
    print(f"  edit p50 {p50:7.0f} ms  (min {min(latencies):.0f}, max {max(latencies):.0f})")
    print(f"  fresh `python -c` running torch._dynamo.explain on the same model: {fresh:7.0f} ms")
    print(f"  fresh / edit: {fresh / p50:.1f}x  (goal: 5x or more)")

    import transformers  # noqa: F401 - imported before the forks, as a workspace's `preload` does

    from hf_models import small_hf_models

    names = [n for n in (args.models.split(",") if args.models else small_hf_models())]
    print("\ncost of each analysis on transformers models (small configs, inputs = \"auto\"; a child forked "
          "from a warm process per analysis)")
    print(f"{'model':<11} {'fx ms':>7}  {'fx':<24} {'compile ms':>10}  {'compile':<38} {'export ms':>9}  export")
    for name, fx_ms, fx_out, c_ms, c_out, e_ms, e_out in analysis_costs(names):
        print(f"{name:<11} {fx_ms:7.0f}  {fx_out[:24]:<24} {c_ms:10.0f}  {c_out[:38]:<38} {e_ms:9.0f}  {e_out[:60]}")


if __name__ == "__main__":
    main()
