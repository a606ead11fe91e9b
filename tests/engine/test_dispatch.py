"""The engine's job order over its worker pool (no worker: a pool whose jobs the test finishes)."""

from __future__ import annotations

from typing import Any, Callable

from fxscope.engine.dispatch import BACKGROUND, DEPENDENCY, FOCUS, Dispatcher


class FakeHandle:
    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.duration_ms: float | None = None
        self._result: dict[str, Any] | None = None
        self._callbacks: list[Callable[[FakeHandle], Any]] = []
        self.killed = False

    def finish(self, result: dict[str, Any]) -> None:
        assert self._result is None
        self._result, self.duration_ms = result, 1.0
        for fn in self._callbacks:
            fn(self)

    def cancel(self) -> bool:  # the pool kills the child: the job ends cancelled
        if self._result is not None:
            return False
        self.killed = True
        self.finish({"fault": "cancelled"})
        return True

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        assert self._result is not None
        return self._result

    def add_done_callback(self, fn: Callable[[FakeHandle], Any]) -> None:
        if self._result is not None:
            fn(self)
        else:
            self._callbacks.append(fn)


class FakePool:
    def __init__(self) -> None:
        self.handles: list[FakeHandle] = []

    def submit(self, job: dict[str, Any]) -> FakeHandle:
        handle = FakeHandle(job)
        self.handles.append(handle)
        return handle

    def running(self) -> list[str]:
        return [h.job["id"] for h in self.handles if h._result is None]

    def finish(self, job_id: str) -> None:
        (handle,) = [h for h in self.handles if h.job["id"] == job_id and h._result is None]
        handle.finish({"value": job_id})


def _submit(d: Dispatcher, job_id: str, priority: int | Callable[[], int]):
    prio = priority if callable(priority) else (lambda: priority)
    return d.submit({"id": job_id}, prio)


def test_a_free_worker_takes_the_waiting_job_of_lowest_priority_then_the_oldest() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=1)
    first = _submit(d, "first", FOCUS)
    tickets = {name: _submit(d, name, p) for name, p in
               (("bg1", BACKGROUND), ("dep", DEPENDENCY), ("bg2", BACKGROUND), ("open", FOCUS))}
    assert pool.running() == ["first"] and d.counts() == (4, 1)
    order = []
    for _ in range(5):
        (current,) = pool.running()
        order.append(current)
        pool.finish(current)
    assert order == ["first", "open", "dep", "bg1", "bg2"]
    assert first.result() == {"value": "first"}
    assert all(t.result() == {"value": name} for name, t in tickets.items())
    assert d.counts() == (0, 0)


def test_priority_is_asked_when_a_worker_is_free() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=1)
    _submit(d, "running", FOCUS)
    opened = {"b.py": False}
    _submit(d, "a", lambda: BACKGROUND)
    _submit(d, "b", lambda: FOCUS if opened["b.py"] else BACKGROUND)
    opened["b.py"] = True  # b.py was opened while its job waited
    pool.finish("running")
    assert pool.running() == ["b"]


def test_a_foreground_job_preempts_a_background_one_which_runs_again_later() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=2)
    old = _submit(d, "bg-old", BACKGROUND)
    new = _submit(d, "bg-new", BACKGROUND)
    waiting = _submit(d, "bg-waiting", BACKGROUND)
    assert pool.running() == ["bg-old", "bg-new"]
    edit = _submit(d, "edit", FOCUS)
    # the newest running background job lost its child; the edit runs in its place
    assert pool.running() == ["bg-old", "edit"]
    assert not new.done() and new.state == "waiting" and new.preemptions == 1
    pool.finish("edit")
    assert edit.result() == {"value": "edit"}
    assert sorted(pool.running()) == ["bg-new", "bg-old"]  # seq order: the preempted job before the later one
    pool.finish("bg-new")
    assert new.result() == {"value": "bg-new"}  # its result is the re-run's, never "cancelled"
    assert pool.running() == ["bg-old", "bg-waiting"]
    pool.finish("bg-old")
    pool.finish("bg-waiting")
    assert old.result() == {"value": "bg-old"} and waiting.result() == {"value": "bg-waiting"}


