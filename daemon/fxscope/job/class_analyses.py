"""torch.compile and torch.export on a class target fxscope built on its own: the example inputs
are inferred (:mod:`fxscope.job.inputs`) and the analyses run on them; a class without inputs
gets one info finding (FXS409) that says what was tried. fx keeps its meaning: it traces
symbolically, without the inferred inputs."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Callable

from fxscope.job.analyses import Analysis
from fxscope.job.inputs import class_factory, infer_inputs, specs_table
from fxscope.job.real_build import run_real_analyses
from fxscope.job.stages import JobState
from fxscope.model.codes import CODES
from fxscope.model.finding import Finding
from fxscope.model.outcome import TargetOutcome

__all__ = ["run_class_analyses"]

#: Lines of "what was tried" the info finding lists.
_MAX_TRIED = 6
#: Share of the job's timeout after which the analyses on inferred inputs stop (fx ran first; its
#: result is kept, and reporting it needs the rest).
_BUDGET = 0.8


class _OutOfTime(BaseException):
    """The job's time for the analyses on inferred inputs ran out (not an Exception: model code
    that catches every Exception does not swallow it)."""


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`_OutOfTime` in this (the job's main) thread after ``seconds``."""
    if seconds is None:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_class_analyses(cls: Any, analyses: list[Analysis], outcome: TargetOutcome, state: JobState,
                       fx_ran: bool) -> TargetOutcome:
    """``outcome`` with ``analyses`` (those on real tensors) run on inferred inputs, and the
    ``inputs`` they ran on; or with the FXS409 finding when no candidate ran eagerly. They stop
    at :data:`_BUDGET` of the job's timeout (a warning; what finished is kept)."""
    context = state.context
    names = " and ".join(a.name for a in analyses)
    timeout = context.job.timeout
    left = None if not timeout else timeout * _BUDGET - (time.monotonic() - state.started)
    if left is not None and left < 1.0:
        context.warnings.append(f"{names} analysis skipped: fx used the job's time (timeout {timeout:g} s)")
        return outcome
    factory: Callable[[], Any] = class_factory(cls, state.build, context.is_user_file)
    try:
        with _deadline(left):
            return _run(factory, analyses, outcome, state, fx_ran)
    except _OutOfTime:
        context.warnings.append(f"{names} analysis stopped: the job's time ran out (timeout {timeout:g} s); "
                                f"fx's result and what finished are kept")
        return outcome


def _run(factory: Callable[[], Any], analyses: list[Analysis], outcome: TargetOutcome, state: JobState,
         fx_ran: bool) -> TargetOutcome:
    context = state.context
    target = context.job.target
    inference = infer_inputs(factory, target.input_hints, context.is_user_file)
    if inference.inputs is None:
        names = " and ".join(a.name for a in analyses)
        signature = f"forward({', '.join(inference.params)})" if inference.params else "its forward"
        message = (f"no example inputs for `{target.qualname}`'s {signature} that its eager forward runs on: "
                   f"the {names} analysis did not run")
        tried = inference.tried
        if tried:
            shown = "; ".join(tried[:_MAX_TRIED]) + (f"; and {len(tried) - _MAX_TRIED} more" if len(tried) > _MAX_TRIED
                                                     else "")
            message += f"; tried {shown}"
        else:
            message += ("; no forward call on literal tensors in the repository, no library convention, no shape "
                        "annotation, and no first layer that says the input's shape")
        code = CODES["FXS409"]
        finding = Finding("FXS409", code.severity, message, context.fallback, code.help)
        return replace(outcome, status=outcome.status if fx_ran else "skipped",
                       findings=outcome.findings + (finding,))
    outcome = replace(outcome, inputs=inference.inputs)
    outcome = run_real_analyses(factory, analyses, outcome, state, fx_ran, inputs=specs_table(inference.inputs))
    ran = tuple(a.name for a in analyses if a.name in outcome.analyses)  # those that ran on the inputs
    return replace(outcome, inputs_for=ran)
