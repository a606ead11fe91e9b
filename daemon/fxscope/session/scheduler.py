"""When to re-check what: the debounce, rounds, cancellation and idleness of one workspace.

The scheduler knows target ids, files and snapshot generations, never the engine or the store: a
:class:`~fxscope.session.plans.RoundSource` (the Workspace) plans each round and runs it, and tells the scheduler which
generation of a target's result it holds. It is the only code of the session that starts
threads; time comes from an injected :class:`~fxscope.session.clock.Clock`, so tests drive a
debounce by advancing a manual clock.

The rules: an edit after a quiet period runs at once (leading edge); an edit inside a burst waits
for the debounce (trailing edge), so a burst runs at most twice. Every edit marks the targets it
affects as requested for the newest generation, which makes their running jobs stale at once
(the round kills them). A target whose job was killed runs again once the rounds end.

The order: rounds overlap (a start-up check, an edit, a new configuration), and their jobs share
the engine's workers in the order of :meth:`Scheduler.priority`: the targets of an edit first (they
preempt background jobs), then by the source's tier: targets of open files, then of the files
those import, then the rest of the workspace in the background. Every round reports progress;
rounds back to back form one busy period (until nothing runs, is planned or debounces), whose
last event carries one :class:`~fxscope.session.data.RunSummary` of what ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fxscope.session.clock import Clock, Timer
from fxscope.session.data import ProgressEvent, RunSummary
from fxscope.session.plans import RoundPlan, RoundSource, SchedulerCounts

__all__ = ["Scheduler"]


class _Control:
    def __init__(self, scheduler: Scheduler, generation: int) -> None:
        self.generation = generation
        self._scheduler = scheduler

    def stale(self, target_id: str) -> bool:
        return self._scheduler.is_stale(target_id, self.generation)

    def finished(self, target_id: str, outcome: str = "clean") -> None:
        self._scheduler.finished(target_id, self.generation, outcome)

    def answered(self, target_id: str) -> None:
        self._scheduler.answered(target_id, self.generation)

    def priority(self, target_id: str) -> int:
        return self._scheduler.priority(target_id)


class Scheduler:
    """Debounced rounds over one :class:`RoundSource` (see the module docstring).

    ``on_progress`` gets a :class:`~fxscope.session.data.ProgressEvent` per round start and per
    finished target; ``on_error`` the exception a round ended with. Both are called without the
    scheduler's lock held, from any thread."""

    def __init__(self, source: RoundSource, clock: Clock, *, debounce_s: float, enabled: bool = True,
                 on_progress: Callable[[ProgressEvent], None] | None = None,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        self._source = source
        self._clock = clock
        self._debounce_s = debounce_s
        self._enabled = enabled
        self._on_progress = on_progress or (lambda ev: None)
        self._on_error = on_error or (lambda exc: None)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: set[str] = set()  # changed files awaiting the debounce
        self._everything = False
        self._planning: list[frozenset[str] | None] = []  # files of the rounds being planned (None: all)
        self._timer: Timer | None = None
        self._last_edit: float | None = None
        self._requested: dict[str, int] = {}  # target id -> newest generation it must reflect
        self._running: dict[str, int] = {}  # target id -> generation of its running round
        self._attempted: dict[str, int] = {}  # target id -> generation of the last round that ran it
        self._known: frozenset[str] = frozenset()
        self._urgent: dict[str, int] = {}  # target id -> generation of the edit that asked for it
        # the busy period (rounds back to back, until nothing is planned, debouncing or running):
        self._period: set[str] = set()  # every target its rounds ran
        self._finished: set[str] = set()  # those whose last job finished (not superseded since)
        self._answered: dict[str, int] = {}  # target id -> generation whose fx phase answered (analyses run)
        self._outcomes: dict[str, tuple[int, str]] = {}  # target id -> generation, how its last job finished
        self._rounds = self._checks = 0
        self._started: float | None = None
        self._last_duration_ms: float | None = None
        self._cancel_below = 0
        self._spared: frozenset[str] = frozenset()  # targets of edits the last cancel let run
        self._closed = False
        self._error: Exception | None = None

    # -- configuration ---------------------------------------------------------------------------
    def configure(self, *, debounce_s: float, enabled: bool) -> None:
        """New settings (a disabled scheduler keeps its state and starts nothing)."""
        with self._lock:
            self._debounce_s, self._enabled = debounce_s, enabled

    # -- what needs running ----------------------------------------------------------------------
    def changed(self, file: str, affected: frozenset[str], generation: int, *,
                urgent: bool | frozenset[str] = True) -> None:
        """``file`` changed in the snapshot ``generation``: the ``affected`` targets must reflect
        it (their running jobs become stale now); run them at once after a quiet period, else
        after the debounce. The ``urgent`` ones (True: all; an edit in the editor: the edited
        file's own) run before any background job, preempting them; the others keep the order
        of :meth:`priority`'s tiers (a package's ``__init__`` makes every target depend on the
        modules it imports: an edit there must not put the whole repository first)."""
        first = affected if urgent is True else frozenset() if urgent is False else urgent
        with self._lock:
            self._pending.add(file)
            for tid in affected:
                self._requested[tid] = max(self._requested.get(tid, -1), generation)
                if tid in first:
                    self._urgent[tid] = max(self._urgent.get(tid, -1), generation)
            now = self._clock.now()
            quiet = self._last_edit is None or now - self._last_edit >= self._debounce_s
            self._last_edit = now
            self._schedule(0.0 if quiet and self._timer is None else self._debounce_s)

    def request_all(self, generation: int, *, at_once: bool = False) -> None:
        """Every target must be checked again (start, a new configuration): a round now (in
        this thread when ``at_once``)."""
        with self._lock:
            self._everything = True
            for tid in self._known:
                self._requested[tid] = max(self._requested.get(tid, -1), generation)
            if not at_once:
                self._schedule(0.0)
        if at_once:
            self.flush()

    def flush(self) -> None:
        """Plan and start a round now for what is pending (the debounce timer calls this)."""
        with self._lock:
            self._timer = None
            if self._closed or not self._enabled:
                event = self._period_end(self._latest_generation())
                if event is not None:
                    self._emit(event)
                return
            files, self._pending = frozenset(self._pending), set()
            everything, self._everything = self._everything, False
            planning = None if everything else files
            self._planning.append(planning)  # busy while it is planned: never idle in between
        try:
            plan = self._source.plan(files, everything)
        except BaseException:
            with self._lock:
                self._planning.remove(planning)
                event = self._period_end(self._latest_generation())
                self._idle.notify_all()
            if event is not None:
                self._emit(event)
            raise
        with self._lock:
            self._planning.remove(planning)
            event = None
            if plan is None or self._closed:
                event = self._period_end(self._latest_generation())
                self._idle.notify_all()
            else:
                self._learn(plan.known)
                redo = {tid for tid, g in self._requested.items() if tid in plan.known and tid not in self._running
                        and g > self._source.stored_generation(tid)}
                ids = tuple(sorted(plan.wanted | redo))
                self._begin(plan, ids)
                if not ids:
                    event = self._period_end(plan.generation)
        if event is not None:
            self._emit(event)

    def run_now(self, plan: RoundPlan) -> tuple[str, ...]:
        """Start a round for exactly ``plan.wanted``, no debounce (``check``, ``retrace``)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the workspace is closed")
            self._learn(plan.known)
            ids = tuple(sorted(plan.wanted))
            self._begin(plan, ids)
        return ids

    def _learn(self, known: frozenset[str]) -> None:
        """The targets that exist now (lock held): requests for others are dropped."""
        self._known = known
        for tid in [t for t in self._requested if t not in known]:
            del self._requested[tid]
            self._attempted.pop(tid, None)
        for tid in [t for t in self._urgent if t not in known]:
            del self._urgent[tid]

    def _begin(self, plan: RoundPlan, ids: tuple[str, ...]) -> None:
        """Mark ``ids`` running for ``plan`` and start its thread (lock held)."""
        gen = plan.generation
        for tid in ids:
            self._requested[tid] = max(self._requested.get(tid, -1), gen)
            self._running[tid] = self._attempted[tid] = gen
            self._answered.pop(tid, None)
        if not ids:
            self._idle.notify_all()
            return
        self._rounds += 1
        if self._started is None:
            self._started = self._clock.now()
            self._period, self._finished, self._outcomes = set(), set(), {}
        self._period.update(ids)
        self._finished.difference_update(ids)
        event = self._event(None, gen)
        self.background(lambda: self._round(plan, ids, event), "fxscope-round")

    def _event(self, target: str | None, generation: int, summary: RunSummary | None = None) -> ProgressEvent:
        """Progress of the busy period: targets finished of those its rounds ran (lock held)."""
        answered = sum(1 for tid, g in self._answered.items() if self._running.get(tid) == g)
        return ProgressEvent(len(self._finished), len(self._period), len(self._running), target, generation,
                             summary, len(self._finished) + answered)

    def _emit(self, event: ProgressEvent) -> None:
        self._on_progress(event)

    def _latest_generation(self) -> int:
        """The newest generation a target was asked for (lock held; for an event of no round)."""
        return max(self._running.values(), default=max(self._requested.values(), default=0))

    def _round(self, plan: RoundPlan, ids: tuple[str, ...], event: ProgressEvent) -> None:
        self._on_progress(event)
        try:
            with self._lock:
                self._checks += 1
            plan.run(ids, _Control(self, plan.generation))
        except Exception as exc:  # noqa: BLE001 - a broken round must not kill the session
            with self._lock:
                closed = self._closed
                if not closed:
                    self._error = exc
            if not closed:
                self._on_error(exc)
        finally:
            self._round_ended(plan.generation, ids)

    def _round_ended(self, gen: int, ids: tuple[str, ...]) -> None:
        with self._lock:
            for tid in ids:
                if self._running.get(tid) == gen:
                    del self._running[tid]
            self._rounds -= 1
            if self._rounds == 0:
                # a target killed for a newer snapshot whose own round has not started yet (not
                # one whose round failed: that waits for the next change)
                if not self._closed and self._timer is None and any(
                        g > self._source.stored_generation(tid) and g >= self._cancel_below
                        and g > self._attempted.get(tid, -1)
                        for tid, g in self._requested.items() if tid in self._known and tid not in self._running):
                    self._schedule(0.0)
            event = self._period_end(gen)
            self._idle.notify_all()
        if event is not None:
            self._emit(event)

    def _period_end(self, generation: int) -> ProgressEvent | None:
        """The event that ends the busy period, with its summary, when nothing is running, being
        planned or debouncing any more (lock held); None otherwise."""
        if self._started is None or self._rounds or self._planning or self._timer is not None:
            return None
        seconds = self._clock.now() - self._started
        self._last_duration_ms = seconds * 1000
        self._started = None
        counts: dict[str, int] = {}
        for _, outcome in self._outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        cancelled = counts.get("cancelled", 0) + counts.get("superseded", 0)
        queued = sum(1 for tid in self._known if tid in self._requested and self._queued(tid))
        summary = RunSummary(len(self._outcomes) - cancelled, counts.get("cached", 0), counts.get("errors", 0),
                             counts.get("failed", 0), cancelled, queued, seconds)
        return self._event(None, generation, summary)

    def _schedule(self, delay: float) -> None:
        """(Re)arm the debounce timer (lock held)."""
        if self._closed or not self._enabled:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._clock.call_later(delay, self.flush)

    def background(self, fn: Callable[[], None], name: str) -> None:
        """Run ``fn`` on a daemon thread of its own."""
        threading.Thread(target=fn, name=name, daemon=True).start()

    # -- a running round -------------------------------------------------------------------------
    def is_stale(self, target_id: str, generation: int) -> bool:
        """Whether the job of ``target_id`` in the round of ``generation`` must be killed."""
        with self._lock:
            return (self._closed or (generation < self._cancel_below and target_id not in self._spared)
                    or self._requested.get(target_id, generation) > generation)

    def answered(self, target_id: str, generation: int) -> None:
        """The fx phase of ``target_id`` in the round of ``generation`` answered (its result is
        stored); its analyses phase runs next: the target is no longer pending, still running."""
        with self._lock:
            if self._running.get(target_id) != generation:
                return
            self._answered[target_id] = generation
            event = self._event(target_id, generation)
        self._emit(event)

    def _analysing(self, target_id: str) -> bool:
        """Whether the running job of ``target_id`` is its analyses phase (lock held)."""
        gen = self._running.get(target_id)
        return gen is not None and self._answered.get(target_id) == gen

    def finished(self, target_id: str, generation: int, outcome: str = "clean") -> None:
        """``target_id`` of the round of ``generation`` finished: ``outcome`` is ``cached``,
        ``clean``, ``errors`` (findings), ``failed`` (could not be built or traced at all) or
        ``cancelled`` (counted in the round's summary)."""
        with self._lock:
            if self._answered.get(target_id, -1) <= generation:
                self._answered.pop(target_id, None)
            if self._running.get(target_id) == generation:
                del self._running[target_id]
            if self._outcomes.get(target_id, (-1, ""))[0] > generation:
                pass  # a job of a newer snapshot finished first: this one says nothing new
            elif (outcome == "cancelled" and not self._closed and generation >= self._cancel_below
                    and self._requested.get(target_id, generation) > generation):
                self._outcomes[target_id] = (generation, "superseded")  # killed for a newer snapshot: it runs again
                self._finished.discard(target_id)
            else:
                self._outcomes[target_id] = (generation, outcome)
                self._finished.add(target_id)
            event = self._event(target_id, generation)
        self._emit(event)

    def priority(self, target_id: str) -> int:
        """Where a job of ``target_id`` goes in the engine's order (lower first): 0 while an edit
        asked for it and its result is older than that edit, else the source's tier (0: an open
        file's target, 1: a target in a file the open files import, 2: background)."""
        with self._lock:
            urgent = self._urgent.get(target_id)
        if urgent is not None:
            if urgent > self._source.stored_generation(target_id):
                return 0
            with self._lock:
                if self._urgent.get(target_id) == urgent:
                    del self._urgent[target_id]
        return self._source.tier(target_id)

    def cancel(self, generation: int, *, spare_edits: bool = False) -> None:
        """Every round of a generation below ``generation`` is stale (its jobs are killed); with
        ``spare_edits``, except the jobs of targets an edit asked for whose result has not arrived
        yet (the user cancels the background run, not the diagnostics of what they just typed)."""
        spared: set[str] = set()
        if spare_edits:
            with self._lock:
                urgent = dict(self._urgent)
            spared = {tid for tid, g in urgent.items() if g > self._source.stored_generation(tid)}
        with self._lock:
            self._cancel_below = max(self._cancel_below, generation)
            self._spared = frozenset(spared)

    def take_error(self) -> Exception | None:
        """The error the last failed round ended with (cleared)."""
        with self._lock:
            error, self._error = self._error, None
        return error

    # -- state -----------------------------------------------------------------------------------
    def is_pending(self, file: str) -> bool:
        """Whether a round that may change the results of ``file`` is debouncing, queued or
        running."""
        affected = self._source.affected(file)
        with self._lock:
            if self._everything or (self._timer is not None and file in self._pending):
                return True
            if any(files is None or file in files for files in self._planning):
                return True
            return any((tid in self._running and not self._analysing(tid)) or self._queued(tid) for tid in affected)

    def is_running(self, target_id: str) -> bool:
        """Whether a job of ``target_id`` runs now, before its fx phase answered."""
        with self._lock:
            return target_id in self._running and not self._analysing(target_id)

    def is_analysing(self, target_id: str) -> bool:
        """Whether the analyses phase of ``target_id`` runs now (its fx phase answered)."""
        with self._lock:
            return self._analysing(target_id)

    def is_target_pending(self, target_id: str) -> bool:
        """Whether ``target_id`` runs now, or was asked for and has no result yet."""
        with self._lock:
            return (target_id in self._running and not self._analysing(target_id)) or (
                target_id in self._requested and self._source.stored_generation(target_id) < 0)

    def _queued(self, tid: str) -> bool:
        return tid not in self._running and self._requested.get(tid, -1) > self._source.stored_generation(tid)

    def counts(self) -> SchedulerCounts:
        """The numbers behind the workspace's status."""
        with self._lock:
            known = self._known
            done = sum(1 for tid in known if tid not in self._running and self._source.stored_generation(tid) >= 0)
            queued = sum(1 for tid in known if tid in self._requested and self._queued(tid))
            return SchedulerCounts(len(known), done, len(self._running), queued, self._checks,
                                   self._last_duration_ms)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is debouncing, queued or running; False on timeout. With a manual
        clock a pending debounce only ends when the clock is advanced."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._timer is not None or self._rounds > 0 or self._planning:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(0.05 if remaining is None else min(remaining, 0.05))
            return True

    def close(self) -> None:
        """Stop: no new round starts; running ones see every job stale."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._pending.clear()
            self._everything = False

    def wait_rounds(self, timeout: float) -> None:
        """Wait (bounded) until every round has ended."""
        with self._lock:
            self._idle.wait_for(lambda: self._rounds == 0, timeout=timeout)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed
