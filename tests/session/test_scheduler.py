"""The scheduler on its own: a manual clock and a fake round source (targets, the files they read,
a store of generations), no engine, no worker, no torch. Rounds run on the scheduler's threads;
a gate holds a round's job open where a test needs one running."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from session_support import ManualClock, Recorder

from fxscope.session.plans import RoundControl, RoundPlan
from fxscope.session.scheduler import Scheduler

WAIT = 60  # seconds a fake round may take on a loaded machine (a limit, not a measurement)


class FakeSource:
    """Targets that read files; a round "traces" each wanted target by storing the round's
    generation for it, unless its job is stale by then (then it is cancelled, as the engine does)."""

    def __init__(self, targets: dict[str, set[str]]) -> None:
        self.targets = targets
        self.generation = 0
        self.stored: dict[str, int] = {}
        self.plans: list[tuple[frozenset[str], bool]] = []
        self.runs: list[tuple[int, tuple[str, ...]]] = []
        self.cancelled: list[tuple[int, str]] = []
        self.gate: threading.Event | None = None  # set: jobs finish; clear: they wait
        self.started = threading.Event()  # a job is running
        self.fail: Exception | None = None
        self.tiers: dict[str, int] = {}  # the workspace's tier of a target (open file 0, imported 1, else 2)
        self.priorities: list[dict[str, int]] = []  # control.priority of every target, per round
        self.outcome = "clean"  # what each job reports finishing with
        self.phases = False  # each job answers its fx phase (stored) before it waits at the gate
        self.lock = threading.Lock()

    def plan(self, files: frozenset[str], everything: bool) -> RoundPlan:
        with self.lock:
            self.plans.append((files, everything))
            gen = self.generation
        wanted = set(self.targets) if everything else {t for t in self.targets if self.targets[t] & files}
        return RoundPlan(gen, frozenset(self.targets), frozenset(wanted), lambda ids, c: self._run(gen, ids, c))

    def _run(self, gen: int, ids: tuple[str, ...], control: RoundControl) -> None:
        with self.lock:
            self.runs.append((gen, ids))
        self.priorities.append({tid: control.priority(tid) for tid in ids})
        if self.fail is not None:
            raise self.fail
        for tid in ids:
            if self.phases:  # the fx phase answered; the analyses phase runs at the gate
                with self.lock:
                    self.stored[tid] = max(self.stored.get(tid, -1), gen)
                control.answered(tid)
            self.started.set()
            gate = self.gate
            while gate is not None and not gate.wait(0.01):
                if control.stale(tid):
                    break  # killed, as the engine kills a stale job
            if control.stale(tid):
                with self.lock:
                    self.cancelled.append((gen, tid))
            else:
                with self.lock:
                    self.stored[tid] = max(self.stored.get(tid, -1), gen)
            control.finished(tid, "cancelled" if (gen, tid) in self.cancelled else self.outcome)

    def stored_generation(self, target_id: str) -> int:
        with self.lock:
            return self.stored.get(target_id, -1)

    def affected(self, file: str) -> frozenset[str]:
        return frozenset(t for t, files in self.targets.items() if file in files)

    def tier(self, target_id: str) -> int:
        with self.lock:
            return self.tiers.get(target_id, 2)

    def edit(self) -> int:
        """A new snapshot generation (an edit)."""
        with self.lock:
            self.generation += 1
            return self.generation


def _scheduler(source: FakeSource, clock: ManualClock, rec: Recorder, *, debounce_s: float = 0.3,
               enabled: bool = True) -> Scheduler:
    return Scheduler(source, clock, debounce_s=debounce_s, enabled=enabled, on_progress=rec.on_progress,
                     on_error=rec.on_error)


def _change(scheduler: Scheduler, source: FakeSource, file: str) -> int:
    gen = source.edit()
    scheduler.changed(file, source.affected(file), gen)
    return gen


TARGETS = {"a": {"a.py", "helper.py"}, "b": {"b.py", "helper.py"}, "c": {"c.py"}}


@pytest.fixture
def source() -> FakeSource:
    return FakeSource({k: set(v) for k, v in TARGETS.items()})


def test_start_runs_every_target_at_once(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    assert source.plans == [(frozenset(), True)]
    assert source.runs == [(0, ("a", "b", "c"))]
    assert sorted(rec.finished()) == ["a", "b", "c"]
    counts = scheduler.counts()
    assert (counts.total, counts.done, counts.running, counts.queued, counts.checks) == (3, 3, 0, 0, 1)


def test_an_isolated_edit_runs_at_once_and_a_burst_waits_for_the_debounce(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    clock.advance(1.0)  # a quiet period
    first = _change(scheduler, source, "c.py")
    clock.advance(0.0)  # leading edge: no debounce
    assert scheduler.wait_idle(WAIT) and source.runs[-1] == (first, ("c",))
    for _ in range(5):  # a burst: 0.1 s apart, inside the 0.3 s debounce
        last = _change(scheduler, source, "c.py")
        clock.advance(0.1)
    assert not scheduler.wait_idle(0.2)  # the trailing edge waits for the clock
    assert source.runs[-1] == (first, ("c",))
    clock.advance(0.3)
    assert scheduler.wait_idle(WAIT)
    assert source.runs[-1] == (last, ("c",)) and len(source.runs) == 3  # the burst ran once, at its end
    assert source.stored["c"] == last


def test_a_helper_edit_runs_exactly_the_targets_that_read_it(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec, debounce_s=0.0)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    gen = _change(scheduler, source, "helper.py")
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT)
    assert source.runs[-1] == (gen, ("a", "b"))
    assert source.plans[-1] == (frozenset({"helper.py"}), False)


def test_an_edit_makes_the_running_job_stale_and_its_target_runs_again(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert source.started.wait(WAIT)  # "a" runs, held by the gate
    assert scheduler.is_running("a") and scheduler.is_pending("a.py")
    assert not scheduler.is_stale("a", 0)
    gen = _change(scheduler, source, "a.py")  # a newer snapshot needs "a"
    assert scheduler.is_stale("a", 0)  # at once: the round kills the job
    source.gate.set()
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT)
    assert (0, "a") in source.cancelled
    assert source.stored["a"] == gen  # run again for the newer snapshot
    assert not scheduler.is_pending("a.py")


def test_a_cancelled_job_reruns_when_the_rounds_end_even_without_a_timer(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert source.started.wait(WAIT)
    gen = _change(scheduler, source, "c.py")  # "c" is queued behind "a" in the same round
    source.gate.set()
    clock.advance(0.0)  # the change's round, and the rerun the first round's end schedules
    assert scheduler.wait_idle(WAIT)
    assert source.stored["c"] == gen and scheduler.counts().queued == 0


def test_cancel_kills_running_jobs_and_nothing_reruns(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert source.started.wait(WAIT)
    scheduler.cancel(source.edit())
    assert scheduler.is_stale("a", 0)
    source.gate.set()
    assert scheduler.wait_idle(WAIT)
    assert [tid for _, tid in source.cancelled] == ["a", "b", "c"]
    assert source.stored == {} and len(source.runs) == 1  # kept their (absent) results, not re-run
    assert clock.pending() == 0


def test_pending_while_debouncing_queued_or_running(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    clock.advance(1.0)
    _change(scheduler, source, "b.py")
    assert scheduler.is_pending("b.py") and not scheduler.is_pending("c.py")  # debouncing
    assert not scheduler.wait_idle(0.05)
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT)
    assert not scheduler.is_pending("b.py")
    assert not scheduler.is_target_pending("b") and scheduler.counts().done == 3


def test_a_disabled_scheduler_runs_nothing_until_enabled(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec, enabled=False)
    scheduler.request_all(0, at_once=True)
    _change(scheduler, source, "a.py")
    clock.advance(1.0)
    assert scheduler.wait_idle(WAIT) and source.runs == []
    scheduler.configure(debounce_s=0.3, enabled=True)
    scheduler.request_all(source.generation)
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT)
    assert source.runs == [(1, ("a", "b", "c"))]


def test_a_failing_round_is_reported_and_the_scheduler_keeps_going(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.fail = RuntimeError("the engine broke")
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    assert [str(e) for e in rec.errors] == ["the engine broke"]
    error = scheduler.take_error()
    assert isinstance(error, RuntimeError) and scheduler.take_error() is None
    source.fail = None
    scheduler.request_all(source.edit())
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT) and sorted(source.stored) == ["a", "b", "c"]


def test_run_now_runs_exactly_the_plan_without_debounce(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    gen = source.edit()
    ran = scheduler.run_now(RoundPlan(gen, frozenset(source.targets), frozenset({"b"}),
                                      lambda ids, c: source._run(gen, ids, c)))
    assert ran == ("b",)
    assert scheduler.wait_idle(WAIT) and source.stored == {"b": gen}
    scheduler.close()
    with pytest.raises(RuntimeError, match="closed"):
        scheduler.run_now(RoundPlan(gen, frozenset(), frozenset(), lambda ids, c: None))


def test_progress_counts_every_finished_target(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    done = [(ev.done, ev.total) for ev in rec.progress]
    assert done[0] == (0, 3) and done[-1] == (3, 3)
    assert rec.progress[-1].running == 0


def _spin(predicate: Callable[[], bool]) -> bool:
    event = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return True
        event.wait(0.01)
    return predicate()


def test_close_stops_new_rounds(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert source.started.wait(WAIT)
    _change(scheduler, source, "c.py")
    scheduler.close()
    assert scheduler.is_stale("a", 0)  # every job of a closed scheduler is stale
    source.gate.set()
    scheduler.wait_rounds(WAIT)
    assert _spin(lambda: not scheduler.is_running("a"))
    clock.advance(1.0)  # the debounce timer was cancelled: no round starts
    assert scheduler.wait_idle(WAIT) and len(source.runs) == 1


# -- order and summaries -----------------------------------------------------------------------
def test_priority_is_the_tier_of_the_workspace_unless_an_edit_asked(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.tiers = {"a": 0, "b": 1}  # a: in an open file; b: in a file it imports; c: background
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    assert source.priorities[-1] == {"a": 0, "b": 1, "c": 2}
    clock.advance(1.0)
    source.gate = threading.Event()  # the edit's job stays open
    gen = _change(scheduler, source, "c.py")
    clock.advance(0.0)
    assert _spin(lambda: scheduler.is_running("c"))
    assert scheduler.priority("c") == 0  # an edit's target comes before every background job
    assert (scheduler.priority("a"), scheduler.priority("b")) == (0, 1)
    source.gate.set()
    assert scheduler.wait_idle(WAIT) and source.stored["c"] == gen
    assert scheduler.priority("c") == 2  # its result is current: back to its tier


def test_a_change_on_disk_keeps_the_tiers(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    clock.advance(1.0)
    source.gate = threading.Event()
    gen = source.edit()
    scheduler.changed("c.py", source.affected("c.py"), gen, urgent=False)  # a file watcher's event
    clock.advance(0.0)
    assert _spin(lambda: scheduler.is_running("c"))
    assert scheduler.priority("c") == 2
    source.gate.set()
    assert scheduler.wait_idle(WAIT)


def test_the_end_of_the_rounds_carries_one_summary(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.outcome = "cached"
    scheduler.request_all(0, at_once=True)
    assert scheduler.wait_idle(WAIT)
    summaries = [ev.summary for ev in rec.progress if ev.summary is not None]
    assert len(summaries) == 1 and rec.progress[-1].summary is summaries[0]
    s = summaries[0]
    assert (s.targets, s.cached, s.errors, s.failed, s.cancelled, s.queued) == (3, 3, 0, 0, 0, 0)
    assert s.line().startswith("3 targets (3 cached) in ")


def test_cancelled_jobs_stay_queued_and_are_summarised_as_cancelled(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert _spin(lambda: source.started.is_set())
    scheduler.cancel(source.edit())  # the user cancelled the progress
    assert scheduler.wait_idle(WAIT)
    (s,) = [ev.summary for ev in rec.progress if ev.summary is not None]
    assert s.cancelled == 3 and s.queued == 3 and "3 cancelled, 3 left queued" in s.line()
    assert scheduler.counts().queued == 3 and not source.stored  # not failures: no results, still wanted
    assert clock.pending() == 0  # and nothing re-runs them until the next change
    clock.advance(1.0)
    source.gate.set()
    gen = _change(scheduler, source, "c.py")
    clock.advance(0.0)
    assert scheduler.wait_idle(WAIT)
    assert source.stored == {"a": gen, "b": gen, "c": gen}  # the next change runs them again


def test_a_superseding_edit_continues_the_busy_period(source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    scheduler = _scheduler(source, clock, rec)
    source.gate = threading.Event()
    scheduler.request_all(0, at_once=True)
    assert _spin(lambda: source.started.is_set())
    clock.advance(1.0)
    gen = _change(scheduler, source, "c.py")  # c's job of the first round is stale now
    clock.advance(0.0)
    assert _spin(lambda: len(source.runs) == 2)
    source.gate.set()
    assert scheduler.wait_idle(WAIT)
    assert source.stored["c"] == gen and (0, "c") in source.cancelled
    summaries = [ev.summary for ev in rec.progress if ev.summary is not None]
    assert len(summaries) == 1  # one run for the user: the start-up check and the edit
    s = summaries[0]
    assert (s.targets, s.cancelled, s.queued) == (3, 0, 0)  # a superseded job is no cancellation
    last = rec.progress[-1]
    assert (last.done, last.total, last.running) == (3, 3, 0)
    assert max(ev.total for ev in rec.progress) == 3  # targets, not jobs


def test_a_target_whose_fx_phase_answered_is_not_pending_while_its_analyses_run(
        source: FakeSource, clock: ManualClock, rec: Recorder) -> None:
    source.phases, source.gate = True, threading.Event()
    scheduler = _scheduler(source, clock, rec)
    scheduler.request_all(0, at_once=True)
    assert source.started.wait(WAIT)
    # "a" answered its fx phase and its analyses phase runs: shown, not pending, still running
    assert scheduler.is_analysing("a") and not scheduler.is_running("a")
    assert not scheduler.is_target_pending("a") and not scheduler.is_pending("a.py")
    assert scheduler.is_target_pending("b")  # not started yet
    with rec.lock:
        last = rec.progress[-1]
    assert (last.done, last.answered) == (0, 1)
    source.gate.set()
    assert scheduler.wait_idle(WAIT)
    assert set(rec.finished()) == {"a", "b", "c"} and not scheduler.is_analysing("a")
    with rec.lock:
        assert rec.progress[-1].done == rec.progress[-1].answered == 3
