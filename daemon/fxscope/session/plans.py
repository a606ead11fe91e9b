"""What the scheduler and the workspace exchange: a planned round, the control a running round
has over its jobs, the scheduler's view of its workspace, and the scheduler's counts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["RoundControl", "RoundPlan", "RoundSource", "SchedulerCounts"]


class RoundControl(Protocol):
    """What a running round asks the scheduler: is a target's job stale (a newer snapshot needs
    it, or the round was cancelled), that a target's fx phase answered (its analyses phase runs
    next), and that a target finished (delivered or cancelled)."""

    generation: int

    def stale(self, target_id: str) -> bool: ...

    def finished(self, target_id: str, outcome: str = "clean") -> None: ...

    def answered(self, target_id: str) -> None: ...

    def priority(self, target_id: str) -> int: ...


@dataclass(frozen=True)
class RoundPlan:
    """One round as its source planned it: the snapshot ``generation`` it computes for, every
    target id it knows, the ids it wants run, and ``run(ids, control)``, which the scheduler
    calls on the round's own thread."""

    generation: int
    known: frozenset[str]
    wanted: frozenset[str]
    run: Callable[[tuple[str, ...], RoundControl], None]


class RoundSource(Protocol):
    """The scheduler's view of its workspace."""

    def plan(self, files: frozenset[str], everything: bool) -> RoundPlan | None:
        """A round for the changes to ``files`` (all targets when ``everything``), planned on
        the current snapshot; None when nothing can run."""

    def stored_generation(self, target_id: str) -> int:
        """The generation of the stored result of ``target_id`` (-1 when there is none)."""

    def affected(self, file: str) -> frozenset[str]:
        """The ids of the targets an edit of ``file`` can change."""

    def tier(self, target_id: str) -> int:
        """How soon ``target_id`` runs when no edit asked for it: 0 for a target of an open file,
        1 for one in a file that an open file imports, 2 for the rest of the workspace."""


@dataclass(frozen=True)
class SchedulerCounts:
    """Known targets with a current result (``done``), ``running`` and ``queued`` (requested
    again after a cancelled job) ones, the rounds started (``checks``) and the last round's
    wall time."""

    total: int
    done: int
    running: int
    queued: int
    checks: int
    last_duration_ms: float | None
