"""What a job's child process does between ``os.fork()`` in the zygote and ``os._exit()``.

The child isolates itself (process group, default signal handlers, output captured to a pipe,
stack dumps on SIGUSR1 and fatal signals), records the module baseline, then sets the job's memory
and recursion limits, points temporary files at the job's own directory (``TMPDIR``, removed with
it), runs the job's runner and writes a JSON result file atomically. A spare
(:func:`run_spare`) does everything up to the baseline before it has a job, then blocks until the
zygote hands one over on a pipe of its own. Every exception, ``SystemExit`` included, becomes a
fault dict; the child never returns to the zygote's loop. Once the result is written and its
descendants are killed, it writes one byte on the job's done pipe, so the zygote can answer
before the exit's teardown.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import resource
import signal
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from fxscope.job import touched
from fxscope.job.overlay import install_overlays
from fxscope.model.fault import Frame, ThreadStack, exception_fault, parse_faulthandler

from . import sandbox
from .messages import JobSpec
from .reaper import kill_descendants, set_subreaper

__all__ = [
    "DEFAULT_RUNNER",
    "JobFiles",
    "OUTPUT_LIMIT",
    "OutputBuffer",
    "parse_stack",
    "run_child",
    "run_spare",
]

DEFAULT_RUNNER = "fxscope.worker.runner:run_trace_job"
OUTPUT_LIMIT = 64 * 1024
DEFAULT_RECURSION_LIMIT = 4000
STACK_LIMIT = 64 * 1024 * 1024
_THIS_FILE = os.path.normcase(os.path.abspath(__file__))
_EXIT_NO_RESULT = 70
_os_exit = os._exit  # the real one: user code's os._exit is wrapped to dump its stack first
_os_write = os.write  # bound at import: user code may patch os


@dataclass(frozen=True)
class JobFiles:
    """Per-job files in the zygote's scratch directory."""

    directory: str

    @property
    def result(self) -> str:
        return os.path.join(self.directory, "result.json")

    @property
    def stack(self) -> str:
        return os.path.join(self.directory, "stack.txt")


class OutputBuffer:
    """A job's captured stdout/stderr, bounded in memory: the first quarter of ``limit`` bytes and
    the last three quarters are kept, whatever the job writes.

    >>> out = OutputBuffer(limit=8)
    >>> out.feed(b"ab"); out.text()
    'ab'
    >>> out.feed(b"cdefghijkl"); out.text()
    'ab\\n... [4 bytes omitted] ...\\nghijkl'
    """

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self._head_limit = limit // 4
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Append ``data`` (dropping the middle once over the limit)."""
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    def text(self) -> str:
        """The kept output, with a marker where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        omitted = self.total - len(self._head) - len(tail)
        middle = f"\n... [{omitted} bytes omitted] ...\n".encode() if omitted > 0 else b""
        return (bytes(self._head) + middle + tail).decode("utf-8", errors="replace")


def parse_stack(text: str) -> tuple[tuple[Frame, ...], tuple[ThreadStack, ...]]:
    """The last stack dump in ``text`` (a job's stack file), without the worker's own frames."""
    return parse_faulthandler(text, _THIS_FILE, _exit_with_stack.__name__)


def _resolve_runner(spec: str) -> Callable[[dict[str, object]], object]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"runner must be 'module:function', got {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _set_limits(job: JobSpec) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft != resource.RLIM_INFINITY and soft < STACK_LIMIT:
        target = STACK_LIMIT if hard == resource.RLIM_INFINITY else min(STACK_LIMIT, hard)
        try:
            resource.setrlimit(resource.RLIMIT_STACK, (target, hard))
        except (ValueError, OSError):
            pass
    sys.setrecursionlimit(job.recursion_limit or DEFAULT_RECURSION_LIMIT)
    limit_mb = job.memory_limit_mb
    if limit_mb:
        vm_bytes = 0
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    vm_bytes = int(line.split()[1]) * 1024
                    break
        limit = vm_bytes + int(limit_mb) * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _isolate(close_fds: Iterable[int], parent_pid: int, prctl: Callable[..., int] | None) -> None:
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    for fd in close_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the zygote
        # What the model detaches (setsid, double fork) is re-parented to this job, never to the
        # zygote, so the zygote's sweep cannot reach the escapes of a job still running.
        set_subreaper(True, prctl)
    if os.getppid() != parent_pid:
        os._exit(_EXIT_NO_RESULT)
    try:
        os.setpgid(0, 0)
    except OSError:
        pass


def _capture_output(files: JobFiles, output_fd: int) -> Any:
    """fd 1 and 2 -> ``output_fd`` (a pipe the zygote drains into a bounded buffer, so output
    never grows on disk); faulthandler dumps -> the job's stack file."""
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    if output_fd not in (1, 2):
        os.close(output_fd)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # a TextIOWrapper's, unless replaced
        try:
            if reconfigure is not None:
                reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass
    stack_file = open(files.stack, "w")  # noqa: SIM115 - must outlive this function
    faulthandler.enable(file=stack_file, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True, chain=False)
    global _stack_file
    _stack_file = stack_file
    os._exit = _exit_with_stack
    return stack_file


