"""Inferred example inputs on a corpus of public repositories: how many of the classes fxscope
builds get inputs, whether each one runs eagerly in a fresh process, and whether fxscope's compile
and export verdicts on them agree with torch's own in a fresh process.

For each repository (``--repos``, default: every checkout of the corpus directory, laid out as
``benchmarks/zero_config.py --corpus`` expects), with a fresh cache and no configuration, the script
runs ``fxscope check --analyses fx,compile,export --format json`` in a subprocess, then the same
check on the same cache (the cached re-check), and prints:

- built: class targets fxscope built and traced (status traced, partial or failed);
- inputs: those that got inferred inputs, their share, and by where they came from (call-site,
  docstring, readme, convention, annotation, structure); FXS409: built classes without inputs;
- first-run and cached re-check wall times;
- for each class with inputs, in a fresh process (plain torch, nothing of fxscope's analyses):
  the class rebuilt the way fxscope built it (its ``build`` record, on the CPU, torch's generator
  seeded with 0 as the worker seeds it), the inputs made from the report's specs (seeded the same
  way), then
  * eager: the forward runs on them (every inferred input must);
  * compile: ``torch._dynamo.explain``'s graph count, and the workspace lines of its break reasons,
    against the report's ``compile.graphs`` and its FXS601 lines;
  * export: ``torch.export.export`` (non-strict, as fxscope's default) succeeds or not, and when it
    fails the innermost workspace frame of its error is among the report's FXS7xx lines.

Usage (the corpus environment has the packages the repositories import)::

    PYTHONPATH=daemon .venv-corpus/bin/python benchmarks/inferred_inputs.py --corpus DIR \
        [--repos karpathy+nanoGPT,milesial+Pytorch-UNet] [--max-compare 20] [--timeout 120] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zero_config import (  # noqa: E402 - the corpus helpers of the zero-config benchmark
    DAEMON_DIR, TRACED, all_sites, clean_env, inferred_kwargs, innermost_workspace_frame, python_path, rebuild_cpu,
)


def run_check(python: str, repo_dir: Path, cache_dir: Path, timeout: float) -> tuple[dict[str, Any], float]:
    """``fxscope check --analyses fx,compile,export`` on ``repo_dir`` as JSON, and its wall time."""
    cmd = [python, "-m", "fxscope", "check", str(repo_dir), "--root", str(repo_dir), "--format", "json",
           "--fail-on", "never", "--cache-dir", str(cache_dir), "--analyses", "fx,compile,export"]
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(DAEMON_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, cwd=repo_dir, env=env, capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"fxscope check exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout), elapsed


# -- torch's own answer, in a fresh process ----------------------------------------------------------

def truth(repo_dir: Path, target: dict[str, Any]) -> dict[str, Any]:
    """Rebuild ``target``, run it eagerly on its inferred inputs, then ask torch.compile (explain)
    and torch.export about it (run in a fresh process: :func:`main` with ``--truth``)."""
    import torch

    torch.set_num_threads(1)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != str(HERE)]
    entries = python_path(repo_dir)
    for entry in reversed(entries):
        sys.path.insert(0, str(entry))
    directory = (repo_dir / target["file"]).parent
    if directory != repo_dir and not (directory / "__init__.py").exists():
        sys.path.insert(len(entries), str(directory))
    os.chdir(repo_dir)
    sys.argv = [str(repo_dir / target["file"])]
    out: dict[str, Any] = {}
    try:
        model = rebuild_cpu(repo_dir, target)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything
        return {"rebuilt": False, "error": f"{type(e).__name__}: {e}"[:300]}
    out["rebuilt"] = True
    try:
        model(**(inferred_kwargs(target) or {}))
        out["eager"] = True
    except BaseException as e:  # noqa: BLE001
        return {**out, "eager": False, "error": f"{type(e).__name__}: {e}"[:300]}
    try:
        model = rebuild_cpu(repo_dir, target)  # a model of its own, as fxscope gives each analysis
        torch._dynamo.reset()
        explained = torch._dynamo.explain(model)(**(inferred_kwargs(target) or {}))
        lines = set()
        for reason in explained.break_reasons:
            frames = [(os.path.abspath(f.filename), f.lineno) for f in reason.user_stack or ()]
            inside = [(Path(f).relative_to(repo_dir.resolve()).as_posix(), line) for f, line in frames
                      if f.startswith(str(repo_dir.resolve()) + os.sep)]
            if inside:
                lines.add(inside[-1])
        out["compile"] = {"graphs": explained.graph_count, "breaks": explained.graph_break_count,
                          "lines": sorted(lines)}
    except BaseException as e:  # noqa: BLE001
        out["compile"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    try:
        model = rebuild_cpu(repo_dir, target)
        torch.export.export(model, (), kwargs=inferred_kwargs(target) or {}, strict=False)
        out["export"] = {"exported": True}
    except BaseException as e:  # noqa: BLE001
        out["export"] = {"exported": False, "error": f"{type(e).__name__}: {e}"[:300],
                         "location": innermost_workspace_frame(repo_dir, e)}
    return out


def truth_in_fresh_process(python: str, repo_dir: Path, target: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fxscope-inputs-truth-") as tmp:
        out = Path(tmp) / "result.json"
        env = clean_env()
        env["PYTHONPATH"] = os.pathsep.join([str(DAEMON_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor")
        try:
            proc = subprocess.run([python, str(Path(__file__).resolve()), "--truth", str(repo_dir), str(out)],
                                  check=False, input=json.dumps(target), cwd=repo_dir, env=env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"rebuilt": False, "error": f"timed out after {timeout:.0f} s"}
        if not out.exists():
            return {"rebuilt": False, "error": f"the process exited {proc.returncode}: {proc.stderr.strip()[-300:]}"}
        return json.loads(out.read_text())


def _lines(report: dict[str, Any], tid: str, prefix: str) -> set[tuple[str, int]]:
    out = set()
    for f in all_sites(report["findings"]):  # a grouped library failure's other lines are its sites
        targets = {f.get("target")} | {s.get("target") for s in f.get("scopes") or ()}
        if tid in targets and f["code"].startswith(prefix):
            out.add((f["file"], f["line"]))
            if f.get("anchor"):
                out.add((f["anchor"]["file"], f["anchor"]["line"]))
    return out


def compare(python: str, repo_dir: Path, report: dict[str, Any], limit: int, timeout: float,
            verbose: bool) -> dict[str, Any]:
    """Each class with inputs (at most ``limit``) against torch in a fresh process."""
    figures: dict[str, Any] = Counter()
    notes: list[str] = []
    with_inputs = [t for t in report["targets"] if t.get("inputs")]
    for target in with_inputs[:limit]:
        tid = target["id"]
        got = truth_in_fresh_process(python, repo_dir, target, timeout)
        figures["compared"] += 1
        if not got.get("rebuilt"):
            figures["not_rebuilt"] += 1
            notes.append(f"{tid}: not rebuilt: {got.get('error')}")
            continue
        if not got.get("eager"):
            figures["eager_fails"] += 1
            notes.append(f"{tid}: eager forward fails: {got.get('error')}")
            continue
        figures["eager_runs"] += 1
        analyses = target.get("analyses") or {}  # the report's summaries: analyses.<name>.{ok, counts}
        ours_compile, theirs = analyses.get("compile"), got.get("compile") or {}
        if ours_compile is not None and "graphs" in theirs:
            figures["compile_compared"] += 1
            ours_lines = _lines(report, tid, "FXS601")
            their_lines = {tuple(x) for x in theirs["lines"]}
            ours_graphs = ours_compile["counts"].get("graphs")
            if ours_graphs == theirs["graphs"] and their_lines <= ours_lines:
                figures["compile_agree"] += 1
            else:
                notes.append(f"{tid}: compile: fxscope {ours_graphs} graphs, breaks at "
                             f"{sorted(ours_lines)}; torch {theirs['graphs']} graphs, breaks at {sorted(their_lines)}")
        ours_export, theirs_e = analyses.get("export"), got.get("export") or {}
        if ours_export is not None and "exported" in theirs_e:
            figures["export_compared"] += 1
            same = ours_export["ok"] == theirs_e["exported"]
            if same and not theirs_e["exported"] and theirs_e.get("location"):
                same = tuple(theirs_e["location"]) in _lines(report, tid, "FXS7")
            if same:
                figures["export_agree"] += 1
            else:
                notes.append(f"{tid}: export: fxscope exported={ours_export['ok']} at "
                             f"{sorted(_lines(report, tid, 'FXS7'))}; torch exported={theirs_e['exported']} at "
                             f"{theirs_e.get('location')} ({theirs_e.get('error', '')[:120]})")
        if verbose:
            print(f"    {tid}: {json.dumps(got)[:200]}", flush=True)
    return {"figures": dict(figures), "notes": notes, "skipped": max(0, len(with_inputs) - limit)}


def with_timeout(repo_dir: Path, timeout: float, scratch: Path) -> Path:
    """A copy of ``repo_dir`` (the corpus stays read-only) whose ``[tool.fxscope]`` sets the
    per-target ``timeout`` (appended to its pyproject.toml; a repository that configures fxscope
    itself is used as it is)."""
    copy = scratch / repo_dir.name
    shutil.copytree(repo_dir, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pt", "*.pth", "*.bin",
                                                                   "*.ckpt", "*.safetensors"), symlinks=True)
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if "[tool.fxscope" not in text:
        pyproject.write_text(text + f"\n[tool.fxscope]\ntimeout = {timeout:g}\n", encoding="utf-8")
    return copy


def measure(python: str, repo_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    cache = Path(tempfile.mkdtemp(prefix="fxscope-inputs-cache-"))
    scratch = Path(tempfile.mkdtemp(prefix="fxscope-inputs-repo-"))
    try:
        if args.timeout:
            repo_dir = with_timeout(repo_dir, args.timeout, scratch)
        return _measure(python, repo_dir, cache, args)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _measure(python: str, repo_dir: Path, cache: Path, args: argparse.Namespace) -> dict[str, Any]:
    report, first = run_check(python, repo_dir, cache, args.check_timeout)
    _, cached = run_check(python, repo_dir, cache, args.check_timeout)
    built = [t for t in report["targets"] if t["kind"] == "class" and t["status"] in TRACED]
    inputs = [t for t in built if t.get("inputs")]
    out = {"repo": repo_dir.name, "classes": sum(t["kind"] == "class" for t in report["targets"]),
           "built": len(built), "inputs": len(inputs),
           "by_kind": dict(Counter(t["inputs"]["kind"] for t in inputs)),
           "fxs409": sum(f["code"] == "FXS409" for f in report["findings"]),
           "timeouts": sum(f["code"] == "FXS403" for f in report["findings"]),
           "first_s": round(first, 1), "cached_s": round(cached, 2)}
    if args.max_compare > 0:
        out["truth"] = compare(python, repo_dir, report, args.max_compare, args.truth_timeout, args.verbose)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="directory of OWNER+NAME checkouts")
    parser.add_argument("--repos", help="comma-separated OWNER+NAME directories (default: all)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch and the corpus packages")
    parser.add_argument("--max-compare", type=int, default=30, help="classes compared with torch per repository")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="per-target timeout (s) set in a copy of each repository (default: fxscope's, 30 s)")
    parser.add_argument("--check-timeout", type=float, default=3600.0)
    parser.add_argument("--truth-timeout", type=float, default=240.0)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--truth", nargs=2, metavar=("REPO", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.truth:  # the fresh process: target JSON on stdin, result JSON to OUT
        result = truth(Path(args.truth[0]), json.loads(sys.stdin.read()))
        Path(args.truth[1]).write_text(json.dumps(result))
        return 0
    if args.corpus is None:
        parser.error("--corpus is required")
    names = args.repos.split(",") if args.repos else sorted(p.name for p in args.corpus.iterdir() if p.is_dir())
    results = []
    print(f"{'repository':42} {'classes':>7} {'built':>5} {'inputs':>6} {'share':>6} {'409':>4} {'first':>7} "
          f"{'cached':>6}  eager   compile  export", flush=True)
    for name in names:
        repo_dir = (args.corpus / name).resolve()
        try:
            r = measure(args.python, repo_dir, args)
        except Exception as e:  # noqa: BLE001 - one repository's failure is reported, the rest go on
            print(f"{name:42} failed: {e}", flush=True)
            continue
        results.append(r)
        t = (r.get("truth") or {}).get("figures", {})
        share = r["inputs"] / r["built"] if r["built"] else 0.0
        print(f"{name:42} {r['classes']:>7} {r['built']:>5} {r['inputs']:>6} {share:>6.2f} {r['fxs409']:>4} "
              f"{r['first_s']:>6.1f}s {r['cached_s']:>5.2f}s  {t.get('eager_runs', 0)}/{t.get('compared', 0)}"
              f"   {t.get('compile_agree', 0)}/{t.get('compile_compared', 0)}"
              f"    {t.get('export_agree', 0)}/{t.get('export_compared', 0)}", flush=True)
        print(f"    inputs by source: {r['by_kind']}; timeouts {r['timeouts']}", flush=True)
        for note in (r.get("truth") or {}).get("notes", []):
            print(f"    - {note}", flush=True)
        if (r.get("truth") or {}).get("skipped"):
            print(f"    ({r['truth']['skipped']} classes with inputs not compared: --max-compare)", flush=True)
    built = sum(r["built"] for r in results)
    got = sum(r["inputs"] for r in results)
    total: Counter[str] = Counter()
    for r in results:
        total.update((r.get("truth") or {}).get("figures", {}))
    print(f"\ntotal: {got}/{built} built classes got inferred inputs ({got / built if built else 0:.2f}); "
          f"eager in a fresh process {total['eager_runs']}/{total['compared']} (not rebuilt {total['not_rebuilt']}); "
          f"compile agrees {total['compile_agree']}/{total['compile_compared']}; "
          f"export agrees {total['export_agree']}/{total['export_compared']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
