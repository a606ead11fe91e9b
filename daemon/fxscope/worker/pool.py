"""A thread-safe pool that runs jobs in children forked from one long-lived zygote process.

The pool never imports torch or user code itself. The zygote starts lazily on the first
:meth:`WorkerPool.submit` (so cached-only runs never spawn it) and is restarted when it dies,
when the preload list changes, or when torch is reinstalled. It speaks to the zygote in the typed
messages of :mod:`.messages`; a job's result is the runner's answer or a fault (see
:class:`WorkerPool`).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fxscope.errors import TorchUnavailableError, WorkerStartError

from . import reaper
from .messages import Answer, Cancel, Done, JobSpec, Ready, Run, Started, Starting, read_reply
from .protocol import ProtocolError, encode, grow_pipe, read_message, write_all
from fxscope.model.fault import Fault
from fxscope.job.torch_env import torch_problem, torch_stamp as _torch_stamp  # (tests replace _torch_stamp)

__all__ = ["JobHandle", "WorkerPool"]

log = logging.getLogger(__name__)

TORCH_CHECK_INTERVAL = 3.0  # seconds between checks that torch was not reinstalled
SHUTDOWN_GRACE = 2.0  # seconds a zygote gets to exit after end of input before SIGKILL
#: Seconds each start-up stage of the zygote (importing torch, each ``preload`` module, the
#: warm-up) may take before it is killed and its jobs fail with a start-up error naming it. The environment
#: variable ``FXSCOPE_WORKER_STARTUP_TIMEOUT`` overrides it.
STARTUP_TIMEOUT = 180.0
#: A job with a ``timeout`` that has no reply this long after its deadline is given up: the
#: zygote failed to enforce it (stopped, wedged), so it is replaced.
WATCHDOG_GRACE = 15.0
WATCHDOG_INTERVAL = 0.5
MAX_ATTEMPTS = 2  # a job whose zygote was replaced because of another job is run again once
#: Set in each zygote's environment (one value per pool): what a killed zygote's tree leaves
#: behind is recognised by it once re-parented to the pool's process.
POOL_ENV = "FXSCOPE_WORKER_POOL"
SWEEP_ROUNDS = 50

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


def _died(message: str, startup: bool | None = None, no_torch: bool | None = None) -> Fault:
    return Fault("crash", message, startup=startup, no_torch=no_torch)


def _startup_timeout() -> float:
    try:
        return float(os.environ.get("FXSCOPE_WORKER_STARTUP_TIMEOUT") or STARTUP_TIMEOUT)
    except ValueError:
        return STARTUP_TIMEOUT


class JobHandle:
    """The future of one submitted job. Obtained from :meth:`WorkerPool.submit`."""

    def __init__(self, pool: WorkerPool, job_id: str, job: dict[str, object], spec: JobSpec, frame: bytes) -> None:
        self.job_id = job_id
        self.job = job
        self.spec = spec
        self.pid: int | None = None
        """Process id of the child running the job, once started."""
        self.duration_ms: float | None = None
        self._pool = weakref.ref(pool)
        self._frame = frame
        self._state = "queued"
        self._attempts = 0  # times sent to a zygote
        self._deadline: float | None = None  # watchdog: monotonic time by which "done" is due
        self._overdue = False
        self.outcome: Fault | Answer | None = None
        """The job's typed result, once done."""
        self._result: dict[str, object] | None = None
        self._event = threading.Event()
        self._callbacks: list[Callable[[JobHandle], Any]] = []
        self._cb_lock = threading.Lock()

    @property
    def state(self) -> str:
        """``"queued"``, ``"running"`` or ``"done"``."""
        return self._state

    def done(self) -> bool:
        """True once a result (or fault) is available."""
        return self._event.is_set()

    def result(self, timeout: float | None = None) -> dict[str, object]:
        """Wait for the runner's dict or a fault dict (:attr:`outcome` as JSON); ``TimeoutError`` if
        not done in time."""
        if not self._event.wait(timeout):
            raise TimeoutError(f"job {self.job_id} not done after {timeout} s")
        assert self._result is not None
        return self._result

    def cancel(self) -> bool:
        """Cancel the job: dequeue it, or kill its child. False if it had already finished."""
        pool = self._pool()
        if pool is None:
            return False
        return pool._cancel(self)

    def cancelled(self) -> bool:
        """True if the job ended as ``{"fault": "cancelled"}``."""
        return self.done() and isinstance(self.outcome, Fault) and self.outcome.kind == "cancelled"

    def add_done_callback(self, fn: Callable[[JobHandle], Any]) -> None:
        """Call ``fn(handle)`` when done (at once, in this thread, if already done).

        Callbacks otherwise run on the pool's reader thread: keep them short.
        """
        with self._cb_lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return
        _call(fn, self)

    def _finish(self, result: Fault | Answer, duration_ms: float | None) -> None:
        with self._cb_lock:
            if self._event.is_set():
                return
            self._state = "done"
            self.outcome = result
            self._result = result.to_json()
            self.duration_ms = duration_ms
            self._frame = b""
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            _call(fn, self)

    def __repr__(self) -> str:
        return f"<JobHandle {self.job_id} {self._state} pid={self.pid}>"


