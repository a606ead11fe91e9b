"""The order in which the jobs of every concurrent run of one engine reach its worker pool.

The engine's runs (the editor's rounds overlap: a start-up check, an edit, a configuration
change) do not hand their jobs to the pool's FIFO queue: they give them to one
:class:`Dispatcher`, which keeps at most ``width`` jobs in the pool (one per worker) and, each time
a worker is free, starts the waiting job with the lowest priority, asked *then* (a target whose
file was opened since its run began moves ahead at once). A job of a foreground priority (below
:data:`BACKGROUND`) that finds every worker busy with background jobs preempts one: its child
is killed and the background job waits again, to run from scratch later (cancellation is killing
the child). Callers see a :class:`Ticket`, which behaves like the pool's job handle.

Example::

    dispatcher = Dispatcher(pool, width=2)
    ticket = dispatcher.submit(job, priority=lambda: 0)
    ticket.result()          # the job's dict, as the pool's handle gives it
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["BACKGROUND", "Dispatcher", "Ticket"]

#: Priorities: lower runs first. A job below BACKGROUND (an open file's target, an edit's) preempts
#: running jobs at BACKGROUND or above when no worker is free.
FOCUS = 0
DEPENDENCY = 1
BACKGROUND = 2


class _Handle(Protocol):
    duration_ms: float | None

    def cancel(self) -> bool: ...

    def result(self, timeout: float | None = None) -> dict[str, Any]: ...

    def add_done_callback(self, fn: Callable[[Any], Any]) -> None: ...


class _Pool(Protocol):
    def submit(self, job: dict[str, Any]) -> Any: ...


_CANCELLED: dict[str, Any] = {"fault": "cancelled"}


class Ticket:
    """One job given to a :class:`Dispatcher`: waiting, running (in the pool) or done. Quacks like
    the pool's job handle: :meth:`result`, :meth:`cancel`, :meth:`add_done_callback`,
    ``duration_ms``."""

    def __init__(self, dispatcher: Dispatcher, job: dict[str, Any], priority: Callable[[], int], seq: int) -> None:
        self.job = job
        self.priority = priority
        self.seq = seq
        self.duration_ms: float | None = None
        self.preemptions = 0
        self._dispatcher = dispatcher
        self._state = "waiting"  # waiting, starting, running, done
        self._handle: Any = None
        self._preempting = False
        self._cancel_asked = False
        self._result: dict[str, Any] | None = None
        self._event = threading.Event()
        self._callbacks: list[Callable[[Ticket], Any]] = []

    @property
    def state(self) -> str:
        """``waiting``, ``starting``, ``running`` or ``done``."""
        return self._state

    def done(self) -> bool:
        """True once the job has a result (or was cancelled)."""
        return self._event.is_set()

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """The job's dict (a fault dict when it failed or was cancelled)."""
        if not self._event.wait(timeout):
            raise TimeoutError("the job is not done")
        assert self._result is not None
        return self._result

    def cancel(self) -> bool:
        """Cancel the job: forget it while it waits, kill its child while it runs. False when done."""
        return self._dispatcher._cancel(self)

    def add_done_callback(self, fn: Callable[[Ticket], Any]) -> None:
        """Call ``fn(ticket)`` when done (at once when it is)."""
        with self._dispatcher._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def __repr__(self) -> str:
        return f"<Ticket {self.seq} {self._state}>"


