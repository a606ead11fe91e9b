"""How `fxscope check` scales with the number of targets, against a naive one-process-per-model script.

For N = 10, 200, 1000 it writes a workspace of N small model files (one target each, a few Linear
layers; every third one has an `if` on a traced value) and prints:

- cold: `fxscope check` with an empty cache (one subprocess, the worker pool traces everything);
- cached: the same check again (budget: under 0.5 s, without importing torch);
- one file changed: a check after editing one model file;
- daemon: `fxscope check --daemon` on the unchanged workspace, then after editing one file
  (when the daemon is available);
- naive: one fresh `python -c "import torch; torch.fx.symbolic_trace(...)"` per target, run
  sequentially like a simple CI script (above --naive-sample targets, measured on a sample and
  extrapolated; the output says so).

Then a workspace whose one target hangs (an idle `time.sleep` loop) next to a few clean ones: the
cold check pays its timeout once; an unchanged re-check answers from the cache (budget 0.5 s),
`--retry-faults` pays it again.

Last, the Workspace session (the language server's core) on N = 200 targets: the re-check time
after one edit through its scheduler (debounce 0; only the edited file is parsed again, no
re-walk) and a warm hover query answered from its store.

Usage: python benchmarks/check_scaling.py [--sizes 10,200,1000] [--naive-sample 20] [--repeat 5]
       [--session-size 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

DAEMON_DIR = Path(__file__).resolve().parent.parent / "daemon"
CACHED_BUDGET_S = 0.5

MODEL = '''\
import torch
from torch import nn


class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(32, 64)
        self.hidden = nn.Linear(64, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.inp(x))
{branch}        x = torch.relu(self.hidden(x))
        return self.out(x)
'''
BRANCH = "        if x.sum() > 0:\n            x = x * 2\n"

# Runs fxscope's main() and reports on stderr whether torch got imported.
WRAPPER = textwrap.dedent("""
    import sys
    from fxscope.cli.main import main
    sys.argv = ["fxscope", *sys.argv[1:]]
    try:
        rc = main()
    finally:
        sys.stderr.write("\\nFXSCOPE-BENCH torch-imported=%s\\n" % ("torch" in sys.modules))
    sys.exit(rc)
""")

NAIVE = textwrap.dedent("""
    import sys, torch
    module = __import__(sys.argv[1])
    model = getattr(module, sys.argv[2])()
    try:
        torch.fx.symbolic_trace(model)
    except Exception:
        pass
