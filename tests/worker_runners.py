"""Small job runners for tests/test_worker.py; they run in the worker's forked children."""

from __future__ import annotations

import importlib
import linecache
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any


def echo(job: dict[str, Any]) -> dict[str, Any]:
    return {"value": job.get("value"), "cwd": os.getcwd(), "pid": os.getpid()}


def noisy(job: dict[str, Any]) -> dict[str, Any]:
    print("to-stdout")
    print("to-stderr", file=sys.stderr)
    os.write(1, b"raw-fd-1\n")
    return {"ok": True}


def claims_output(job: dict[str, Any]) -> dict[str, Any]:
    print("what-it-printed")
    return {"output": "what-it-claims", "text": "h\u00e9llo \u2603", "nested": {"output": [1, {}]}}


def sleep_forever(job: dict[str, Any]) -> dict[str, Any]:
    print("sleeping", flush=True)
    while True:
        time.sleep(0.05)  # SLEEP-LINE


def timed(job: dict[str, Any]) -> dict[str, Any]:
    start = time.time()
    time.sleep(job.get("seconds", 0.5))
    return {"start": start, "end": time.time()}


def hard_exit(job: dict[str, Any]) -> dict[str, Any]:
    os._exit(3)


def segfault(job: dict[str, Any]) -> dict[str, Any]:
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)
    return {}


def soft_exit(job: dict[str, Any]) -> dict[str, Any]:
    sys.exit(2)


def recurse(job: dict[str, Any]) -> dict[str, Any]:
    def down(n: int) -> int:
        return down(n + 1) + 1

    return {"value": down(0)}


def allocate(job: dict[str, Any]) -> dict[str, Any]:
    block = bytearray(50 * 1024**3)
    return {"size": len(block)}


def raises(job: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("bad value")


def import_overlaid(job: dict[str, Any]) -> dict[str, Any]:
    from fxscope.worker.touched import touched_files

    module = importlib.import_module(job["module"])
    file = module.__file__
    return {
        "X": module.X,
        "PKG": importlib.import_module(job["module"].split(".")[0]).PKG,
        "line2": linecache.getline(file, 2),
        "touched": touched_files(Path(job["root"])),
    }


def torch_loaded(job: dict[str, Any]) -> dict[str, Any]:
    return {"torch": "torch" in sys.modules}
