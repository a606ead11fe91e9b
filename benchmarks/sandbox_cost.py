"""What the OS sandbox costs per job: job latency with and without it over N small jobs.

Writes a workspace of N small model files (one target each), starts one engine with the sandbox on
and one with it off (``sandbox = false``), each with one worker so jobs run one after another, lets
each zygote start (not measured), then re-checks every target without the cache ``--repeat`` times,
alternating the two, and prints per setting the median job latency (the pool's submit-to-result
time of each job) and the wall time per job; then the difference. Last, the sandbox's two costs in
a job measured alone in forked processes: adding the job's Landlock layer, and the audit hook that
attributes refusals, on one trace of the model.

Usage: python benchmarks/sandbox_cost.py [--jobs 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "daemon"))

from fxscope.engine import Engine  # noqa: E402
from fxscope.project.config import load_config  # noqa: E402
from fxscope.worker import sandbox  # noqa: E402

MODEL = '''\
import torch
from torch import nn


class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(torch.relu(self.inp(x)))
'''


def engine(root: Path, enabled: bool) -> Engine:
    config = dataclasses.replace(load_config(root), sandbox=enabled)
    return Engine(root, config, cache_dir=root / (".cache-on" if enabled else ".cache-off"), workers=1)


def round_of(eng: Engine) -> tuple[list[float], float]:
    """One cold check of every target: each job's latency, and the wall time per job."""
    started = time.perf_counter()
    check = eng.check(use_cache=False)
    wall = (time.perf_counter() - started) * 1000 / len(check.results)
    assert all(r.outcome.status == "traced" for r in check.results), [r.outcome.status for r in check.results]
    return [r.duration_ms for r in check.results if r.duration_ms is not None], wall


def layer_cost(samples: int = 50) -> float | None:
    """Median milliseconds for a forked process to add the job's Landlock layer."""
    abi = sandbox.landlock_abi()
    if abi < 1:
        return None
    directory = tempfile.mkdtemp(prefix="fxscope-layer-")
    times = []
    for _ in range(samples):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            started = time.perf_counter()
            sandbox._restrict(abi, [directory, *sandbox.SYSTEM_DIRS], sandbox.SYSTEM_FILES)
            os.write(w, str((time.perf_counter() - started) * 1000).encode())
            os._exit(0)
        os.close(w)
        times.append(float(os.read(r, 64)))
        os.close(r)
        os.waitpid(pid, 0)
    os.rmdir(directory)
    return statistics.median(times)


def hook_cost(samples: int = 30) -> float:
    """Median milliseconds the denial recorder (an audit hook) adds to one torch.fx trace of the
    model, each run in a fresh fork (a hook cannot be removed)."""
    import torch  # noqa: F401 - imported once, before the forks

    from fxscope.trace.analysis import analyze

    namespace: dict[str, object] = {}
    exec(MODEL.format(i=0), namespace)  # noqa: S102 - the benchmark's own model source
    model_class = namespace["Model0"]

    def one(hooked: bool) -> float:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            if hooked:
                sys.addaudithook(sandbox._recorder.hook)
            model = model_class()  # type: ignore[operator]
            started = time.perf_counter()
            analyze(model)
            os.write(w, str((time.perf_counter() - started) * 1000).encode())
            os._exit(0)
        os.close(w)
        value = float(os.read(r, 64))
        os.close(r)
        os.waitpid(pid, 0)
        return value

    one(False)
    plain, hooked = [], []
    for _ in range(samples):
        plain.append(one(False))
        hooked.append(one(True))
    return statistics.median(hooked) - statistics.median(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=40, help="model files (one job each)")
    parser.add_argument("--repeat", type=int, default=3, help="cold re-checks per setting")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fxscope-sandbox-bench-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.fxscope]\n")
        for i in range(args.jobs):
            (root / f"model_{i}.py").write_text(MODEL.format(i=i))
        rows: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
        with engine(root, False) as off_engine, engine(root, True) as on_engine:
            engines = {False: off_engine, True: on_engine}
            for eng in engines.values():
                eng.check(use_cache=False)  # starts its zygote: not measured
            status = {enabled: eng.sandbox_status() for enabled, eng in engines.items()}
            for _ in range(args.repeat):  # alternated: the machine's drift hits both settings
                for enabled in (False, True):
                    durations, wall = round_of(engines[enabled])
                    rows[enabled][0].extend(durations)
                    rows[enabled][1].append(wall)
    print(f"{args.jobs} small jobs x {args.repeat} cold checks per setting (alternated), one worker each")
    for enabled in (False, True):
        durations, walls = rows[enabled]
        print(f"  sandbox {'on ' if enabled else 'off'} ({status[enabled].kind}: {status[enabled].detail})")
        print(f"    job latency median {statistics.median(durations):7.1f} ms   "
              f"p90 {statistics.quantiles(durations, n=10)[-1]:7.1f} ms   "
              f"wall per job {statistics.median(walls):7.1f} ms")
    off, on = statistics.median(rows[False][0]), statistics.median(rows[True][0])
    wall_off, wall_on = statistics.median(rows[False][1]), statistics.median(rows[True][1])
    print(f"  sandbox cost per job (end to end): {on - off:+.1f} ms latency, {wall_on - wall_off:+.1f} ms wall "
          "(on a shared machine this difference is within the noise; the parts below are measured alone)")
    hook = hook_cost()
    print(f"  the audit hook on one trace of the model: {hook:+.2f} ms (median of 30 forks each)")
    cost = layer_cost()
    print(f"  adding the job's Landlock layer alone: {cost:.3f} ms (median of 50 forks)" if cost is not None
          else "  Landlock not available: no layer to measure")


if __name__ == "__main__":
    main()