""")


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(DAEMON_DIR) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def write_workspace(root: Path, n: int) -> None:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 120\n")
    for i in range(n):
        (root / f"model_{i:03d}.py").write_text(MODEL.format(i=i, branch=BRANCH if i % 3 == 0 else ""))


def fxscope(root: Path, *args: str, wrapper: bool = False
            ) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time of one `fxscope <args>` subprocess in ``root``, and the finished process."""
    head = [sys.executable, "-c", WRAPPER] if wrapper else [sys.executable, "-m", "fxscope"]
    start = time.perf_counter()
    proc = subprocess.run([*head, *args], cwd=root, env=env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"fxscope {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, proc


def check(root: Path, *extra: str, wrapper: bool = False) -> tuple[float, dict, str]:
    elapsed, proc = fxscope(root, "check", ".", "--format", "json", *extra, wrapper=wrapper)
    return elapsed, json.loads(proc.stdout), proc.stderr


def torch_imported(stderr: str) -> bool | None:
    for line in stderr.splitlines():
        if line.startswith("FXSCOPE-BENCH torch-imported="):
            return line.rsplit("=", 1)[1] == "True"
    return None


def naive_time(root: Path, n: int, sample: int) -> tuple[float, int]:
    """Seconds for one fresh interpreter per target (sequential); measured on ``sample`` targets
    spread over the workspace and scaled to ``n`` when n > sample. Returns (seconds, measured)."""
    if n <= sample:
        indices = list(range(n))
    else:
        indices = [round(k * (n - 1) / (sample - 1)) for k in range(sample)]
    start = time.perf_counter()
    for i in indices:
        subprocess.run([sys.executable, "-c", NAIVE, f"model_{i:03d}", f"Model{i}"], cwd=root, env=env(),
                       check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    return elapsed * n / len(indices), len(indices)


def daemon_available() -> bool:
    return (DAEMON_DIR / "fxscope" / "cli" / "daemon.py").is_file()


def daemon_time(root: Path, repeat: int) -> tuple[float | None, float | None, str]:
    """Median `check --daemon` time on the unchanged workspace, the time of one after editing one
    file, or None and why not."""
    if not daemon_available():
        return None, None, "not available (no fxscope/cli/daemon.py)"
    try:
        fxscope(root, "daemon", "start")
    except SystemExit as e:
        return None, None, f"not available (daemon start failed: {str(e).splitlines()[0]})"
    try:
        check(root, "--daemon")  # the first request may still wait for the warm worker
        times = []
        for _ in range(repeat):
            elapsed, report, _ = check(root, "--daemon")
            times.append(elapsed)
        summary = report["summary"]
        note = f"{summary.get('cached')}/{summary['targets']} cached"
        path = root / "model_002.py"
        path.write_text(path.read_text() + "# edited for the daemon\n")
        changed, report, _ = check(root, "--daemon")
        retraced = report["summary"]["targets"] - report["summary"].get("cached", 0)
        note += f"; after one edit {retraced} re-traced"
        return statistics.median(times), changed, note
    except (SystemExit, ValueError, KeyError) as e:
        return None, None, f"not available ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    finally:
        subprocess.run([sys.executable, "-m", "fxscope", "daemon", "stop"], cwd=root, env=env(),
                       capture_output=True)


HANGS = '''\
import time

from torch import nn


class Hangs(nn.Module):
    def forward(self, x):
        while True:
            time.sleep(0.05)
'''


def run_hanging(base: Path, repeat: int, timeout: float = 3.0) -> dict:
    """A workspace with one hanging target and five clean ones: cold, unchanged and retried checks."""
    root = base / "hanging"
    write_workspace(root, 5)
    (root / "pyproject.toml").write_text(f"[tool.fxscope]\ntimeout = {timeout}\n")
    (root / "hangs.py").write_text(HANGS)
    cold, report, _ = check(root)
    codes = sorted({f["code"] for f in report["findings"] if f["target"] == "hangs.py::Hangs"})
    times, all_cached = [], True
    for _ in range(repeat):
        elapsed, rep, _ = check(root)
        times.append(elapsed)
        all_cached &= rep["summary"]["cached"] == rep["summary"]["targets"]
    retried, rep, _ = check(root, "--retry-faults")
    return {"cold": cold, "codes": codes, "unchanged": statistics.median(times), "unchanged_max": max(times),
            "all_cached": all_cached, "retried": retried, "timeout": timeout,
            "retraced": rep["summary"]["targets"] - rep["summary"]["cached"]}


def run_size(base: Path, n: int, sample: int, repeat: int) -> dict:
    root = base / f"ws{n}"
    write_workspace(root, n)
    cold, report, _ = check(root)
    assert report["summary"]["targets"] == n, report["summary"]
    assert report["summary"].get("cached", 0) == 0
    failed = report["summary"]["by_status"].get("failed", 0)

    cached_times, imported, all_cached = [], set(), True
    for k in range(repeat):
        elapsed, rep, _ = check(root)
        cached_times.append(elapsed)
        all_cached &= rep["summary"]["cached"] == n
    _, rep, stderr = check(root, wrapper=True)
    imported.add(torch_imported(stderr))
    all_cached &= rep["summary"]["cached"] == n

    path = root / "model_001.py"
    path.write_text(path.read_text() + "# edited\n")
    changed, rep, _ = check(root)
    retraced = n - rep["summary"]["cached"]

    daemon, daemon_changed, daemon_note = daemon_time(root, repeat)
    naive, measured = naive_time(root, n, sample)
    return {
        "n": n, "failed": failed, "cold": cold, "cached": statistics.median(cached_times),
        "cached_max": max(cached_times), "all_cached": all_cached, "torch_imported": imported,
        "changed": changed, "retraced": retraced, "daemon": daemon, "daemon_changed": daemon_changed,
        "daemon_note": daemon_note,
        "naive": naive, "naive_measured": measured,
    }


# Runs a Workspace (the session the language server, `watch` and the daemon share) in its own
# process: loads the cached results, then edits one file N times through the scheduler and times
# each re-check until its findings are stored; then times hover queries from the store.
SESSION = textwrap.dedent(r"""
    import json, statistics, sys, time
    from pathlib import Path
    from fxscope.session import SessionSettings, Workspace
    from fxscope.project import _summary
    root, repeat = Path(sys.argv[1]), int(sys.argv[2])
    ws = Workspace(root, settings=SessionSettings(debounce_s=0.0))
    t0 = time.perf_counter()
    ws.start()
    assert ws.wait_idle(3600)
    start = time.perf_counter() - t0
    path = root / "model_002.py"
    disk = path.read_text()
    ws.open(path, 1, disk)
    edits, parses = [], []
    for k in range(repeat):
        text = disk.replace("        x = torch.relu(self.inp(x))\n",
                            "        x = torch.relu(self.inp(x))\n        if x.sum() > %d:\n            x = -x\n" % k)
        before = _summary.cache_stats()["parses"]
        t0 = time.perf_counter()
        ws.change(path, k + 2, text)
        assert ws.wait_idle(600)
        found = ws.findings_for(path)
        edits.append(time.perf_counter() - t0)
        parses.append(_summary.cache_stats()["parses"] - before)
        assert found.version == k + 2 and any(f.code == "FXS101" for f in found.findings), found
    line = next(i for i, t in enumerate(disk.splitlines(), 1) if "self.hidden(x)" in t)
    ws.close(path)
    ws.wait_idle(600)
    hovers = []
    for _ in range(200):
        t0 = time.perf_counter()
        nodes = ws.nodes_at(path, line)
        ws.classes_in(path)
        hovers.append(time.perf_counter() - t0)
    assert nodes, "no node on the hovered line"
    status = ws.status()
    ws.close()
    print(json.dumps({"start": start, "edit": statistics.median(edits), "edit_max": max(edits),
                      "parses": max(parses), "hover": statistics.median(hovers), "hover_max": max(hovers),
                      "targets": status.total, "torch": "torch" in sys.modules}))
""")


def run_session(base: Path, n: int, repeat: int) -> dict:
    """Figures of the Workspace on an N-target workspace (reusing a checked one when present)."""
    root = base / f"ws{n}"
    if not root.exists():
        write_workspace(root, n)
    proc = subprocess.run([sys.executable, "-c", SESSION, str(root), str(repeat)], env=env(),
                          capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        raise RuntimeError(f"session benchmark failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,200,1000")
    parser.add_argument("--naive-sample", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each cached check (median)")
    parser.add_argument("--keep", action="store_true", help="keep the generated workspaces")
    parser.add_argument("--session-size", type=int, default=200,
                        help="targets of the Workspace session figures (0 skips them)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    base = Path(tempfile.mkdtemp(prefix="fxscope-bench-"))
    print(f"fxscope check scaling on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    if args.keep:
        print(f"workspaces in {base}")
    ok = True
    try:
        for n in sizes:
            r = run_size(base, n, args.naive_sample, args.repeat)
            naive_note = "" if r["naive_measured"] == n else \
                f" (extrapolated from {r['naive_measured']} of {n} targets)"
            torch_flag = r["torch_imported"]
            within = r["cached"] < CACHED_BUDGET_S and torch_flag == {False} and r["all_cached"]
            ok &= within
            print(f"\nN = {n} targets ({r['failed']} with an `if` on a traced value)")
            print(f"  cold check                {r['cold']:8.2f} s   "
                  f"({r['cold'] / n * 1000:.0f} ms per target)")
            print(f"  fully cached check        {r['cached']:8.3f} s   (median of {args.repeat}, max "
                  f"{r['cached_max']:.3f} s; budget {CACHED_BUDGET_S} s: {'ok' if within else 'OVER'}; "
                  f"torch imported: {', '.join(str(t) for t in sorted(torch_flag, key=str))}; "
                  f"all cached: {r['all_cached']})")
            print(f"  one file changed          {r['changed']:8.3f} s   "
                  f"({r['retraced']} target re-traced)")
            if r["daemon"] is None:
                print(f"  check --daemon                 n/a   ({r['daemon_note']})")
            else:
                print(f"  check --daemon, unchanged {r['daemon']:8.3f} s   ({r['daemon_note']})")
                print(f"  check --daemon, one edit  {r['daemon_changed']:8.3f} s")
            print(f"  naive, one `python -c 'import torch; symbolic_trace(...)'` per target: "
                  f"{r['naive']:.2f} s{naive_note}")
            print(f"  ratios: naive / cold = {r['naive'] / r['cold']:.1f}x, "
                  f"naive / cached = {r['naive'] / r['cached']:.0f}x, "
                  f"naive / one-file-changed = {r['naive'] / r['changed']:.0f}x, "
                  f"cold / cached = {r['cold'] / r['cached']:.0f}x")
        h = run_hanging(base, args.repeat)
        within = h["unchanged"] < CACHED_BUDGET_S and h["all_cached"]
        ok &= within
        print(f"\nA workspace with a hanging target (timeout {h['timeout']:g} s; {', '.join(h['codes'])}) and 5 clean ones")
        print(f"  cold check                {h['cold']:8.2f} s   (the timeout is paid once)")
        print(f"  unchanged re-check        {h['unchanged']:8.3f} s   (median of {args.repeat}, max "
              f"{h['unchanged_max']:.3f} s; budget {CACHED_BUDGET_S} s: {'ok' if within else 'OVER'}; "
              f"all cached: {h['all_cached']})")
        print(f"  check --retry-faults      {h['retried']:8.2f} s   ({h['retraced']} target re-traced)")
        if args.session_size:
            w = run_session(base, args.session_size, args.repeat)
            print(f"\nWorkspace session (the language server's core), N = {w['targets']} targets")
            print(f"  start, results loaded     {w['start']:8.2f} s   (from the cache when checked above)")
            print(f"  re-check after one edit   {w['edit']:8.3f} s   (median of {args.repeat}, max "
                  f"{w['edit_max']:.3f} s; debounce 0; files parsed per edit: {w['parses']}, no re-walk)")
            print(f"  hover query (warm)        {w['hover'] * 1000:8.3f} ms  (nodes_at + classes_in, median "
                  f"of 200, max {w['hover_max'] * 1000:.3f} ms; torch in the session process: {w['torch']})")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
