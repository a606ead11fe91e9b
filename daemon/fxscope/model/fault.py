"""How a job ended when it gave no result: a typed :class:`Fault` and the frames it carries.

The worker writes faults (its zygote decides ``timeout``, ``crash`` and ``cancelled``; a job's own
process reports ``exception`` and ``exit``); :meth:`Fault.from_json` reads one strictly and raises
``ValueError`` on any ill-typed field, so a fault a job forged is rejected, never half-trusted.

>>> f = Fault.from_json({"fault": "exit", "exit_code": 2, "traceback": [{"file": "/m.py", "line": 3, "name": "f"}]})
>>> f.kind, f.exit_code, f.traceback[0].line
('exit', 2, 3)
>>> Fault("crash", message="killed").to_json()
{'fault': 'crash', 'signal': None, 'signal_name': None, 'exit_code': None, 'message': 'killed'}
>>> crash_fault(139 << 8).exit_code
139
"""

from __future__ import annotations

import os
import re
import signal as _signal
import traceback as _traceback
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar

__all__ = ["CHILD_FAULTS", "FAULTS", "Fault", "Frame", "ThreadStack", "crash_fault", "exception_fault",
           "parse_faulthandler"]

#: Fault kinds a job's own process may report; the others (timeout, crash, cancelled) are decided
#: by the zygote alone, so a job can never claim to have been cancelled.
CHILD_FAULTS = frozenset({"exception", "exit"})
#: Every fault kind.
FAULTS = CHILD_FAULTS | {"timeout", "crash", "cancelled"}
MAX_FRAMES = 100
_T = TypeVar("_T")


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback or stack dump (``line`` is None where the dump did not know it)."""

    file: str
    line: int | None
    name: str

    def to_json(self) -> dict[str, str | int | None]:
        return {"file": self.file, "line": self.line, "name": self.name}

    @classmethod
    def from_json(cls, value: object) -> Frame:
        if not isinstance(value, Mapping):
            raise ValueError("a frame is not an object")
        file, line, name = value.get("file"), value.get("line"), value.get("name")
        if not isinstance(file, str) or not isinstance(name, str) or not (line is None or _is_int(line)):
            raise ValueError("a frame's file, line or name is ill-typed")
        return cls(file, line, name)


@dataclass(frozen=True)
class ThreadStack:
    """The stack of a thread other than the one that received the signal."""

    thread: str
    stack: tuple[Frame, ...]


@dataclass(frozen=True)
class Fault:
    """A job's end without a result: its ``kind`` (one of :data:`FAULTS`) and what is known of it.
    ``None`` fields are unknown; a crash always says its ``signal``, ``signal_name`` and
    ``exit_code``, known or not."""

    kind: str
    message: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    signal_name: str | None = None
    timeout: float | None = None
    cpu_s: float | None = None
    exception_type: str | None = None
    traceback: tuple[Frame, ...] | None = None
    frames_omitted: int | None = None
    stack: tuple[Frame, ...] | None = None
    threads: tuple[ThreadStack, ...] = ()
    output: str | None = None
    startup: bool | None = None
    no_torch: bool | None = None

    def to_json(self) -> dict[str, object]:
        """The fault's wire form (``{"fault": kind, ...}``)."""
        out: dict[str, object] = {"fault": self.kind}
        if self.kind == "crash":
            out.update(signal=self.signal, signal_name=self.signal_name, exit_code=self.exit_code)
        fields = {"exit_code": self.exit_code, "type": self.exception_type, "message": self.message,
                  "timeout": self.timeout, "cpu_s": self.cpu_s, "frames_omitted": self.frames_omitted,
                  "output": self.output, "startup": self.startup, "no_torch": self.no_torch}
        out.update((k, v) for k, v in fields.items() if v is not None and k not in out)
        if self.kind == "timeout" and self.timeout is None:
            out["timeout"] = None
        if self.traceback is not None:
            out["traceback"] = [f.to_json() for f in self.traceback]
        if self.stack is not None:
            out["stack"] = [f.to_json() for f in self.stack]
        if self.threads:
            out["threads"] = [{"thread": t.thread, "stack": [f.to_json() for f in t.stack]} for t in self.threads]
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Fault:
        """Read a fault strictly: ``ValueError`` names the first field that is not as written."""
        kind = raw.get("fault")
        if not isinstance(kind, str) or kind not in FAULTS:  # a list is unhashable: no `in` before the type
            raise ValueError(f"unknown fault {kind!r}")
        return cls(
            kind, _opt(raw, "message", str), _opt(raw, "exit_code", int), _opt(raw, "signal", int),
            _opt(raw, "signal_name", str), _number(raw, "timeout"), _number(raw, "cpu_s"), _opt(raw, "type", str),
            _frames(raw.get("traceback")), _opt(raw, "frames_omitted", int), _frames(raw.get("stack")),
            _threads(raw.get("threads")), _opt(raw, "output", str), _opt(raw, "startup", bool),
            _opt(raw, "no_torch", bool))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt(raw: Mapping[str, object], key: str, kind: type[_T]) -> _T | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise ValueError(f"{key} is not a {kind.__name__}")


def _number(raw: Mapping[str, object], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key} is not a number")
    return float(value)


