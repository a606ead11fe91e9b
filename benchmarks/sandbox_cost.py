"""What the OS sandbox costs per job: job latency with and without it over N small jobs.

Writes a workspace of N small model files (one target each), starts one engine with the sandbox on
and one with it off (``sandbox = false``), each with one worker so jobs run one after another, lets
each zygote start (not measured), then re-checks every target without the cache ``--repeat`` times
and prints, per setting, the median job latency (the pool's submit-to-result time of each job) and
the wall time per job of the whole check; then the difference. Last, the cost of the Landlock layer
a job's child adds, measured alone in forked processes.

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


def measure(root: Path, enabled: bool, repeat: int) -> tuple[list[float], list[float], str]:
    config = dataclasses.replace(load_config(root), sandbox=enabled)
    cache = root / (".cache-on" if enabled else ".cache-off")
    durations: list[float] = []
    per_job_wall: list[float] = []
    with Engine(root, config, cache_dir=cache, workers=1) as engine:
        engine.check(use_cache=False)  # starts the zygote: not measured
        status = engine.sandbox_status()
        for _ in range(repeat):
            started = time.perf_counter()
            check = engine.check(use_cache=False)
            wall = (time.perf_counter() - started) * 1000
            per_job_wall.append(wall / len(check.results))
            durations += [r.duration_ms for r in check.results if r.duration_ms is not None]
            assert all(r.outcome.status == "traced" for r in check.results), [r.outcome.status for r in check.results]
    return durations, per_job_wall, f"{status.kind}: {status.detail}"


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
        rows = {}
        for enabled in (False, True, False, True):  # interleaved: drift hits both settings
            durations, walls, status = measure(root, enabled, args.repeat)
            prev = rows.get(enabled, ([], [], status))
            rows[enabled] = (prev[0] + durations, prev[1] + walls, status)
    print(f"{args.jobs} small jobs x {2 * args.repeat} cold checks per setting, one worker")
    for enabled in (False, True):
        durations, walls, status = rows[enabled]
        print(f"  sandbox {'on ' if enabled else 'off'} ({status})")
        print(f"    job latency median {statistics.median(durations):7.1f} ms   "
              f"p90 {statistics.quantiles(durations, n=10)[-1]:7.1f} ms   "
              f"wall per job {statistics.median(walls):7.1f} ms")
    off, on = statistics.median(rows[False][0]), statistics.median(rows[True][0])
    wall_off, wall_on = statistics.median(rows[False][1]), statistics.median(rows[True][1])
    print(f"  sandbox cost per job: {on - off:+.1f} ms latency ({(on / off - 1) * 100:+.1f}%), "
          f"{wall_on - wall_off:+.1f} ms wall")
    cost = layer_cost()
    print(f"  adding the job's Landlock layer alone: {cost:.3f} ms (median of 50 forks)" if cost is not None
          else "  Landlock not available: no layer to measure")


if __name__ == "__main__":
    main()
