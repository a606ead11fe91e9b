"""Opening one file of a large repository in the editor, against a cold check of the whole repository.

On a copy of REPO (no configuration added, no cache, no network) it prints:

- discovery: the AST-only discovery of the whole repository, in this process (what the server
  does before its first job);
- open: a real LSP client (VS Code's capabilities) starts ``fxscope serve`` over stdio with its
  default settings, sends ``initialize``/``initialized`` and at once ``didOpen`` of FILE, then
  polls ``textDocument/codeLens`` of FILE until it has lenses and none says "tracing…": the
  seconds from didOpen until that file's results are final, with the server's counts then (the
  rest of the repository is still being traced in the background); with ``--analyses``, also the
  seconds until that file's first ``publishDiagnostics`` with findings (its fx phases) and until its lenses carry
  the analyses' summaries (none says "running…": its compile/export phase answered);
- edit: right after, while the background check runs, an edit inserting a line as the first
  statement of the ``forward`` of FILE's last class: ``assert x.sum() > -1``, then (next edit, in
  place of it) ``_ = len(x)``, and so on; the seconds from ``didChange`` until a
  ``publishDiagnostics`` of that version holds the new line's finding (FXS101, FXS103: no earlier
  result has it there, so it comes from the edit's own trace);
- check: a cold ``fxscope check`` of a second copy (``--no-cache``, default workers), wall time;
- the ratio open/check (budget: <= 0.3, and under 20 s for a file of a few classes) and the
  edit latency (budget: <= 5 s; its p50), with the load average before and after;
- with ``--recheck PATH...``: ``fxscope check PATH...`` of the editor's copy (its cache, filled by the
  server and completed by a first check) run again: the cached re-check's wall time.

The repository's own dependencies must be importable by this interpreter (vit-pytorch: einops
and torchvision), else every class is an FXS402 and the figures measure import errors; the lens
titles printed say which.

    python benchmarks/open_file.py REPO [--file vit_pytorch/vit.py] [--edits 3] [--skip-check]
        [--analyses fx,compile,export] [--recheck .]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from lsp_client import bench_client

DAEMON_DIR = Path(__file__).resolve().parent.parent / "daemon"
OPEN_BUDGET_RATIO = 0.3
OPEN_BUDGET_S = 20.0
EDIT_BUDGET_S = 5.0
TRACING = "tracing…"
RUNNING = "running…"  # a lens whose target's analyses phase has not answered yet


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(DAEMON_DIR) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


#: ``--analyses``: the workspace's analyses written into each copy (empty: the copy as it is).
ANALYSES: list[str] = []


def copy_repo(repo: Path, dest: Path) -> Path:
    """A copy of ``repo`` without its VCS data or any fxscope cache (with ``[tool.fxscope]
    analyses`` when ``--analyses`` asks for them and the repository configures no fxscope)."""
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns(".git", ".fxscope_cache", "__pycache__"))
    pyproject = dest / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if ANALYSES and "[tool.fxscope" not in text:
        names = ", ".join(f'"{a}"' for a in ANALYSES)
        pyproject.write_text(f"{text}\n[tool.fxscope]\nanalyses = [{names}]\n", encoding="utf-8")
    return dest


def discovery_figures(root: Path) -> tuple[float, int, int]:
    """Seconds of an AST-only discovery of ``root``, its files and targets (in this process)."""
    sys.path.insert(0, str(DAEMON_DIR))
    from fxscope.project.config import load_config
    from fxscope.project.discovery import discover

    config = load_config(root)
    t0 = time.perf_counter()
    found = discover(config)
    seconds = time.perf_counter() - t0
    return seconds, len({t.file for t in found.targets}), len(found.targets)


#: The lines an edit inserts, alternately: each gives a finding the previous result did not have there.
EDITS = (("FXS101", "assert {x}.sum() > -1  # fxscope benchmark edit"),
         ("FXS103", "_ = len({x})  # fxscope benchmark edit"))


def edit_line(text: str) -> tuple[int, str, str]:
    """Where an edit inserts a line: the first statement of the last class's ``forward`` (0-based
    line), its indent and the name of forward's first argument after self."""
    tree = ast.parse(text)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for cls in reversed(classes):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "forward" and len(fn.args.args) >= 2:
                first = fn.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    first = fn.body[1]  # after a docstring
                return first.lineno - 1, " " * first.col_offset, fn.args.args[1].arg
    raise SystemExit("no forward(self, x) in the file to edit")


class Client:
    """A pygls client that records publishDiagnostics and the server's log lines."""

    def __init__(self) -> None:
        self.published: list[tuple[float, str, int | None, list[types.Diagnostic]]] = []
        self.logs: list[str] = []
        self.verbose = False
        self.arrived = asyncio.Event()
        self.lsp = bench_client(self._published, on_log=self._logged)

    def _published(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append((time.perf_counter(), params.uri, params.version, list(params.diagnostics)))
        self.arrived.set()

    def _logged(self, params: types.LogMessageParams) -> None:
        self.logs.append(params.message)
        if self.verbose:
            print(f"    [server] {params.message}", file=sys.stderr, flush=True)

    async def status(self) -> dict:
        out = await self.lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
        return out["folders"][0]

    async def lenses(self, uri: str) -> list[str]:
        lenses = await self.lsp.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return [lens.command.title for lens in lenses or () if lens.command is not None]

    async def wait_finding(self, uri: str, version: int, line: int, code: str, since: float,
                           timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while True:
            self.arrived.clear()
            for t, u, v, diags in self.published:
                if t >= since and u == uri and v == version and any(
                        str(d.code) == code and d.range.start.line == line for d in diags):
                    return t
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {code} on line {line + 1} for version {version}")
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except asyncio.TimeoutError:
                pass


async def read_stderr(client: LanguageClient, lines: list[str], verbose: bool) -> None:
    stream = client._server.stderr if client._server is not None else None  # type: ignore[union-attr]
    if stream is None:
        return
    while True:
        chunk = await stream.read(1 << 16)  # not readline: a long line would end the drain
        if not chunk:
            return
        lines.append(chunk.decode(errors="replace"))
        if verbose:
            for line in lines[-1].splitlines():
                print(f"    [stderr] {line[:300]}", file=sys.stderr, flush=True)


async def open_and_edit(root: Path, rel: str, edits: int, timeout: float, verbose: bool = False) -> dict:
    from pytest_lsp import client_capabilities

    path = root / rel
    uri = from_fs_path(str(path))
    text = path.read_text(encoding="utf-8")
    bench = Client()
    bench.verbose = verbose
    client = bench.lsp
    await client.start_io(sys.executable, "-m", "fxscope", "serve", env=env(), cwd=str(root))
    stderr: list[str] = []
    drain = asyncio.create_task(read_stderr(client, stderr, verbose))  # a full pipe would block the server
    out: dict = {}
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)]))
        client.initialized(types.InitializedParams())
        t0 = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=text)))
        first_lens = None
        deadline = time.monotonic() + timeout
        while True:
            titles = await bench.lenses(uri)
            if titles and first_lens is None:
                first_lens = time.perf_counter() - t0
            if titles and not any(TRACING in t for t in titles):
                status = await bench.status()
                if status["total"] > 0:
                    break
            if verbose:
                print(f"    [{time.perf_counter() - t0:6.1f} s] {titles}", file=sys.stderr, flush=True)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{rel} was not final after {timeout:.0f} s: {titles}")
            await asyncio.sleep(0.25)
        out["open_s"] = time.perf_counter() - t0
        out["first_lens_s"] = first_lens
        out["lenses"] = titles
        out["status_at_open"] = status
        first = next((t for t, u, _, diags in bench.published if u == uri and diags), None)  # not an empty one
        out["first_diagnostics_s"] = None if first is None else first - t0
        while any(RUNNING in t for t in titles):  # the file's analyses phases
            if time.monotonic() > deadline:
                raise TimeoutError(f"the analyses of {rel} did not answer after {timeout:.0f} s: {titles}")
            await asyncio.sleep(0.25)
            titles = await bench.lenses(uri)
        out["analyses_s"] = time.perf_counter() - t0
        out["lenses"] = titles

        line, indent, arg = edit_line(text)
        lines = text.split("\n")
        latencies = []
        for i in range(edits):
            await asyncio.sleep(1.0)  # an isolated edit
            # a finding no earlier result has on that line: FXS101, then FXS103, ...
            code, inserted = EDITS[i % 2]
            edited = "\n".join(lines[:line] + [indent + inserted.format(x=arg)] + lines[line:])
            before = await bench.status()
            t1 = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=i + 2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
            t2 = await bench.wait_finding(uri, i + 2, line, code, t1, timeout)
            after = await bench.status()
            latencies.append((t2 - t1, code, before, after))
        out["edits"] = latencies
    finally:
        try:
            await asyncio.wait_for(client.shutdown_async(None), 60)
            client.exit(None)
            await asyncio.wait_for(client._server.wait(), 30)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - a server that does not shut down is killed
            if client._server is not None and client._server.returncode is None:  # type: ignore[union-attr]
                client._server.kill()  # type: ignore[union-attr]
        await client.stop()
        drain.cancel()
    out["logs"] = [m for m in bench.logs if m.startswith("fxscope:")]
    return out