def _frames(value: object) -> tuple[Frame, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError("frames are not a list")
    return tuple(Frame.from_json(v) for v in value)


def _threads(value: object) -> tuple[ThreadStack, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, Mapping) and isinstance(t.get("thread"), str)
                                              for t in value):
        raise ValueError("threads are not a list of thread stacks")
    return tuple(ThreadStack(str(t["thread"]), _frames(t.get("stack")) or ()) for t in value)


def crash_fault(status: int, problem: str | None = None) -> Fault:
    """The fault of a job's process that ended with wait ``status`` without a result (``problem``
    says why its result was unusable, if it wrote one)."""
    if problem and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return Fault("crash", exit_code=0, message=f"the job's process ended but {problem}")
    sig = code = None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name: str | None = _signal.Signals(sig).name
        except ValueError:
            name = None
        hint = " (out of memory?)" if sig == _signal.SIGKILL else ""
        message = f"the job's process was killed by {name or sig}{hint}"
        return Fault("crash", _join(message, problem), signal=sig, signal_name=name)
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return Fault("crash", _join(f"the job's process exited with code {code} without a result", problem),
                     exit_code=code)
    return Fault("crash", _join(f"the job's process ended with status {status}", problem))


def _join(message: str, problem: str | None) -> str:
    return f"{message}; {problem}" if problem else message


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except BaseException:  # noqa: BLE001 - a broken __str__ must not lose the fault
        return f"<unprintable {type(value).__name__}>"


def _after(frames: list[Frame], own_file: str | None) -> list[Frame]:
    """Drop the worker's own frames: keep what follows the last frame in ``own_file``."""
    if own_file:
        for i in range(len(frames) - 1, -1, -1):
            if os.path.normcase(os.path.abspath(frames[i].file)) == own_file:
                return frames[i + 1 :]
    return frames


def exception_fault(exc: BaseException, own_file: str | None = None) -> Fault:
    """``exc`` as an ``exception`` fault (``exit`` for ``SystemExit``); its traceback keeps what
    follows the last frame in ``own_file`` (the runner's caller), at most :data:`MAX_FRAMES`."""
    frames, omitted = _tb_frames(exc.__traceback__, own_file)
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or isinstance(code, int):
            return Fault("exit", exit_code=0 if code is None else code, traceback=frames, frames_omitted=omitted)
        return Fault("exit", _safe_str(code), exit_code=1, traceback=frames, frames_omitted=omitted)
    name = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", None):
        name = f"{module}.{name}"
    return Fault("exception", _safe_str(exc), exception_type=name, traceback=frames, frames_omitted=omitted)


def _tb_frames(tb: TracebackType | None, own_file: str | None) -> tuple[tuple[Frame, ...], int | None]:
    frames = _after([Frame(f.filename, f.lineno, f.name) for f in _traceback.extract_tb(tb)
                     if not f.filename.startswith("<frozen importlib")], own_file)
    if len(frames) <= MAX_FRAMES:
        return tuple(frames), None
    keep = MAX_FRAMES // 2
    return tuple(frames[:keep] + frames[-keep:]), len(frames) - 2 * keep


_THREAD_RE = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)\b.*\(most recent call first\):")
_STACK_RE = re.compile(r"^Stack \(most recent call first\):")
_FRAME_RE = re.compile(r'^\s+File "(.*)", line (\d+|\?+) in (.*?)\s*$')


def parse_faulthandler(text: str, own_file: str | None = None, wrapper: str | None = None
                       ) -> tuple[tuple[Frame, ...], tuple[ThreadStack, ...]]:
    """The last ``faulthandler`` dump in ``text``: the stack of the thread that received the signal
    and the other threads', outermost first. Frames up to the last in ``own_file`` are dropped, and
    innermost frames of the function ``wrapper`` in ``own_file`` (an ``os._exit`` wrapper).

    >>> parse_faulthandler('Current thread 0x1 (most recent call first):\\n  File "/m.py", line 3 in f\\n')
    ((Frame(file='/m.py', line=3, name='f'),), ())
    """
    blocks: list[tuple[str, bool, list[Frame]]] = []
    for line in text.splitlines():
        m = _THREAD_RE.match(line)
        if m:
            if m.group(1) == "Current thread" and any(b[1] for b in blocks):
                blocks = []  # a later dump starts
            blocks.append((m.group(2), m.group(1) == "Current thread", []))
            continue
        if _STACK_RE.match(line):
            blocks = [("", True, [])]
            continue
        m = _FRAME_RE.match(line)
        if m and blocks:
            blocks[-1][2].append(Frame(m.group(1), int(m.group(2)) if m.group(2).isdigit() else None, m.group(3)))
    stack: tuple[Frame, ...] = ()
    threads: list[ThreadStack] = []
    for ident, current, frames in blocks:
        frames = list(reversed(frames))
        while frames and frames[-1].name == wrapper and os.path.normcase(os.path.abspath(frames[-1].file)) == own_file:
            frames.pop()
        kept = tuple(_after(frames, own_file))
        if current:
            stack = kept
        else:
            threads.append(ThreadStack(ident, kept))
    return stack, tuple(threads)