def _call(fn: Callable[[JobHandle], Any], handle: JobHandle) -> None:
    try:
        fn(handle)
    except Exception:  # noqa: BLE001 - a callback must not kill the reader thread
        log.exception("fxscope worker: done callback failed")


Completion = tuple[JobHandle, "Fault | Answer", "float | None"]


class _Zygote:
    """One zygote process and the thread reading its messages."""

    def __init__(self, pool: WorkerPool, command: list[str], env: dict[str, str],
                 log_path: Path | None) -> None:
        self.info: Ready | None = None
        self.ready = threading.Event()
        self.exited = threading.Event()
        self.started_at = time.monotonic()
        self.stage = Starting("")  # what start-up is doing
        self.failure: str | None = None  # why the pool killed it (start-up deadline, watchdog)
        self.no_torch = False  # its interpreter has no supported torch (failure says which and why)
        self._wlock = threading.Lock()
        p2z_r, self._wfd = os.pipe()
        self._rfd, z2p_w = os.pipe()
        grow_pipe(self._wfd)
        grow_pipe(self._rfd)
        command = [*command, "--fd-in", str(p2z_r), "--fd-out", str(z2p_w)]
        out: Any = subprocess.DEVNULL
        try:
            if log_path is not None:
                out = _open_log(log_path)
            self.proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                pass_fds=(p2z_r, z2p_w), env=env, start_new_session=True,
            )
        except BaseException:
            for fd in (self._wfd, self._rfd):
                os.close(fd)
            raise
        finally:
            os.close(p2z_r)
            os.close(z2p_w)
            if isinstance(out, int) and out >= 0:
                os.close(out)
        self._pool = weakref.ref(pool)
        self._thread = threading.Thread(target=self._read_loop, daemon=True,
                                         name=f"fxscope-zygote-{self.proc.pid}")
        self._thread.start()

    def send(self, frame: bytes) -> bool:
        """Write one frame; False if the zygote is gone."""
        with self._wlock:
            if self._wfd < 0:
                return False
            try:
                write_all(self._wfd, frame)
                return True
            except OSError:
                return False

    def close(self, wait: float | None = None) -> None:
        """End the zygote's input (it kills its children and exits); SIGKILL it if it lingers."""
        with self._wlock:
            if self._wfd >= 0:
                os.close(self._wfd)
                self._wfd = -1
        if wait is not None:
            if not self.exited.wait(wait):
                self.kill()
                self.exited.wait(wait)
        else:
            timer = threading.Timer(SHUTDOWN_GRACE, self.kill)
            timer.daemon = True
            timer.start()

    def is_reader_thread(self) -> bool:
        """True when called from this zygote's reader thread (e.g. from a done callback)."""
        return threading.current_thread() is self._thread

    def kill(self) -> None:
        """SIGKILL the zygote (its children die with it)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGKILL)
            except OSError:
                pass

    def _read_loop(self) -> None:
        try:
            while True:
                try:
                    message = read_message(self._rfd)
                except (OSError, ProtocolError) as exc:
                    log.error("fxscope worker: protocol failure: %s", exc)
                    message = None
                if message is None:
                    break
                pool = self._pool()
                if pool is None:
                    break
                pool._on_message(self, message)
        finally:
            os.close(self._rfd)
            self.kill_if_alive_after(SHUTDOWN_GRACE)
            scratch = self.info.scratch if self.info else None
            if scratch:  # normally removed by the zygote; not if it was killed
                shutil.rmtree(scratch, ignore_errors=True)
            pool = self._pool()
            if pool is not None:
                pool._zygote_reaped(self)
            self.exited.set()
            if pool is not None:
                pool._on_exit(self)

    def kill_if_alive_after(self, seconds: float) -> None:
        try:
            self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()

    def doing(self) -> str:
        """What start-up was doing, for messages: ``importing preload 'x'``."""
        stage, module = self.stage.stage, self.stage.module
        if stage == "library" and module:
            return f"importing the workspace's library {module!r}"
        if stage == "preload" and module:
            return f"importing preload {module!r}"
        if stage == "torch":
            return "importing torch"
        if stage == "warm-up":
            return "warming up"
        return "starting"

    def describe_exit(self) -> str:
        if self.failure:
            return self.failure
        code = self.proc.returncode
        if code is None:
            return "worker process died"
        if code < 0:
            try:
                return f"worker process died (killed by {signal.Signals(-code).name})"
            except ValueError:
                return f"worker process died (signal {-code})"
        return f"worker process died (exit code {code})"


def _open_log(path: Path) -> Any:
    """A descriptor appending to the zygote's log (created 0600), or ``DEVNULL`` when it cannot be
    created (a read-only workspace): tracing never depends on its log."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        log.warning("fxscope worker: cannot write %s (%s); running without a worker log", path, exc)
        return subprocess.DEVNULL


