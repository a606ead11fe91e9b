"""What a job's answer costs on its way from the child to the editor, without the trace itself.

For generated models of ~200 and ~2000 graph nodes (edit_latency.py's), it runs the job in this
process once and then times, median of ``--repeat``:

- child: the job's answer as the child sends it (the typed outcome's ``to_json`` and
  ``json.dumps``);
- engine: ``json.loads``, root-relative paths and the strict read into a ``TargetOutcome`` (on a
  checkout that still has ``fxscope.engine.payload``, its shape check plus the read, as that
  engine did);
- the whole job (import, build, fx, answer), for scale.

It runs against whichever fxscope is first on the path, so the same script measures two checkouts:

    PYTHONPATH=daemon .venv/bin/python benchmarks/outcome_roundtrip.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edit_latency import write_workspace  # noqa: E402


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    import fxscope
    from fxscope.engine import engine as engine_module
    from fxscope.job.run import run_job
    from fxscope.job.trace_job import TraceJob
    from fxscope.model import TargetOutcome
    from fxscope.project.config import Config
    from fxscope.project.discovery import Target

    try:
        payload_problem = importlib.import_module("fxscope.engine.payload").payload_problem
    except ImportError:
        payload_problem = None
    print(f"fxscope from {Path(fxscope.__file__).parent}; "
          f"engine read: {'shape check + read' if payload_problem else 'one strict TargetOutcome.from_json'}")
    root = Path(tempfile.mkdtemp(prefix="fxscope-roundtrip-"))
    paths = write_workspace(root, {"Stack200": 100, "Stack2000": 1000})
    sys.path.insert(0, str(root))
    print(f"{'model':10s} {'nodes':>6s} {'job':>9s} {'child':>9s} {'engine':>9s} {'bytes':>9s}")
    for name, path in paths.items():
        target = Target(f"{path.name}::{name}", "class", path.name, 4, name.lower(), name)
        job = TraceJob(str(root), Config(root=root), target, fallback_file=str(path), fallback_line=4)
        started = time.perf_counter()
        out = run_job(job)
        job_ms = (time.perf_counter() - started) * 1000

        def answer() -> str:
            return json.dumps(out.to_json() if hasattr(out, "to_json") else out)

        text = answer()

        def read() -> Any:
            body = json.loads(text)
            body = engine_module._relative_paths(body, str(root))
            if payload_problem is not None and payload_problem(body) is not None:
                raise RuntimeError("malformed")
            return TargetOutcome.from_json(body, target=target.id)

        outcome = read()
        print(f"{name:10s} {outcome.nodes:6d} {job_ms:7.0f}ms {_median_ms(answer, args.repeat):7.2f}ms "
              f"{_median_ms(read, args.repeat):7.2f}ms {len(text):9d}")


if __name__ == "__main__":
    main()