class Dispatcher:
    """Starts the waiting job of lowest priority whenever one of ``width`` workers is free, and
    lets a foreground job preempt a background one (see the module docstring). Thread-safe;
    callbacks run without its lock held."""

    def __init__(self, pool: _Pool, width: int) -> None:
        self.pool = pool
        self.width = max(1, width)
        self._lock = threading.RLock()
        self._waiting: list[Ticket] = []
        self._running: list[Ticket] = []
        self._seq = itertools.count()
        self._closed = False

    def submit(self, job: dict[str, Any], priority: Callable[[], int] | None = None) -> Ticket:
        """Queue ``job``; ``priority()`` (lower first; default FOCUS) is asked each time a worker is
        free, so it may change while the job waits."""
        ticket = Ticket(self, job, priority or (lambda: FOCUS), next(self._seq))
        with self._lock:
            closed = self._closed
            if not closed:
                self._waiting.append(ticket)
                # a background job given while every worker is busy changes nothing yet (a run
                # gives hundreds: each would rank them all)
                quiet = len(self._running) >= self.width and self._priority(ticket) >= BACKGROUND
        if closed:
            self._finish(ticket, dict(_CANCELLED))
        elif not quiet:
            self.pump()
        return ticket

    def counts(self) -> tuple[int, int]:
        """Jobs waiting and jobs in the pool."""
        with self._lock:
            return len(self._waiting), len(self._running)

    def close(self) -> None:
        """Every waiting job ends cancelled (its pool closes the running ones)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
        for ticket in waiting:
            self._finish(ticket, dict(_CANCELLED))

    # -- internals ---------------------------------------------------------------------------------
    @staticmethod
    def _priority(ticket: Ticket) -> int:
        try:
            return int(ticket.priority())
        except Exception:  # noqa: BLE001 - a failing priority must not stop the queue
            return BACKGROUND

    def pump(self) -> None:
        """Start waiting jobs while workers are free; preempt background jobs for foreground ones."""
        start: list[Ticket] = []
        preempt: list[Ticket] = []
        with self._lock:
            if self._closed or not self._waiting:
                return
            ranked = sorted(((self._priority(t), t.seq, t) for t in self._waiting), key=lambda e: e[:2])
            free = self.width - len(self._running)
            for _, _, ticket in ranked[:max(free, 0)]:
                self._waiting.remove(ticket)
                ticket._state = "starting"
                self._running.append(ticket)
                start.append(ticket)
            rest = [(p, t) for p, _, t in ranked[max(free, 0):]]
            urgent = sum(1 for p, _ in rest if p < BACKGROUND)
            urgent -= sum(1 for t in self._running if t._preempting)  # already making room for them
            if urgent > 0:
                victims = sorted((t for t in self._running if t._state == "running" and not t._preempting
                                  and not t._cancel_asked and self._priority(t) >= BACKGROUND),
                                 # the latest in the order (an analyses phase before an fx phase), then the
                                 # newest: it loses least
                                 key=lambda t: (-self._priority(t), -t.seq))
                for ticket in victims[:urgent]:
                    ticket._preempting = True
                    preempt.append(ticket)
        for ticket in start:
            self._start(ticket)
        for ticket in preempt:
            ticket._handle.cancel()

    def _start(self, ticket: Ticket) -> None:
        try:
            handle = self.pool.submit(ticket.job)
        except Exception as exc:  # noqa: BLE001 - a closed pool: the job ends, as a closing pool ends its own
            with self._lock:
                if ticket in self._running:
                    self._running.remove(ticket)
            result = dict(_CANCELLED) if isinstance(exc, RuntimeError) else {
                "fault": "crash", "message": f"could not start the job: {exc}"}
            self._finish(ticket, result)
            self.pump()
            return
        with self._lock:
            ticket._handle = handle
            if ticket._state == "starting":
                ticket._state = "running"
            cancel = ticket._cancel_asked
        if cancel:
            handle.cancel()
        handle.add_done_callback(lambda h, ticket=ticket: self._ended(ticket, h))

    def _ended(self, ticket: Ticket, handle: Any) -> None:
        """The pool finished ``ticket``'s job (a result, a fault, or killed)."""
        raw = handle.result()
        with self._lock:
            if ticket in self._running:
                self._running.remove(ticket)
            again = (ticket._preempting and not ticket._cancel_asked and not self._closed
                     and raw.get("fault") == "cancelled")
            ticket._preempting = False
            ticket._handle = None
            if again:  # preempted: it waits again, to run from scratch
                ticket.preemptions += 1
                ticket._state = "waiting"
                self._waiting.append(ticket)
        if not again:
            ticket.duration_ms = getattr(handle, "duration_ms", None)
            self._finish(ticket, raw)
        self.pump()

    def _cancel(self, ticket: Ticket) -> bool:
        with self._lock:
            if ticket._event.is_set():
                return False
            ticket._cancel_asked = True
            if ticket._state == "waiting":
                self._waiting.remove(ticket)
                waiting = True
            else:
                waiting = False
                handle = ticket._handle  # None while starting: _start cancels it
        if waiting:
            self._finish(ticket, dict(_CANCELLED))
        elif handle is not None:
            handle.cancel()
        return True

    def _finish(self, ticket: Ticket, result: dict[str, Any]) -> None:
        with self._lock:
            if ticket._event.is_set():
                return
            ticket._state = "done"
            ticket._result = result
            ticket._event.set()
            callbacks, ticket._callbacks = ticket._callbacks, []
        for fn in callbacks:
            fn(ticket)
