"""A workspace's own analysis, registered as a plug-in (``plugins = ["fxs_params"]``): it counts the
model's parameters against a ``limit`` option from ``[tool.fxscope.analysis.params]``. fxscope's
model, engine, report and session code know nothing about it."""

from fxscope.job.analyses import AnalysisResult, Option, register
from fxscope.model import AnalysisSummary


class ParamCount:
    name = "params"
    device = "cpu"
    options = (Option("limit", 1000, help="the most parameters a model may have"),)

    def warm_up(self) -> None:
        pass

    def run(self, built, inputs, context):  # type: ignore[no-untyped-def]
        limit = context.settings(self)["limit"]
        count = sum(p.numel() for p in built.model.parameters())
        summary = AnalysisSummary(count <= limit, f"{count} parameters (limit {limit})", {"parameters": count},
                                  {"limit": limit})
        return AnalysisResult(summary=summary)


register(ParamCount())