_stack_file: Any = None


def _exit_with_stack(status: int) -> NoReturn:
    """``os._exit`` as seen by user code: record where it was called, then exit."""
    try:
        if _stack_file is not None:
            faulthandler.dump_traceback(file=_stack_file, all_threads=False)
            _stack_file.flush()
    except BaseException:  # noqa: BLE001 - exiting matters more than the stack
        pass
    _os_exit(status)


def _write_result(files: JobFiles, result: Mapping[str, object]) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    data = json.dumps(result, separators=(",", ":")).encode("ascii")
    tmp = files.result + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, files.result)


def _run(job: dict[str, object], files: JobFiles) -> dict[str, object]:
    spec = JobSpec.from_json(job)
    _set_limits(spec)
    sandbox.redirect_caches(files.directory)  # TMPDIR (and caches, sandboxed): the job's directory, removed with it
    sys.path[:0] = spec.sys_path
    if spec.root:
        os.chdir(spec.root)
    if spec.overlays:
        install_overlays(spec.overlays)
    runner = _resolve_runner(spec.runner or DEFAULT_RUNNER)
    result = runner(job)
    if not isinstance(result, dict):
        raise TypeError(f"runner returned {type(result).__name__}, expected dict")
    return result


def run_child(
    job: dict[str, object],
    files: JobFiles,
    close_fds: Iterable[int],
    parent_pid: int,
    prctl: Callable[..., int] | None = None,
    *,
    output_fd: int,
    done_fd: int,
) -> NoReturn:
    """Run ``job`` in this freshly forked process and exit; never returns. The result file holds
    the runner's dict (or a fault) without ``output``: the zygote adds what it read from
    ``output_fd``, the write end of the job's output pipe. Once the result is written and every
    descendant is gone, one byte on ``done_fd`` tells the zygote before the exit."""
    _serve(lambda: job, files, close_fds, parent_pid, prctl, output_fd, done_fd)


def run_spare(
    files: JobFiles,
    close_fds: Iterable[int],
    parent_pid: int,
    prctl: Callable[..., int] | None = None,
    *,
    output_fd: int,
    done_fd: int,
    job_fd: int,
) -> NoReturn:
    """As :func:`run_child`, for a job not known yet: prepare, then read the job's JSON from
    ``job_fd`` up to its end of file and run it. Exits without a result when the pipe ends empty
    (the zygote took no job from this spare)."""
    _serve(lambda: _receive_job(job_fd), files, close_fds, parent_pid, prctl, output_fd, done_fd)


def _receive_job(fd: int) -> dict[str, object] | None:
    """The job the zygote wrote on ``fd`` before closing it, or None when it wrote nothing."""
    chunks = []
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    if not chunks:
        return None
    job = json.loads(b"".join(chunks))
    if not isinstance(job, dict):
        raise TypeError("the job is not an object")
    return job


def _serve(
    get_job: Callable[[], dict[str, object] | None],
    files: JobFiles,
    close_fds: Iterable[int],
    parent_pid: int,
    prctl: Callable[..., int] | None,
    output_fd: int,
    done_fd: int,
) -> NoReturn:
    code = _EXIT_NO_RESULT
    try:
        _isolate(close_fds, parent_pid, prctl)
        _capture_output(files, output_fd)
        sandbox.enter_job(files.directory)  # writes only in the job's directory from here on
        touched.record_baseline()
        job = get_job()
        if job is not None:
            _finish_job(job, files)
            code = 0
    except BaseException:  # noqa: BLE001 - reported by the zygote as a crash
        pass
    finally:
        try:
            kill_descendants()  # the job's processes end with it, detached or not
            if code == 0:
                _announce_done(done_fd)
        finally:
            _os_exit(code)


def _finish_job(job: dict[str, object], files: JobFiles) -> None:
    """Run ``job`` and write its result file: the runner's dict or a fault."""
    try:
        result = _run(job, files)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, MemoryError... all are faults
        result = exception_fault(exc, _THIS_FILE).to_json()
    try:
        _write_result(files, result)
    except BaseException as exc:  # noqa: BLE001 - e.g. a result that is not JSON
        fault = exception_fault(exc, _THIS_FILE)
        _write_result(files, replace(fault, message=f"could not serialise the result: {fault.message or ''}").to_json())


def _announce_done(fd: int) -> None:
    """One byte on the done pipe: the result is written and the job's processes are gone."""
    try:
        _os_write(fd, b"\0")
    except OSError:  # user code closed it: the zygote answers at the exit
        pass
