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
    from fxscope.job.touched import touched_files

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


def _job_dir() -> str:
    from fxscope.worker import child

    return os.path.dirname(child._stack_file.name)


def _done_fd() -> int:
    """The write end of the job's done pipe: the one pipe this process writes besides fd 1 and 2."""
    for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # the listing's own descriptor
            continue
        if fd > 2 and target.startswith("pipe:"):
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                flags = int(fh.read().split("flags:")[1].split()[0], 8)
            if flags & os.O_ACCMODE == os.O_WRONLY:
                return fd
    raise AssertionError("no done pipe")


def answer_then_linger(job: dict[str, Any]) -> dict[str, Any]:
    """Write a valid result and the done byte itself, then keep running: answered, then killed."""
    print("before-answer", flush=True)
    Path(_job_dir(), "result.json").write_text('{"value":"early","pid":%d}' % os.getpid())
    os.write(_done_fd(), b"\0")
    while True:
        time.sleep(0.05)


def done_byte_first(job: dict[str, Any]) -> dict[str, Any]:
    """Claim to be done before any result exists, then return one: the real result is reported."""
    os.write(_done_fd(), b"\0")
    time.sleep(0.2)
    return {"value": "late"}


def invalid_result_then_exit(job: dict[str, Any]) -> dict[str, Any]:
    """Write a result file that is not JSON (with the done byte when asked), then exit 0."""
    Path(_job_dir(), "result.json").write_text("{not json")
    if job.get("done_byte"):
        os.write(_done_fd(), b"\0")
    os._exit(0)


def leave_traces(job: dict[str, Any]) -> dict[str, Any]:
    """Report what an earlier job may have left in this process, then leave the same."""
    found = [name for name in ("FXSCOPE_TEST_LEFT",) if name in os.environ]
    found += [name for name in ("fxscope_test_left",) if name in sys.modules]
    os.environ["FXSCOPE_TEST_LEFT"] = "1"
    sys.modules["fxscope_test_left"] = sys
    return {"found": found}