_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
_adoption_lock = threading.Lock()
_adopting = 0  # pools of this process with a zygote: while > 0, this process is a subreaper


def _adopt() -> None:
    """One more pool needs this process to adopt what its zygote's tree leaves behind."""
    global _adopting
    with _adoption_lock:
        _adopting += 1
        if _adopting == 1 and not reaper.set_subreaper(True):
            log.debug("fxscope worker: cannot be a child subreaper; a killed worker's detached "
                      "processes are not collected")


def _release() -> None:
    """A pool was closed and swept: stop adopting orphans once no pool needs it."""
    global _adopting
    with _adoption_lock:
        _adopting -= 1
        if _adopting == 0:
            reaper.set_subreaper(False)


@atexit.register
def _close_all() -> None:
    for pool in list(_pools):
        pool.close()


class WorkerPool:
    """Runs job dicts in isolated children of a zygote that imported torch once.

    ``python``: interpreter of the zygote (a workspace's venv may differ from ours).
    ``preload``: modules imported once in the zygote (failures are warnings in :attr:`info`).
    ``libraries``: installed libraries the workspace imports, imported once in the zygote after
    ``preload`` so that each job does not pay for them (failures are no warnings).
    ``env``: extra environment variables for the zygote, over ``os.environ``.
    ``max_workers``: children running at once (default: CPU count); others wait in FIFO order.
    ``log_path``: file receiving the zygote's own stdout/stderr (default: discarded).
    ``sys_path``: directories prepended to the zygote's ``sys.path``, before ``preload`` runs (a
    workspace package in ``preload`` is imported from the workspace, never an installed copy).
    ``root``: the workspace root; :attr:`info` then lists the workspace files that ``preload``
    imported (``preload_files``: root-relative path -> sha256 of the source executed).
    ``sandbox``: run user code in the OS sandbox (:mod:`fxscope.worker.sandbox`); :attr:`info`'s
    ``sandbox`` says what the zygote got.

    Example::

        pool = WorkerPool(max_workers=2)
        h = pool.submit({"runner": "pkg.jobs:run", "timeout": 5})
        h.result()   # e.g. {"value": 1, "output": ""}
        pool.close()
    """

    def __init__(
        self,
        python: str = sys.executable,
        preload: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        max_workers: int | None = None,
        log_path: Path | None = None,
        sys_path: Sequence[str] = (),
        startup_timeout: float | None = None,
        root: str | os.PathLike[str] | None = None,
        libraries: Sequence[str] = (),
        sandbox: bool = True,
    ) -> None:
        self.python = python
        self.sandbox = sandbox
        self.libraries: tuple[str, ...] = tuple(libraries)
        self.startup_timeout = startup_timeout if startup_timeout is not None else _startup_timeout()
        self.preload: tuple[str, ...] = tuple(preload)
        self.env = dict(env or {})
        self.max_workers = max_workers or os.cpu_count() or 1
        if self.max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.log_path = Path(log_path) if log_path is not None else None
        self.sys_path = tuple(str(p) for p in sys_path)
        self.root = None if root is None else str(root)
        self._lock = threading.RLock()
        self._zygote: _Zygote | None = None
        self._queue: deque[JobHandle] = deque()
        self._running: dict[str, JobHandle] = {}
        self._closed = False
        self._next_id = 0
        self._info: Ready | None = None
        self._torch_checked = 0.0
        self._watchdog: threading.Thread | None = None
        self._pool_env = f"{os.getpid()}-{uuid.uuid4().hex}"
        self._live: dict[int, _Zygote] = {}  # zygotes started and not yet reaped, by pid
        self._sessions: set[int] = set()  # every zygote's pid: the session of its jobs
        self._adopting = False
        _pools.add(self)

    # -- public API -----------------------------------------------------------------------------
    @property
    def info(self) -> dict[str, object] | None:
        """The zygote's ``ready`` message as JSON (pid, python, torch_version, preload, ...), or None."""
        return None if self._info is None else self._info.to_json()

    def ensure_started(self, timeout: float | None = None) -> dict[str, object]:
        """Start the zygote now if needed and wait until it is ready; return :attr:`info`."""
        with self._lock:
            self._check_open()
            zygote = self._start_zygote()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not zygote.ready.is_set():
            if zygote.exited.is_set():
                if zygote.failure:
                    raise (TorchUnavailableError if zygote.no_torch else WorkerStartError)(zygote.failure)
                raise WorkerStartError(f"the worker failed to start while {zygote.doing()}: "
                                       f"{zygote.describe_exit()}")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("fxscope worker did not become ready in time")
            zygote.ready.wait(0.05 if left is None else min(0.05, left))
        assert zygote.info is not None
        return zygote.info.to_json()

    def submit(self, job: dict[str, object]) -> JobHandle:
        """Queue ``job`` (a JSON-serialisable dict) and return its :class:`JobHandle`; ``ValueError``
        when a field the worker reads (:class:`JobSpec`) is ill-typed."""
        spec = JobSpec.from_json(job)
        with self._lock:
            self._check_open()
            self._next_id += 1
            job_id = str(self._next_id)
            frame = encode(Run(job_id, job).to_json())  # TypeError if not JSON
            handle = JobHandle(self, job_id, job, spec, frame)
            self._maybe_restart_for_torch()
            self._queue.append(handle)
            done = self._pump()
        self._complete(done)
        return handle

    def restart(self, preload: Sequence[str] | None = None) -> None:
        """Replace the zygote (with a new ``preload`` list if given); running jobs are re-run."""
        with self._lock:
            self._check_open()
            if preload is not None:
                self.preload = tuple(preload)
            old = self._zygote
            if old is None:
                return
            self._zygote = None
            for handle in reversed(list(self._running.values())):
                handle.pid = None
                handle._state = "queued"
                self._queue.appendleft(handle)
            self._running.clear()
            old.close()
            self._start_zygote()

    def close(self) -> None:
        """Kill the zygote and every child; queued and running jobs end as cancelled."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            zygote, self._zygote = self._zygote, None
            pending = [*self._queue, *self._running.values()]
            self._queue.clear()
            self._running.clear()
        if zygote is not None:
            zygote.close(wait=None if zygote.is_reader_thread() else SHUTDOWN_GRACE)
        self._sweep()
        self._maybe_release()
        self._complete([(h, Fault("cancelled"), None) for h in pending])

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals (called with or without the lock, as noted) --------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("WorkerPool is closed")

    def _command(self) -> list[str]:
        cmd = [self.python, "-m", "fxscope.worker.zygote", "--parent-pid", str(os.getpid())]
        for name in self.preload:
            cmd += ["--preload", name]
        for name in self.libraries:
            cmd += ["--library", name]
        for entry in self.sys_path:
            cmd += ["--sys-path", entry]
        if self.root is not None:
            cmd += ["--root", self.root]
        if not self.sandbox:
            cmd.append("--no-sandbox")
        return cmd

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env[POOL_ENV] = self._pool_env
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + path if path else "")
        return env

    def _start_zygote(self) -> _Zygote:
        """Return the live zygote, starting one if needed. Lock held."""
        if self._zygote is None:
            if not self._adopting:  # before the first fork: nothing of the tree may reach init
                self._adopting = True
                _adopt()
            self._zygote = _Zygote(self, self._command(), self._environment(), self.log_path)
            self._live[self._zygote.proc.pid] = self._zygote
            self._sessions.add(self._zygote.proc.pid)
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(target=_watch, args=(weakref.ref(self),),
                                                  name="fxscope-worker-watchdog", daemon=True)
                self._watchdog.start()
        return self._zygote

    def _zygote_reaped(self, zygote: _Zygote) -> None:
        """Reader thread: ``zygote``'s process was reaped; collect what its tree left behind."""
        with self._lock:
            self._live.pop(zygote.proc.pid, None)
        self._sweep()
        self._maybe_release()

    def _sweep(self) -> None:
        """SIGKILL and reap the processes of this pool's zygote trees that were re-parented to this
        process (a killed zygote's jobs and what they detached), round after round: what a killed
        one had forked is re-parented here in turn. Only those pids are ever waited for."""
        if not self._sessions:
            return
        token = f"{POOL_ENV}={self._pool_env}"
        for _ in range(SWEEP_ROUNDS):
            with self._lock:  # no zygote is being started while its pid is not yet excluded
                found = reaper.adopted(token, self._sessions, exclude=set(self._live))
                reaper.kill_all(found)
            if not found:
                return
            reaper.reap(found)

    def _maybe_release(self) -> None:
        with self._lock:
            if not self._closed or self._live or not self._adopting:
                return
            self._adopting = False
        _release()

    def _check_overdue(self) -> bool:
        """Watchdog (lock NOT held): kill a zygote that missed its start-up deadline or a job's
        deadline; its reader thread then fails or re-runs the jobs. False once closed."""
        with self._lock:
            if self._closed:
                return False
            zygote = self._zygote
            if zygote is None or zygote.failure:
                return True
            now = time.monotonic()
            if not zygote.ready.is_set():
                if now - zygote.started_at > self.startup_timeout:
                    zygote.failure = (f"the worker did not start within {self.startup_timeout:g} s "
                                      f"(still {zygote.doing()})")
            else:
                late = [h for h in self._running.values()
                        if h._deadline is not None and now > h._deadline]
                for handle in late:
                    handle._overdue = True
                if late:
                    zygote.failure = ("the worker did not report the job in time and was "
                                      "restarted")
            if zygote.failure is None:
                return True
            level = logging.WARNING if zygote.ready.is_set() else logging.INFO  # start-up: raised
        log.log(level, "fxscope worker: %s", zygote.failure)
        zygote.kill()
        return True

    def _maybe_restart_for_torch(self) -> None:
        """Restart the zygote if torch's files changed since it imported torch. Lock held."""
        now = time.monotonic()
        zygote = self._zygote
        if zygote is None or zygote.info is None:
            return
        if now - self._torch_checked < TORCH_CHECK_INTERVAL:
            return
        self._torch_checked = now
        if _torch_stamp(zygote.info.torch_path) != zygote.info.torch_stamp:
            log.info("fxscope worker: torch changed on disk; restarting the worker")
            self.restart()

    def _pump(self) -> list[Completion]:
        """Start queued jobs while there is room. Lock held."""
        done: list[Completion] = []
        if self._closed or not self._queue:
            return done
        try:
            zygote = self._start_zygote()
        except OSError as exc:
            while self._queue:
                done.append((self._queue.popleft(), _died(f"could not start worker: {exc}"), None))
            return done
        if not zygote.ready.is_set():
            return done
        while self._queue and len(self._running) < self.max_workers:
            handle = self._queue.popleft()
            handle._state = "running"
            handle._attempts += 1
            handle._deadline = _deadline(handle.spec)
            self._running[handle.job_id] = handle
            zygote.send(handle._frame)  # on failure the reader thread sees EOF and reports
        return done

    def _cancel(self, handle: JobHandle) -> bool:
        with self._lock:
            if handle.done():
                return False
            if handle._state == "queued":
                try:
                    self._queue.remove(handle)
                except ValueError:
                    return False
                done: list[Completion] = [(handle, Fault("cancelled"), None)]
            else:
                zygote = self._zygote
                if zygote is not None:
                    zygote.send(encode(Cancel(handle.job_id).to_json()))
                return True
        self._complete(done)
        return True

    def _complete(self, done: list[Completion]) -> None:
        """Deliver results. Lock NOT held (callbacks may call back into the pool)."""
        for handle, result, duration in done:
            handle._finish(result, duration)

    def _on_message(self, zygote: _Zygote, message: dict[str, object]) -> None:
        """Reader thread: one message from ``zygote``, read strictly (a malformed one replaces it)."""
        done: list[Completion] = []
        try:
            reply = read_reply(message)
        except ProtocolError as exc:
            self._protocol_failure(zygote, str(exc))
            return
        problem = None
        with self._lock:
            if zygote is not self._zygote:
                return
            if isinstance(reply, Starting):
                zygote.stage = reply
                zygote.started_at = time.monotonic()  # each stage gets the whole deadline
            elif isinstance(reply, Ready) and (no_torch := torch_problem(reply.to_json())) is not None:
                zygote.failure, zygote.no_torch = no_torch, True  # the environment, not a job's code
                zygote.kill()  # its exit fails the queue with this one start-up error
            elif isinstance(reply, Ready):
                zygote.info = self._info = reply
                for warning in reply.warnings:
                    log.warning("fxscope worker: %s", warning)
                zygote.ready.set()
                self._torch_checked = time.monotonic()
                done = self._pump()
            elif isinstance(reply, Started):
                if (started := self._running.get(reply.job_id)) is not None:
                    started.pid = reply.pid
            else:
                problem = self._on_done(reply, done)
        if problem is not None:
            self._protocol_failure(zygote, problem)
            return
        self._complete(done)

    def _on_done(self, reply: Done, done: list[Completion]) -> str | None:
        """A job's ``done``: its completion appended to ``done``, or why it is inconsistent. Lock held."""
        handle = self._running.get(reply.job_id)
        if handle is not None and handle.pid is not None and reply.pid is not None and reply.pid != handle.pid:
            return f"job {reply.job_id} reported done by process {reply.pid}, but it runs in {handle.pid}"
        if handle is not None:
            del self._running[reply.job_id]
            if handle.pid is None:
                handle.pid = reply.pid
            done.append((handle, reply.result, reply.duration_ms))
        done += self._pump()
        return None

    def _protocol_failure(self, zygote: _Zygote, problem: str) -> None:
        """A malformed or inconsistent reply: the zygote can no longer be trusted; replace it."""
        log.error("fxscope worker: protocol failure: %s", problem)
        with self._lock:
            if zygote.failure is None:
                zygote.failure = f"the worker sent a malformed reply ({problem}) and was restarted"
        zygote.kill()

    def _on_exit(self, zygote: _Zygote) -> None:
        """Reader thread: ``zygote`` is gone."""
        done: list[Completion] = []
        with self._lock:
            if zygote is not self._zygote:
                return
            self._zygote = None
            message = zygote.describe_exit()
            retry = []
            for handle in self._running.values():
                if handle.pid:  # its process group: what the job forked, now that no zygote reaps it
                    try:
                        os.killpg(handle.pid, signal.SIGKILL)
                    except OSError:
                        pass
                if handle._overdue:
                    done.append((handle, _died(f"no result {WATCHDOG_GRACE:g} s after the job's "
                                               f"{handle.spec.timeout:g} s timeout: {message}"), None))
                elif zygote.failure and handle._attempts < MAX_ATTEMPTS and zygote.ready.is_set():
                    handle.pid = None
                    handle._state = "queued"
                    retry.append(handle)
                else:
                    done.append((handle, _died(message), None))
            self._running.clear()
            self._queue.extendleft(reversed(retry))
            if not zygote.ready.is_set():  # died during start-up: do not loop, fail the queue
                where = f"; see {self.log_path}" if self.log_path and not zygote.failure else ""
                if zygote.failure:
                    text = zygote.failure
                else:
                    text = f"the worker failed to start while {zygote.doing()}: {message}{where}"
                while self._queue:
                    done.append((self._queue.popleft(), _died(text, startup=True, no_torch=zygote.no_torch),
                                 None))
            else:
                done += self._pump()
        self._complete(done)


def _deadline(job: JobSpec) -> float | None:
    """When the watchdog gives up on ``job`` (None: it has no timeout)."""
    return time.monotonic() + job.timeout + WATCHDOG_GRACE if job.timeout else None


def _watch(pool_ref: weakref.ref[WorkerPool]) -> None:
    """The watchdog thread of one pool: ends when the pool is closed or collected."""
    while True:
        time.sleep(WATCHDOG_INTERVAL)
        pool = pool_ref()
        if pool is None or not pool._check_overdue():
            return
        del pool
