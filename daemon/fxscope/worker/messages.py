"""The typed messages between the worker pool and its zygote, framed by :mod:`.protocol`.

Requests (pool -> zygote): :class:`Run`, :class:`Cancel`, :class:`Shutdown`. Replies (zygote ->
pool): :class:`Starting` per start-up stage, :class:`Ready` once, :class:`Started` per fork and
:class:`Done` per job, whose ``result`` is a :class:`~fxscope.model.fault.Fault` or the runner's
:class:`Answer`. Each is read strictly at the boundary (:func:`read_request`, :func:`read_reply`):
a message that is not as written raises :class:`~.protocol.ProtocolError`. A job itself is a JSON
object for its runner; the worker reads only its :class:`JobSpec`.

>>> read_reply({"op": "done", "job_id": "1", "pid": 7, "duration_ms": 1.0, "result": []})
Traceback (most recent call last):
  ...
fxscope.worker.protocol.ProtocolError: done: result is not an object
>>> read_reply(Done("1", 7, 1.0, Answer({"value": 1}, "hi")).to_json()).result
Answer(value={'value': 1}, output='hi')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TypeVar

from fxscope.model.fault import Fault
from fxscope.model.sandbox import SandboxStatus

from .protocol import ProtocolError

__all__ = ["Answer", "Cancel", "Done", "JobSpec", "Ready", "Run", "Shutdown", "Started", "Starting",
           "job_result", "read_reply", "read_request"]

_T = TypeVar("_T")


def _get(raw: Mapping[str, object], key: str, kind: type[_T], optional: bool = True) -> _T | None:
    """``raw[key]`` if it is a ``kind`` (an int or a float for ``float``; never a bool for a number),
    None if absent and ``optional``; else ``ValueError``."""
    value = raw.get(key)
    if value is None and optional:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise ValueError(f"{key} is not as written")


def _str_map(raw: Mapping[str, object], key: str) -> dict[str, str | None]:
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                              for k, v in value.items()):
        raise ValueError(f"{key} is not a map of strings")
    return value


@dataclass(frozen=True)
class JobSpec:
    """What the worker reads of a job: its runner (``module:function``), ``timeout`` (seconds),
    limits, ``sys_path`` entries, the directory to run in (``root``) and unsaved buffers
    (``overlays``: absolute path -> text). ``ValueError`` when a field is not as written."""

    runner: str | None = None
    timeout: float | None = None
    recursion_limit: int | None = None
    memory_limit_mb: int | None = None
    sys_path: tuple[str, ...] = ()
    root: str | None = None
    overlays: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, job: Mapping[str, object]) -> JobSpec:
        overlays = _str_map(job, "overlays")
        return cls(_get(job, "runner", str) or None, _get(job, "timeout", float) or None,
                   _get(job, "recursion_limit", int), _get(job, "memory_limit_mb", int),
                   tuple(str(p) for p in _get(job, "sys_path", list) or ()), _get(job, "root", str) or None,
                   {k: v for k, v in overlays.items() if v is not None})


@dataclass(frozen=True)
class Run:
    """Run ``job`` (a JSON object for its runner) as ``job_id``."""

    job_id: str
    job: dict[str, object]

    def to_json(self) -> dict[str, object]:
        return {"op": "run", "job_id": self.job_id, "job": self.job}


@dataclass(frozen=True)
class Cancel:
    """Kill the child of ``job_id`` (answered as a ``cancelled`` fault)."""

    job_id: str

    def to_json(self) -> dict[str, object]:
        return {"op": "cancel", "job_id": self.job_id}


@dataclass(frozen=True)
class Shutdown:
    """Kill every child and exit."""

    def to_json(self) -> dict[str, object]:
        return {"op": "shutdown"}


def read_request(raw: Mapping[str, object]) -> Run | Cancel | Shutdown:
    """The request ``raw`` is; :class:`ProtocolError` when it is none."""
    op, job_id, job = raw.get("op"), raw.get("job_id"), raw.get("job")
    if op == "shutdown":
        return Shutdown()
    if op == "cancel" and isinstance(job_id, str):
        return Cancel(job_id)
    if op == "run" and isinstance(job_id, str) and isinstance(job, dict):
        return Run(job_id, job)
    raise ProtocolError(f"malformed request {op!r}")


@dataclass(frozen=True)
class Starting:
    """Start-up is at ``stage`` (``torch``, ``preload``, ``library``, ``warm-up``), on ``module``."""

    stage: str
    module: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"op": "starting", "stage": self.stage, "module": self.module}


@dataclass(frozen=True)
class Ready:
    """The zygote is ready: what it runs on, what its preloads gave, its sandbox."""

    pid: int
    python: str
    executable: str
    torch_version: str | None
    torch_path: str | None
    torch_stamp: int | None
    torch_error: str | None
    preload: dict[str, str | None]  # module -> None, or why it failed
    libraries: dict[str, str | None]
    preload_files: dict[str, str | None]  # root-relative path -> sha256 of the source executed
    warnings: tuple[str, ...]
    scratch: str
    sandbox: SandboxStatus | None
    startup_ms: float

    def to_json(self) -> dict[str, object]:
        return {"op": "ready", **{f.name: getattr(self, f.name) for f in fields(self)},
                "warnings": list(self.warnings), "sandbox": self.sandbox.to_json() if self.sandbox else None}

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Ready:
        warnings = _get(raw, "warnings", list) or []
        if not all(isinstance(w, str) for w in warnings):
            raise ValueError("warnings are not strings")
        sandbox = _get(raw, "sandbox", dict)
        return cls(
            _get(raw, "pid", int, optional=False) or 0, _get(raw, "python", str) or "",
            _get(raw, "executable", str) or "", _get(raw, "torch_version", str), _get(raw, "torch_path", str),
            _get(raw, "torch_stamp", int), _get(raw, "torch_error", str), _str_map(raw, "preload"),
            _str_map(raw, "libraries"), _str_map(raw, "preload_files"), tuple(warnings), _get(raw, "scratch", str) or "",
            SandboxStatus.from_json(sandbox), _get(raw, "startup_ms", float) or 0.0)


@dataclass(frozen=True)
class Started:
    """``job_id`` runs in process ``pid``."""

    job_id: str
    pid: int

    def to_json(self) -> dict[str, object]:
        return {"op": "started", "job_id": self.job_id, "pid": self.pid}


@dataclass(frozen=True)
class Answer:
    """What a job's runner returned (``value``, a JSON object) and what the job printed."""

    value: dict[str, object]
    output: str

    def to_json(self) -> dict[str, object]:
        return {**self.value, "output": self.output}


