"""Child subreapers and the processes they adopt (Linux; no-ops elsewhere).

A process that is a child subreaper (``PR_SET_CHILD_SUBREAPER``) receives the orphans of its
descendants (a double fork, a ``setsid`` escape) instead of init. The worker uses three levels:
each job's child adopts what its model code detaches while the job runs, the zygote adopts what
outlives a job that was killed, and the process that owns the pool adopts what outlives a zygote
that was killed. Each level kills what it adopted.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection

__all__ = [
    "adopted",
    "child_pids",
    "kill_all",
    "kill_descendants",
    "load_prctl",
    "reap",
    "set_subreaper",
]

_PR_SET_CHILD_SUBREAPER = 36
# Bound at import: a job's child calls kill_descendants() after model code that may have
# monkey-patched builtins or os (the fault zoo replaces builtins.len).
_open = open
_listdir = os.listdir
_kill = os.kill
_waitpid = os.waitpid
_getpid = os.getpid
_sleep = time.sleep
_prctl_lock = threading.Lock()
_prctl: Callable[..., int] | None = None
_prctl_loaded = False


def load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (``None`` off Linux or when it cannot be loaded)."""
    global _prctl, _prctl_loaded
    with _prctl_lock:
        if not _prctl_loaded:
            _prctl_loaded = True
            if sys.platform.startswith("linux"):
                try:
                    import ctypes

                    _prctl = ctypes.CDLL(None, use_errno=True).prctl
                except (ImportError, OSError, AttributeError):
                    _prctl = None
        return _prctl


def set_subreaper(on: bool = True, prctl: Callable[..., int] | None = None) -> bool:
    """Make this process a child subreaper (or stop being one); True if the kernel agreed."""
    prctl = prctl or load_prctl()
    if prctl is None:
        return False
    return prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0


def child_pids(pid: int | None = None) -> list[int]:
    """Process ids whose parent is ``pid`` (default: this process), zombies included; empty where
    ``/proc`` is unavailable."""
    me = _getpid() if pid is None else pid
    pids: list[int] = []
    try:
        tasks = _listdir(f"/proc/{me}/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with _open(f"/proc/{me}/task/{tid}/children") as fh:
                pids += [int(p) for p in fh.read().split()]
        except FileNotFoundError:
            continue  # the thread ended meanwhile
        except (OSError, ValueError):
            return _child_pids_by_scan(me)
    return pids


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None."""
    try:
        with _open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _child_pids_by_scan(me: int) -> list[int]:
    pids = []
    for name in _listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields and fields[1:2] == [str(me)]:
                pids.append(int(name))
    return pids


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, parents before their children."""
    found: list[int] = []
    frontier = [root]
    while frontier:
        kids = child_pids(frontier.pop())
        found += kids
        frontier += kids
    return found


def kill_descendants(rounds: int = 100) -> None:
    """SIGKILL every descendant of this process until none is left alive, reaping its own children
    (killed orphans' children are re-parented to a subreaper). For a job's child at its end: what
    its model code started, detached or not, ends with it. Call it only where every child is to
    die and be reaped."""
    for _ in range(rounds):
        live = [pid for pid in _descendants(_getpid()) if _alive(pid)]
        for pid in live:
            try:
                _kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                pid, _ = _waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            except InterruptedError:
                continue
            if not pid:
                break
        if not live:
            return
        _sleep(0.002)


def _alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and len(fields) > 0 and fields[0] not in ("Z", "X")


def adopted(env_token: str, sessions: Collection[int], exclude: Collection[int]) -> list[int]:
    """Children of this process that were re-parented to it from a pool's zygote tree: those whose
    environment holds ``env_token`` (``NAME=value``, set only in that pool's zygotes) or whose session
    is one of ``sessions`` (the zygotes' own), except ``exclude`` (the live zygotes themselves)."""
    needle = env_token.encode()
    found = []
    for pid in child_pids():
        if pid in exclude:
            continue
        fields = _stat_fields(pid)
        if fields is None:
            continue
        try:
            session = int(fields[3])
        except (IndexError, ValueError):
            session = -1
        if session in sessions:
            found.append(pid)
            continue
        try:
            with _open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


def kill_all(pids: Collection[int]) -> None:
    """SIGKILL each of ``pids``."""
    for pid in pids:
        try:
            _kill(pid, signal.SIGKILL)
        except OSError:
            pass


def reap(pids: Collection[int], timeout: float = 5.0) -> list[int]:
    """Wait for exactly ``pids`` (children of this process), never for any other child: a
    ``subprocess.Popen`` elsewhere in the process must still collect its own. Returns those not
    reaped within ``timeout``."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while left:
        for pid in list(left):
            try:
                done, _ = _waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            except InterruptedError:
                continue
            if done:
                left.discard(pid)
        if left:
            if time.monotonic() > deadline:
                break
            _sleep(0.005)
    return sorted(left)
