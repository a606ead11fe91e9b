"""The zygote: imports torch once, then runs each job in a child of its own.

Run as ``python -m fxscope.worker.zygote --fd-in N --fd-out M [--preload MOD] [--sys-path DIR]
[--root DIR]``. The ``--sys-path`` entries (a workspace's ``python-path``) are on ``sys.path`` before
any ``--preload`` runs, so a workspace package is never shadowed by an installed copy; with
``--root``, the ``ready`` message lists the workspace files the preloads imported
(``preload_files``: root-relative path -> sha256 of the source executed).
Requests (:mod:`fxscope.worker.messages`) arrive on ``--fd-in``; replies leave on ``--fd-out``.
The zygote's own stdout/stderr are whatever the parent gave it (``/dev/null`` or a log file); they
are never the protocol.

A job is answered as soon as its child writes a byte on the job's done pipe (after its result file
and the end of its descendants): the kernel's teardown of the child's address space is then off
the critical path. That reply attaches the result file's bytes unparsed (see
:mod:`fxscope.worker.protocol`) and carries, as its ``result``, the fault that stands when they are
no result; the pool parses and checks them once. The byte is only a hint: without a result file
(or with one too large) the job is reported when its process has exited, as a fault when it has
to be, from the result file parsed here. Either way the job's process group is killed, the child
reaped and its directory removed at its exit, and a job is answered once.

A spare child is kept forked ahead of time (after ``ready``, and again as soon as a spare is
taken): it has isolated itself, wired its output and done pipes and recorded the module baseline,
and waits for a job's JSON on a pipe of its own. A ``run`` request hands the job to the spare (its
pid is the one ``started`` names; the job's deadline starts then) when the JSON fits the pipe's
buffer in one write; otherwise, or when no spare is ready, the job's child is forked as before.
Spares are only forked from the zygote, never from a job, and are not orphans to the sweep; a spare
that dies unused is reaped, never reported, and replaced after ``SPARE_RETRY`` seconds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import selectors
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from fxscope.job.warm import TorchInfo, import_torch, prepare

from fxscope.model.fault import Fault, crash_fault

from .child import DEFAULT_RUNNER, JobFiles, OutputBuffer, parse_stack, run_child, run_spare
from .messages import Answer, Done, JobSpec, Ready, Run, Shutdown, Started, Starting, job_result, read_request
from .protocol import (FrameDecoder, ProtocolError, encode, encode_attached, encode_raw, grow_pipe,
                       parse_child_result, write_all)
from . import sandbox
from .reaper import child_pids, load_prctl, set_subreaper

__all__ = ["Zygote", "main"]

DUMP_GRACE = 0.4  # seconds between SIGUSR1 (stack dump) and SIGKILL on timeout
POLL_INTERVAL = 1.0  # reap at least this often while children run, even without SIGCHLD
PARENT_CHECK_INTERVAL = 0.2  # seconds between checks that the pool still exists, during start-up
MAX_RESULT_BYTES = 256 * 1024 * 1024  # a larger result file is a fault, never read
SPARE_RETRY = 1.0  # seconds before a spare that died unused (or could not be forked) is replaced
#: A job larger than its spare's pipe buffer is forked instead: a spare must get its job in one
#: write. The buffer is grown to 1 MB where the system allows (Linux's default pipe-max-size);
#: where its size cannot be read, it is taken to be this (a pipe's usual default).
SPARE_JOB_BYTES = 64 * 1024


@dataclass
class _Child:
    job_id: str
    pid: int
    files: JobFiles
    started: float
    timeout: float | None
    deadline: float | None
    out_fd: int  # read end of the job's stdout/stderr pipe (-1 once closed)
    done_fd: int  # read end of the job's done pipe (-1 once closed)
    output: OutputBuffer
    reason: str | None = None  # "timeout" or "cancelled"
    kill_at: float | None = None
    killed: bool = False
    answered: bool = False  # replied from its done hint; its exit is only reaped


@dataclass
class _Spare:
    """A child forked ahead of its job; it reads the job from ``job_fd``'s pipe."""

    pid: int
    files: JobFiles
    job_fd: int  # write end of the pipe the spare waits on
    out_fd: int  # read ends of its output and done pipes, the job's once handed over
    done_fd: int
    job_bytes: int = SPARE_JOB_BYTES  # the largest job its pipe takes in one write


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class Zygote:
    """The fork server's event loop. Create it after all imports; then call :meth:`loop`."""

    def __init__(self, fd_in: int, fd_out: int, scratch: str) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.scratch = scratch
        self.children: dict[int, _Child] = {}
        self.by_job: dict[str, _Child] = {}
        self.spare: _Spare | None = None
        self._spare_after = 0.0  # monotonic time before which no spare is forked
        self.stopping = False
        self._out: deque[memoryview] = deque()
        self._decoder = FrameDecoder()
        self._counter = 0
        self._prctl = load_prctl()
        # Each job's child is a subreaper of its own: what reaches the zygote was left by a job
        # that ended (was killed before it could kill its descendants).
        set_subreaper(True, self._prctl)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        os.set_blocking(fd_out, False)
        grow_pipe(fd_out)
        self._sel = selectors.DefaultSelector()
        self._sel.register(fd_in, selectors.EVENT_READ, "in")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._writing = False
        signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a dead spare's pipe: EPIPE, never a signal

    # -- output -----------------------------------------------------------------------------
    def send(self, message: Ready | Started | Done) -> None:
        """Queue ``message`` for the parent; never blocks."""
        self.send_frame(encode(message.to_json()))

    def send_frame(self, frame: bytes) -> None:
        self._out.append(memoryview(frame))
        self._flush()

    def _flush(self) -> None:
        out = self._out
        while out:
            try:
                written = os.write(self.fd_out, out[0])
            except BlockingIOError:
                break
            except OSError:  # parent gone
                out.clear()
                self.stopping = True
                break
            if written == len(out[0]):
                out.popleft()
            else:
                out[0] = out[0][written:]
        want = bool(out)
        if want != self._writing:
            if want:
                self._sel.register(self.fd_out, selectors.EVENT_WRITE, "out")
            else:
                self._sel.unregister(self.fd_out)
            self._writing = want

    # -- requests -----------------------------------------------------------------------------
    def _on_term(self, *_: Any) -> None:
        self.stopping = True

    def handle(self, message: dict[str, object]) -> None:
        """Act on one request from the parent."""
        try:
            request = read_request(message)
        except ProtocolError as exc:
            print(f"fxscope zygote: malformed request ignored ({exc}): {str(message)[:200]}", file=sys.stderr)
            return
        if isinstance(request, Run):
            self._start(request.job_id, request.job)
        elif isinstance(request, Shutdown):
            self.stopping = True
        elif (child := self.by_job.get(request.job_id)) is not None and not child.answered and (
                child.reason != "cancelled"):
            child.reason = "cancelled"
            _kill(child.pid)
            child.killed = True

    def _start(self, job_id: str, job: dict[str, object]) -> None:
        if job_id in self.by_job:
            self._reply(job_id, None, 0.0, Fault("crash", "duplicate job id"))
            return
        started = time.monotonic()
        spare = self._hand_over(job)
        if spare is not None:
            pid, files, out_r, done_r = spare.pid, spare.files, spare.out_fd, spare.done_fd
        else:
            files = self._new_files()
            try:
                pid, out_r, done_r, _ = self._spawn(files, job)
            except OSError as exc:
                self._reply(job_id, None, 0.0, Fault("crash", f"fork failed: {exc}"))
                return
        try:
            timeout = JobSpec.from_json(job).timeout
        except ValueError:  # the child reports it
            timeout = None
        child = _Child(job_id, pid, files, started, timeout, started + timeout if timeout else None,
                       out_r, done_r, OutputBuffer())
        self._sel.register(out_r, selectors.EVENT_READ, ("output", pid))
        self._sel.register(done_r, selectors.EVENT_READ, ("done", pid))
        self.children[pid] = child
        self.by_job[job_id] = child
        self.send(Started(job_id, pid))

    def _new_files(self) -> JobFiles:
        self._counter += 1
        return JobFiles(os.path.join(self.scratch, f"job{self._counter}"))

    def _spawn(self, files: JobFiles, job: dict[str, object] | None) -> tuple[int, int, int, int]:
        """Create ``files``' directory and the child's pipes, then fork the child running ``job``
        (a spare without one). Returns its pid, the read ends of its output and done pipes and, for
        a spare, the write end of its job pipe (else -1). On OSError nothing is left behind."""
        parent = os.getpid()
        fds: list[int] = []
        try:
            os.mkdir(files.directory, 0o700)
            out_r, out_w = os.pipe()
            fds += (out_r, out_w)
            done_r, done_w = os.pipe()
            fds += (done_r, done_w)
            job_r, job_w = os.pipe() if job is None else (-1, -1)
            fds += (job_r, job_w)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except OSError:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)
            shutil.rmtree(files.directory, ignore_errors=True)
            raise
        if pid == 0:  # the child: run_child and run_spare always end in os._exit
            try:
                close = [*self._own_fds(), out_r, done_r]
                if job is None:
                    run_spare(files, [*close, job_w], parent, self._prctl, output_fd=out_w,
                              done_fd=done_w, job_fd=job_r)
                else:
                    run_child(job, files, close, parent, self._prctl, output_fd=out_w, done_fd=done_w)
            finally:
                os._exit(70)
        for fd in (out_w, done_w, job_r):
            if fd >= 0:
                os.close(fd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.set_blocking(out_r, False)
        os.set_blocking(done_r, False)
        return pid, out_r, done_r, job_w

    def _ensure_spare(self) -> None:
        """Fork a spare when none is ready (not while stopping, nor before ``_spare_after``)."""
        if self.spare is not None or self.stopping or time.monotonic() < self._spare_after:
            return
        files = self._new_files()
        try:
            pid, out_r, done_r, job_w = self._spawn(files, None)
        except OSError as exc:
            print(f"fxscope zygote: cannot fork a spare: {exc}", file=sys.stderr)
            self._spare_after = time.monotonic() + SPARE_RETRY
            return
        os.set_blocking(job_w, False)
        capacity = grow_pipe(job_w) or SPARE_JOB_BYTES
        self.spare = _Spare(pid, files, job_w, out_r, done_r, job_bytes=capacity)

    def _hand_over(self, job: dict[str, object]) -> _Spare | None:
        """Give ``job`` to the spare, now the job's process; None (and no spare) when there is no
        spare, when the job is too large for its pipe or when it cannot take it (dead: EPIPE)."""
        spare = self.spare
        if spare is None:
            return None
        data = json.dumps(job, separators=(",", ":")).encode("utf-8")
        if len(data) > spare.job_bytes:
            return None
        self.spare = None
        try:
            written = os.write(spare.job_fd, data)
        except OSError:
            written = -1
        if written != len(data):  # never a part of a job: the spare dies instead
            self._drop_spare(spare, kill=True)
            return None
        os.close(spare.job_fd)
        spare.job_fd = -1
        return spare

    def _drop_spare(self, spare: _Spare, kill: bool) -> None:
        """Forget ``spare`` (dead, or killed here); its exit is reaped as a non-job child's."""
        if kill:
            _kill(spare.pid)
        for fd in (spare.job_fd, spare.out_fd, spare.done_fd):
            if fd >= 0:
                os.close(fd)
        spare.job_fd = spare.out_fd = spare.done_fd = -1
        shutil.rmtree(spare.files.directory, ignore_errors=True)
        if self.spare is spare:
            self.spare = None
        self._spare_after = time.monotonic() + SPARE_RETRY

    def _own_fds(self) -> list[int]:
        """Descriptors a new child must close: the protocol, other jobs' output and done pipes and
        the spare's pipes."""
        fds = [self.fd_in, self.fd_out, self._wake_r, self._wake_w]
        for c in self.children.values():
            fds += [fd for fd in (c.out_fd, c.done_fd) if fd >= 0]
        if self.spare is not None:
            fds += [fd for fd in (self.spare.job_fd, self.spare.out_fd, self.spare.done_fd) if fd >= 0]
        try:
            fds.append(self._sel.fileno())
        except (AttributeError, ValueError):
            pass
        return fds

    # -- children -----------------------------------------------------------------------------
    def _check_deadlines(self) -> float | None:
        """Signal overdue children; return seconds until the next deadline (or ``None``)."""
        now = time.monotonic()
        nearest: float | None = None
        for child in self.children.values():
            if child.killed:
                continue
            if child.kill_at is not None:
                if now >= child.kill_at:
                    _kill(child.pid)
                    child.killed = True
                    continue
                due = child.kill_at
            elif child.deadline is not None:
                if now >= child.deadline:
                    child.reason = "timeout"
                    _kill(child.pid, signal.SIGUSR1)  # faulthandler dumps every thread
                    child.kill_at = now + DUMP_GRACE
                    due = child.kill_at
                else:
                    due = child.deadline
            else:
                continue
            nearest = due if nearest is None else min(nearest, due)
        if nearest is None:
            return None
        return max(0.0, nearest - now)

    def reap(self) -> None:
        """Collect every exited child and report it. A job's process group is killed while its
        exited leader still holds the group id, so nothing the job forked outlives it; orphans
        re-parented to this subreaper (``setsid`` escapes of a job that was killed) are killed too.
        A spare that died is forgotten (replaced later), never reported."""
        sweep = False
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if info is None or not info.si_pid:
                break
            pid = info.si_pid
            child = self.children.get(pid)
            spare = self.spare if self.spare is not None and self.spare.pid == pid else None
            if child is not None or spare is not None:
                _kill(pid)  # the exited leader is a zombie: the group id cannot be reused
            try:
                _, status, usage = os.wait4(pid, 0)
            except ChildProcessError:
                continue
            except InterruptedError:
                continue
            sweep = True  # a job ended, or an orphan died and may have left orphans of its own
            if spare is not None:
                self._drop_spare(spare, kill=False)
            if child is not None:
                self.children.pop(pid, None)
                self.by_job.pop(child.job_id, None)
                self._finish(child, status, usage.ru_utime + usage.ru_stime)
        if sweep:
            self.kill_orphans()

    def kill_orphans(self) -> int:
        """SIGKILL every child process of the zygote that is neither a job nor the spare; return
        how many. They are re-parented orphans of jobs that ended: a running job's orphans are
        re-parented to its own child, a subreaper too. They are reaped by :meth:`reap`."""
        count = 0
        spare = self.spare.pid if self.spare is not None else None
        for pid in child_pids():
            if pid not in self.children and pid != spare:
                try:
                    os.kill(pid, signal.SIGKILL)
                    count += 1
                except OSError:
                    pass
        return count

    def _read_output(self, child: _Child, budget: int = 16) -> None:
        """Move what the job wrote into its bounded buffer; close the pipe at end of file."""
        for _ in range(budget):
            try:
                data = os.read(child.out_fd, 1 << 16)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                self._close_output(child)
                return
            child.output.feed(data)

    def _close_output(self, child: _Child) -> None:
        child.out_fd = self._close_fd(child.out_fd)

    def _close_done(self, child: _Child) -> None:
        child.done_fd = self._close_fd(child.done_fd)

    def _close_fd(self, fd: int) -> int:
        """Unregister and close ``fd`` (if open); return -1."""
        if fd >= 0:
            try:
                self._sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            os.close(fd)
        return -1

    def _on_done_hint(self, child: _Child) -> None:
        """The job's done pipe is readable: its child says its result is written (or exited, or
        lies). One hint per job, then the pipe is closed. A result file is answered now, attached
        for the pool to check, and the job's process group killed (an honest child is exiting
        anyway); without one the job is reported at its exit."""
        try:
            hinted = bool(os.read(child.done_fd, 1))
        except (BlockingIOError, InterruptedError):  # a spurious wake-up
            return
        except OSError:
            hinted = False
        self._close_done(child)
        if not hinted or child.killed or child.reason is not None:
            return  # exited without a word, or killed: decided at its exit
        raw, problem = _read_result(child.files.result)
        if not raw or problem:
            return
        if child.out_fd >= 0:
            self._read_output(child, budget=256)  # flushed before the result was written
            self._close_output(child)
        child.answered = child.killed = True
        _kill(child.pid)  # a lying child ends here; its exit is reaped by reap()
        duration = (time.monotonic() - child.started) * 1000.0
        # the pool appends why, if the attached bytes are no result
        fault = _with_stack(Fault("crash", "the job's process ended but ", exit_code=0), child.files,
                            child.output.text())
        self.send_frame(encode_attached(Done(child.job_id, child.pid, round(duration, 3), fault).to_json(), raw))

    def _finish(self, child: _Child, status: int, cpu_s: float | None = None) -> None:
        duration = (time.monotonic() - child.started) * 1000.0
        files = child.files
        try:
            self._close_done(child)
            if child.answered:
                return
            if child.out_fd >= 0:
                self._read_output(child, budget=256)  # what is left in the pipe, bounded
                self._close_output(child)
            if child.reason == "cancelled":
                self._reply(child.job_id, child.pid, duration, Fault("cancelled"))
                return
            output = child.output.text()
            raw, result, problem = _load_result(files.result)
            if result is not None:
                self._reply_result(child.job_id, child.pid, duration, raw, result, output)
                return
            if child.reason == "timeout":  # cpu_s: busy (a loop) or waiting (a lock, a starved CPU)?
                fault = Fault("timeout", timeout=child.timeout, cpu_s=None if cpu_s is None else round(cpu_s, 3))
            else:
                fault = crash_fault(status, problem)
            self._reply(child.job_id, child.pid, duration, _with_stack(fault, files, output))
        finally:
            shutil.rmtree(files.directory, ignore_errors=True)

    def _reply_result(self, job_id: str, pid: int | None, duration: float, raw: bytes,
                      result: dict[str, object], output: str) -> None:
        """Reply with a job's checked ``result``: its own bytes (``raw``, which parsed to
        ``result``) with ``output`` added as the last key, so the often large result (a 2,000-node
        graph is ~450 KB) is not encoded again; re-encoded when the bytes are not plain ASCII JSON."""
        body = raw.strip()
        if not result or not body.isascii() or not body.startswith(b"{") or not body.endswith(b"}"):
            result["output"] = output
            self._reply(job_id, pid, duration, job_result(result))
            return
        head = json.dumps({"op": "done", "job_id": job_id, "pid": pid, "duration_ms": round(duration, 3)},
                          separators=(",", ":")).encode("utf-8")
        tail = json.dumps(output, separators=(",", ":")).encode("utf-8")
        self.send_frame(encode_raw(b"".join((head[:-1], b',"result":', body[:-1], b',"output":', tail, b"}}"))))

    def _reply(self, job_id: str, pid: int | None, duration: float, result: Fault | Answer) -> None:
        self.send(Done(job_id, pid, round(duration, 3), result))

    # -- loop -------------------------------------------------------------------------------
    def loop(self) -> None:
        """Serve requests until shutdown, parent EOF or SIGTERM; then kill every child."""
        try:
            while not self.stopping:
                self._ensure_spare()
                timeout = self._check_deadlines()
                if self.children:
                    timeout = POLL_INTERVAL if timeout is None else min(timeout, POLL_INTERVAL)
                if self.spare is None:  # the next attempt to fork one
                    wait = max(0.0, self._spare_after - time.monotonic())
                    timeout = wait if timeout is None else min(timeout, wait)
                for key, _ in self._sel.select(timeout):
                    if key.data == "in":
                        self._read_input()
                    elif key.data == "wake":
                        _drain(self._wake_r)
                    elif key.data == "out":
                        self._flush()
                    else:
                        self._on_job_fd(*key.data)
                self.reap()
        finally:
            self.kill_all()

    def _on_job_fd(self, kind: str, pid: int) -> None:
        child = self.children.get(pid)
        if child is None:  # reaped earlier in this round
            return
        if kind == "output" and child.out_fd >= 0:
            self._read_output(child)
        elif kind == "done" and child.done_fd >= 0:
            self._on_done_hint(child)

    def _read_input(self) -> None:
        try:
            data = os.read(self.fd_in, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.stopping = True
            return
        try:
            messages = self._decoder.feed(data)
        except ProtocolError:
            traceback.print_exc()
            self.stopping = True
            return
        for message in messages:
            self.handle(message)

    def kill_all(self) -> None:
        """SIGKILL every child with its process group, the spare and every orphan, reap them and
        remove the scratch directory."""
        if self.spare is not None:
            spare = self.spare
            self._drop_spare(spare, kill=True)  # its process group with it
            try:
                os.waitpid(spare.pid, 0)
            except OSError:
                pass
        for child in self.children.values():
            _kill(child.pid)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
        for child in self.children.values():
            self._close_output(child)
            self._close_done(child)
        self.children.clear()
        self.by_job.clear()
        for _ in range(50):  # orphans may leave orphans of their own: sweep until none is left
            killed = self.kill_orphans()
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except (ChildProcessError, InterruptedError):
                    pid = 0
                if not pid:
                    break
            if not killed and not child_pids():
                break
            time.sleep(0.01)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _with_stack(fault: Fault, files: JobFiles, output: str) -> Fault:
    """``fault`` with the job's last stack dump and its ``output``."""
    stack, threads = parse_stack(_read_text(files.stack))
    return replace(fault, stack=stack, threads=threads, output=output)


def _read_result(path: str) -> tuple[bytes, str | None]:
    """The bytes of a job's result file (empty when it is missing), or why they are not read.
    Bounded even when a process of the job still writes to it."""
    try:
        with open(path, "rb") as fh:
            too_large = os.fstat(fh.fileno()).st_size > MAX_RESULT_BYTES
            raw = b"" if too_large else fh.read(MAX_RESULT_BYTES + 1)
    except OSError:
        return b"", None
    if too_large or len(raw) > MAX_RESULT_BYTES:
        return b"", f"its result was larger than {MAX_RESULT_BYTES} bytes"
    return raw, None


def _load_result(path: str) -> tuple[bytes, dict[str, object] | None, str | None]:
    """The bytes a job's process wrote and the result they parse to, checked; never spliced
    unparsed into a reply. ``(raw, None, why)`` when it is missing, too large or malformed."""
    raw, problem = _read_result(path)
    if problem:
        return raw, None, problem
    result, problem = parse_child_result(raw)
    return raw, result, problem


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass


def _announce(fd: int, stage: str, module: str | None = None) -> None:
    """Tell the pool what start-up is doing, so a start-up that never ends can be named."""
    try:
        write_all(fd, encode(Starting(stage, module).to_json()))
    except OSError:
        pass


def _die_with_parent(parent: int, stop: threading.Event) -> threading.Thread:
    """Exit as soon as the pool's process is gone, even while an import blocks the main thread
    (``preload`` of a module that never returns). Stopped before the first fork."""

    def watch() -> None:
        while not stop.wait(PARENT_CHECK_INTERVAL):
            if os.getppid() != parent:
                os._exit(1)

    thread = threading.Thread(target=watch, name="fxscope-parent-watch", daemon=True)
    thread.start()
    return thread


def _explain(exc: BaseException) -> str | None:
    """A preload's failure that is the sandbox refusing it, in the sandbox's words."""
    denial = sandbox.denial_of(exc)
    return denial.message() if denial is not None else None


def _sandbox_zygote(scratch: str) -> None:
    """Restrict the zygote before it imports workspace code: writes only under ``scratch`` (its
    own temporary files and library caches go to ``scratch/zygote``; each job's child narrows this
    to its job's directory), no TCP; no bytecode written next to sources."""
    own = os.path.join(scratch, "zygote")
    os.mkdir(own, 0o700)
    sandbox.redirect_caches(own)
    sandbox.restrict_writes([scratch])
    sandbox.record_attempts()  # a preload the sandbox stops is said to be stopped by it
    if sandbox.status().kind == "landlock":
        sys.dont_write_bytecode = True  # __pycache__ in the workspace or site-packages: refused anyway


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fxscope.worker.zygote")
    parser.add_argument("--fd-in", type=int, required=True)
    parser.add_argument("--fd-out", type=int, required=True)
    parser.add_argument("--preload", action="append", default=[])
    parser.add_argument("--library", action="append", default=[],
                        help="an installed library the workspace imports, imported once before any fork "
                             "(a failure is no warning: a job that needs it reports it)")
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--root", default=None,
                        help="workspace root: list the workspace files that preloads import")
    parser.add_argument("--no-torch", action="store_true", help="do not import torch")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run user code without the OS sandbox (the workspace turned it off)")
    parser.add_argument("--parent-pid", type=int, default=0,
                        help="exit when this process is gone (default: the parent at start)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Start the zygote: import torch and preloads, report ready, serve jobs, exit."""
    args = _parse_args(argv)
    os.set_inheritable(args.fd_in, False)
    os.set_inheritable(args.fd_out, False)
    if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
        del sys.path[0]  # `-m` put the launcher's cwd first; user code must not come from there
    sys.path[:0] = args.sys_path
    started = time.monotonic()
    parent = args.parent_pid or os.getppid()
    # Before any thread exists (a user namespace can only be entered single-threaded).
    if args.no_sandbox:
        sandbox.off("off by request (sandbox = false in [tool.fxscope], or --no-sandbox)")
    else:
        sandbox.begin()
    stop_watch = threading.Event()
    watcher = _die_with_parent(parent, stop_watch)
    torch = None
    if not args.no_torch:
        _announce(args.fd_out, "torch")
        torch = import_torch()
    scratch = tempfile.mkdtemp(prefix="fxscope-zygote-")
    if sandbox.status().on:  # from here on, no workspace code may write outside the scratch directory
        _sandbox_zygote(scratch)
    warmed = prepare(torch, args.preload, args.library, args.root, DEFAULT_RUNNER.partition(":")[0],
                     explain=_explain, announce=lambda stage, module: _announce(args.fd_out, stage, module))
    stop_watch.set()
    watcher.join()
    if os.getppid() != parent:
        os._exit(1)
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()  # keep inherited objects out of the children's collections (less copy-on-write)
    zygote = Zygote(args.fd_in, args.fd_out, scratch)
    torch = torch or TorchInfo()
    zygote.send(Ready(os.getpid(), platform.python_version(), sys.executable, torch.version, torch.path,
                      torch.stamp, torch.error, warmed.preload, warmed.libraries, dict(warmed.preload_files),
                      warmed.warnings, scratch, sandbox.status(), round((time.monotonic() - started) * 1000.0, 1)))
    try:
        zygote.loop()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)


if __name__ == "__main__":
    main()