@dataclass(frozen=True)
class Done:
    """``job_id`` ended in process ``pid`` (None: never started) after ``duration_ms``."""

    job_id: str
    pid: int | None
    duration_ms: float | None
    result: Fault | Answer

    def to_json(self) -> dict[str, object]:
        return {"op": "done", "job_id": self.job_id, "pid": self.pid, "duration_ms": self.duration_ms,
                "result": self.result.to_json()}

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Done:
        result = raw.get("result")
        if not isinstance(result, dict):
            raise ValueError("result is not an object")
        return cls(_get(raw, "job_id", str, optional=False) or "", _get(raw, "pid", int),
                   _get(raw, "duration_ms", float), job_result(result))


def job_result(raw: dict[str, object]) -> Fault | Answer:
    """A job's result with its ``output`` (``ValueError`` when malformed): the fault it is, or the
    runner's answer."""
    if "fault" in raw:
        return Fault.from_json(raw)
    output = raw.pop("output", "")
    if not isinstance(output, str):
        raise ValueError("output is not a string")
    return Answer(raw, output)


def read_reply(raw: Mapping[str, object]) -> Starting | Ready | Started | Done:
    """The reply ``raw`` is; :class:`ProtocolError` when it is none."""
    op = raw.get("op")
    try:
        if op == "starting":
            return Starting(_get(raw, "stage", str) or "", _get(raw, "module", str))
        if op == "ready":
            return Ready.from_json(raw)
        if op == "started":
            pid = _get(raw, "pid", int, optional=False) or 0
            if pid <= 0:
                raise ValueError("pid is not a process id")
            return Started(_get(raw, "job_id", str, optional=False) or "", pid)
        if op == "done":
            return Done.from_json(raw)
    except ValueError as exc:
        raise ProtocolError(f"{op}: {exc}") from None
    raise ProtocolError(f"unknown op {op!r}")
