"""torch.compile and torch.export on a class target fxscope built on its own: the example inputs
are inferred (:mod:`fxscope.job.inputs`) and the analyses run on them; a class without inputs
gets one info finding (FXS409) that says what was tried. fx keeps its meaning: it traces
symbolically, without the inferred inputs."""

from __future__ import annotations

from typing import Any, Callable

from fxscope.job.analyses import Analysis
from fxscope.job.inputs import class_factory, infer_inputs, specs_table
from fxscope.job.real_build import run_real_analyses
from fxscope.job.stages import JobState

__all__ = ["run_class_analyses"]

#: Lines of "what was tried" the info finding lists.
_MAX_TRIED = 6


def run_class_analyses(cls: Any, analyses: list[Analysis], report: dict[str, Any], state: JobState,
                       fx_ran: bool) -> dict[str, Any]:
    """``report`` with ``analyses`` (those on real tensors) run on inferred inputs, and the
    ``inputs`` they ran on; or with the FXS409 finding when no candidate ran eagerly."""
    from fxscope.model.codes import CODES, finding_dict

    context = state.context
    target = context.job.target
    factory: Callable[[], Any] = class_factory(cls, state.build, context.is_user_file)
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
        report["findings"].append(finding_dict("FXS409", message, hint=CODES["FXS409"].help, **context.fallback))
        if not fx_ran:
            report["status"] = "skipped"
        return report
    report["inputs"] = inference.inputs.to_json()
    return run_real_analyses(factory, analyses, report, state, fx_ran, inputs=specs_table(inference.inputs))
