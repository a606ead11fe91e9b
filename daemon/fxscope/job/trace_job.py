"""The trace job: what the engine asks the worker's default runner to do, as a typed value.

The pool carries any runner's job as a JSON dict; :meth:`TraceJob.to_json` gives the trace runner's
(the keys the pool itself reads, ``root``, ``overlays``, ``sys_path``, ``timeout`` and
``memory_limit_mb``, included) and :meth:`TraceJob.from_json` reads it back in the child.

>>> from pathlib import Path
>>> from fxscope.project.config import Config
>>> from fxscope.project.discovery import Target
>>> job = TraceJob("/ws", Config(root=Path("/ws")), Target("m.py::M", "class", "m.py", 3, "m", "M"),
...                fallback_file="/ws/m.py", fallback_line=3, timeout=30.0)
>>> again = TraceJob.from_json(job.to_json())
>>> (again.target.id, again.fallback_file, again.fallback_line, again.timeout, again.config.root)
('m.py::M', '/ws/m.py', 3, 30.0, PosixPath('/ws'))
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fxscope.model.recipe import Recipe
from fxscope.project.config import Config
from fxscope.project.discovery import Target

__all__ = ["PHASES", "TraceJob"]

#: What a job runs of its target's analyses: ``all`` of them; the ``fx`` phase (those on the meta
#: device: the tracer); the ``analyses`` phase (those on real CPU tensors: compile, export), which
#: follows an fx phase of the same target and builds the model as that phase did.
PHASES = ("all", "fx", "analyses")


@dataclass(frozen=True)
class TraceJob:
    """Trace ``target`` of the workspace at ``root`` under ``config``.

    ``fallback_file``/``fallback_line``: where an import or build failure is reported when no
    workspace frame is involved (the class line, or a factory's table in pyproject.toml);
    ``overlays``: absolute path -> unsaved buffer text; ``timeout`` (seconds) and
    ``memory_limit_mb``: the child's limits; ``sys_path``: prepended to the child's ``sys.path``;
    ``phase``: which of the target's analyses run (one of :data:`PHASES`); ``build``: for the
    ``analyses`` phase of a class, the recipe its fx phase built it from (None: its defaults)."""

    root: str
    config: Config
    target: Target
    fallback_file: str = ""
    fallback_line: int = 1
    overlays: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    memory_limit_mb: int | None = None
    sys_path: tuple[str, ...] = ()
    phase: str = "all"
    build: Recipe | None = None

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"phase {self.phase!r} is not one of {PHASES}")

    def to_json(self) -> dict[str, Any]:
        """The job as the pool sends it (JSON)."""
        return {
            "root": self.root,
            "config": self.config.to_json(),
            "target": self.target.to_json(),
            "overlays": dict(self.overlays),
            "timeout": self.timeout,
            "memory_limit_mb": self.memory_limit_mb,
            "sys_path": list(self.sys_path),
            "fallback": {"file": self.fallback_file, "line": self.fallback_line},
            "phase": self.phase,
            "build": None if self.build is None else self.build.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceJob:
        """Read a job written by :meth:`to_json` (a missing fallback is the target's class line)."""
        root = str(data["root"])
        target = Target.from_json(dict(data["target"]))
        fallback = data.get("fallback") or {}
        default_file = os.path.join(root, target.file) if target.file else root
        return cls(
            root=root,
            config=Config.from_json(data["config"]),
            target=target,
            fallback_file=str(fallback.get("file") or default_file),
            fallback_line=int(fallback.get("line") or target.line or 1),
            overlays=dict(data.get("overlays") or {}),
            timeout=None if data.get("timeout") is None else float(data["timeout"]),
            memory_limit_mb=data.get("memory_limit_mb"),
            sys_path=tuple(str(p) for p in data.get("sys_path") or ()),
            phase=str(data.get("phase") or "all"),
            build=Recipe.from_json(data["build"]) if data.get("build") is not None else None,
        )
