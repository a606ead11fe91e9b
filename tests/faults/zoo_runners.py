"""Hostile job runners for tests/test_hardening_worker.py; they run in the worker's forked children.

Each one attacks the worker the way careless or hostile model code would: forging the result,
leaving processes behind, flooding its output, exiting with a message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any


def forge_other_job(job: dict[str, Any]) -> dict[str, Any]:
    """Patch ``json.dumps`` so the result bytes claim to be the victim job's result."""
    victim = job["victim"]
    real = json.dumps

    def dumps(obj: Any, *args: Any, **kwargs: Any) -> str:
        forged = {"value": "FORGED", "output": ""}
        return real({"value": "mine"}) + f',"job_id":"{victim}","result":' + real(forged)

    json.dumps = dumps
    return {"value": "mine"}


def claim_cancelled(job: dict[str, Any]) -> dict[str, Any]:
    """A result that pretends the job was cancelled (a cancelled target drops out of a report)."""
    return {"fault": "cancelled"}


def not_an_object(job: dict[str, Any]) -> dict[str, Any]:
    json.dumps = lambda *a, **k: "[1, 2, 3]"
    return {"value": 1}


def spawn_and_return(job: dict[str, Any]) -> dict[str, Any]:
    """Leave a forked child, a Popen child and a setsid double-forked daemon behind."""
    pids = []
    forked = os.fork()
    if forked == 0:
        time.sleep(300)
        os._exit(0)
    pids.append(forked)
    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    pids.append(popen.pid)
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        second = os.fork()
        if second == 0:
            os.close(read)
            os.write(write, str(os.getpid()).encode())
            os.close(write)
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    os.close(write)
    os.waitpid(first, 0)
    pids.append(int(os.read(read, 64)))
    os.close(read)
    if job.get("pids_file"):
        with open(job["pids_file"], "w") as fh:
            fh.write(" ".join(map(str, pids)))
    return {"value": "spawned", "pids": pids}


def spam_stdout(job: dict[str, Any]) -> dict[str, Any]:
    """Write ``megabytes`` of output as fast as possible (forever when not given)."""
    chunk = b"x" * 65535 + b"\n"
    left = job.get("megabytes")
    written = 0
    while left is None or written < left * 1024 * 1024:
        os.write(1, chunk)
        written += len(chunk)
    print("LAST-LINE", flush=True)
    return {"written": written}


def exit_with_message(job: dict[str, Any]) -> dict[str, Any]:
    raise SystemExit("the config file is missing")


def sleep_forever(job: dict[str, Any]) -> dict[str, Any]:
    while True:
        time.sleep(0.05)


def echo(job: dict[str, Any]) -> dict[str, Any]:
    time.sleep(float(job.get("delay") or 0))
    return {"value": job.get("value")}


def spawn_then_sleep(job: dict[str, Any]) -> dict[str, Any]:
    """Fork a child and start a Popen child (same process group), record them, then sleep."""
    forked = os.fork()
    if forked == 0:
        time.sleep(300)
        os._exit(0)
    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(job["pids_file"] + ".tmp", "w") as fh:
        fh.write(f"{forked} {popen.pid}")
    os.replace(job["pids_file"] + ".tmp", job["pids_file"])
    time.sleep(300)
    return {}


def escape_until_released(job: dict[str, Any]) -> dict[str, Any]:
    """Detach a long sleeper (fork, ``setsid``, fork again: it escapes the job's process group),
    record its pid in ``pids_file``, then keep running until the file ``release`` exists."""
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            os.close(read)
            os.write(write, str(os.getpid()).encode())
            os.close(write)
            time.sleep(300)
        os._exit(0)
    os.close(write)
    os.waitpid(first, 0)
    sleeper = os.read(read, 64).decode()
    os.close(read)
    with open(job["pids_file"] + ".tmp", "w") as fh:
        fh.write(sleeper)
    os.replace(job["pids_file"] + ".tmp", job["pids_file"])
    while not os.path.exists(job["release"]):
        time.sleep(0.02)
    return {"value": "released"}