def test_foreground_jobs_do_not_preempt_each_other_nor_more_than_they_need() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=2)
    _submit(d, "dep", DEPENDENCY)
    _submit(d, "bg1", BACKGROUND)
    _submit(d, "bg2", BACKGROUND)  # waits
    _submit(d, "edit", FOCUS)  # takes bg1's worker, not dep's
    assert sorted(pool.running()) == ["dep", "edit"]
    _submit(d, "edit2", FOCUS)  # no background job left to preempt: it waits
    assert sorted(pool.running()) == ["dep", "edit"]
    pool.finish("dep")
    assert sorted(pool.running()) == ["edit", "edit2"]
    killed = [h.job["id"] for h in pool.handles if h.killed]
    assert killed == ["bg1"]


def test_cancel_forgets_a_waiting_job_and_kills_a_running_one() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=1)
    running = _submit(d, "running", BACKGROUND)
    waiting = _submit(d, "waiting", BACKGROUND)
    assert waiting.cancel() and waiting.result() == {"fault": "cancelled"}
    assert running.cancel() and running.result() == {"fault": "cancelled"}  # a cancel is no preemption
    assert [h.job["id"] for h in pool.handles] == ["running"]  # the cancelled waiting job never started
    assert not running.cancel()


def test_close_ends_every_waiting_job_cancelled() -> None:
    pool = FakePool()
    d = Dispatcher(pool, width=1)
    _submit(d, "running", FOCUS)
    waiting = _submit(d, "waiting", FOCUS)
    d.close()
    assert waiting.result() == {"fault": "cancelled"}
    assert _submit(d, "late", FOCUS).result() == {"fault": "cancelled"}


def test_a_pool_that_refuses_jobs_ends_them_without_blocking_the_others() -> None:
    class ClosedPool(FakePool):
        def submit(self, job: dict[str, Any]) -> FakeHandle:
            raise RuntimeError("the worker pool is closed")

    d = Dispatcher(ClosedPool(), width=1)
    assert _submit(d, "a", FOCUS).result() == {"fault": "cancelled"}
    assert _submit(d, "b", FOCUS).result() == {"fault": "cancelled"}
    assert d.counts() == (0, 0)


def test_an_edit_preempts_the_background_job_latest_in_the_order() -> None:
    from fxscope.engine.phases import phase_priority

    pool = FakePool()
    d = Dispatcher(pool, width=2)
    open_analyses = phase_priority(FOCUS, "analyses")
    background_fx = phase_priority(BACKGROUND, "fx")
    assert phase_priority(DEPENDENCY, "fx") < open_analyses < background_fx < phase_priority(BACKGROUND, "analyses")
    analyses = _submit(d, "analyses-of-background", phase_priority(BACKGROUND, "analyses"))
    fx = _submit(d, "fx-of-background", background_fx)  # newer, but earlier in the order
    assert pool.running() == ["analyses-of-background", "fx-of-background"]
    _submit(d, "edit-fx", FOCUS)
    assert pool.running() == ["fx-of-background", "edit-fx"]
    assert analyses.state == "waiting" and analyses.preemptions == 1 and not fx.preemptions
    mine = _submit(d, "analyses-of-open-file", open_analyses)  # waits, then goes before the background's
    pool.finish("edit-fx")
    assert pool.running() == ["fx-of-background", "analyses-of-open-file"]
    pool.finish("fx-of-background")
    pool.finish("analyses-of-open-file")
    assert pool.running() == ["analyses-of-background"]
    pool.finish("analyses-of-background")
    assert analyses.result() == {"value": "analyses-of-background"}  # re-run, never lost
    assert mine.result() == {"value": "analyses-of-open-file"}