def cold_check(root: Path, timeout: float) -> tuple[float, int]:
    """Wall seconds of a cold ``fxscope check`` of ``root`` and its exit code."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", str(root), "--no-cache", "--format", "json"],
                          cwd=root, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    return time.perf_counter() - t0, proc.returncode


def check(root: Path, paths: list[str], timeout: float) -> tuple[float, int]:
    """Wall seconds of ``fxscope check PATHS`` of ``root`` with its cache, and its exit code."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", *paths, "--format", "json"],
                          cwd=root, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    return time.perf_counter() - t0, proc.returncode


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path, help="the repository (never modified: copies are measured)")
    parser.add_argument("--file", default="vit_pytorch/vit.py", help="the file to open (relative to REPO)")
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per step")
    parser.add_argument("--skip-check", action="store_true", help="do not run the cold whole-repository check")
    parser.add_argument("--verbose", action="store_true", help="print the server's log and the lenses as they come")
    parser.add_argument("--analyses", default="",
                        help="comma-separated analyses written into the copies' [tool.fxscope] (fx,compile,export: "
                             "classes get inferred inputs)")
    parser.add_argument("--recheck", nargs="+", default=[], metavar="PATH",
                        help="paths of the editor's copy to check twice after the session (the second: cached)")
    args = parser.parse_args()
    ANALYSES[:] = [a for a in args.analyses.split(",") if a]
    repo = args.repo.resolve()
    if not (repo / args.file).is_file():
        raise SystemExit(f"{repo / args.file} does not exist")

    print(f"fxscope: opening {args.file} of {repo.name} (no configuration, no cache; {os.cpu_count()} cores)")
    print(f"load average at start: {load()}")
    with tempfile.TemporaryDirectory(prefix="fxscope-open-") as tmp:
        seconds, files, targets = discovery_figures(copy_repo(repo, Path(tmp) / "disc"))
        print(f"discovery (AST only, in-process): {files} files with targets, {targets} targets in {seconds:.2f} s")

        root = copy_repo(repo, Path(tmp) / "open" / repo.name)
        result = asyncio.run(open_and_edit(root, args.file, args.edits, args.timeout, args.verbose))
        st = result["status_at_open"]
        first = result["first_diagnostics_s"]
        print(f"open -> {args.file} first findings published: {'none' if first is None else f'{first:.1f} s'}")
        print(f"open -> {args.file} final: {result['open_s']:.1f} s (first lenses after {result['first_lens_s']:.1f} s;"
              f" {len(result['lenses'])} lenses); the workspace then: {st['done']} of {st['total']} targets done,"
              f" {st['running']} running, {st['queued']} queued")
        if ANALYSES:
            print(f"open -> {args.file} analyses summaries in its lenses: {result['analyses_s']:.1f} s")
        for title in result["lenses"]:
            print(f"    lens: {title}")
        for i, (latency, code, before, after) in enumerate(result["edits"], 1):
            print(f"edit {i} -> {code} on the inserted line: {latency:.2f} s (background: {before['done']} -> "
                  f"{after['done']} of {after['total']} done, {after['running']} running)"
                  f"  {'within' if latency <= EDIT_BUDGET_S else 'OVER'} the {EDIT_BUDGET_S:g} s budget")
        if result["edits"]:
            p50 = statistics.median(latency for latency, *_ in result["edits"])
            print(f"edit -> diagnostics p50: {p50:.2f} s over {len(result['edits'])} edits")
        for line in result["logs"]:
            print(f"    server log: {line}")
        print(f"load average after the editor session: {load()}")
        if args.recheck:
            first_s, code = check(root, args.recheck, args.timeout)
            print(f"`fxscope check {' '.join(args.recheck)}` after the editor session (its cache): {first_s:.1f} s"
                  f" (exit {code})")
            again, code = check(root, args.recheck, args.timeout)
            print(f"cached re-check `fxscope check {' '.join(args.recheck)}`: {again:.2f} s (exit {code})")

        if args.skip_check:
            return
        check_root = copy_repo(repo, Path(tmp) / "check" / repo.name)
        wall, code = cold_check(check_root, args.timeout)
        print(f"cold `fxscope check` of the whole repository: {wall:.1f} s (exit {code})")
        print(f"load average after the check: {load()}")
        ratio = result["open_s"] / wall
        ok = ratio <= OPEN_BUDGET_RATIO and result["open_s"] <= OPEN_BUDGET_S
        print(f"open/check = {ratio:.3f} (budget <= {OPEN_BUDGET_RATIO}, and open under {OPEN_BUDGET_S:g} s): "
              f"{'within budget' if ok else 'OVER budget'}")


if __name__ == "__main__":
    main()
