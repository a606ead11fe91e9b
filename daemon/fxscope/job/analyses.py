"""The analyses a job runs, as plug-ins: a name, where its model is built, its options, and
``run(built, inputs, context) -> AnalysisResult``.

:data:`REGISTRY` holds fx (the tracer, on a model built on the meta device), compile and export
(torch.compile and torch.export, on real tensors on the CPU), in the order their findings are
reported. **Every analysis gets a model of its own**, built the same way: an analysis that runs
the model (torch.compile runs it twice) may change its state (lazy initialisation, a lazily
copied target network), and the next one must see the model as its constructor left it.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from fxscope.job.failures import error_finding
from fxscope.job.trace_job import TraceJob
from fxscope.project.config import Config
from fxscope.trace.frames import SourceLocation

__all__ = ["Analysis", "AnalysisContext", "AnalysisResult", "REGISTRY", "register", "selected"]


@dataclass
class AnalysisContext:
    """What an analysis may use besides its model: the job, which files are the workspace's,
    where a failure without a workspace frame is reported, and the result's warnings (appended to)."""

    job: TraceJob
    is_user_file: Callable[[str], bool]
    fallback: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def where(self) -> SourceLocation:
        """The fallback location as a :class:`SourceLocation`."""
        return SourceLocation(str(self.fallback["file"]), max(int(self.fallback["line"]), 1))


@dataclass
class AnalysisResult:
    """One analysis's answer: findings (report-schema dicts), captured graphs, its summary (the
    value of its name in the result; None: it has none), whether the target failed by it (when it
    is the analysis that decides the status), and fx's whole trace report body."""

    findings: list[dict[str, Any]] = field(default_factory=list)
    graphs: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    failed: bool = False
    report: dict[str, Any] | None = None
    #: What the analysis itself raised (its files are the result's dependencies too).
    error: BaseException | None = None


class Analysis(Protocol):
    """An analysis of one built model. ``device``: where the job builds its model, ``"meta"``
    (no data: the tracer) or ``"cpu"`` (real tensors, torch's generator seeded)."""

    name: str
    device: str

    def options(self, config: Config) -> object:
        """This analysis's settings from the configuration."""
        ...

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        """Analyse ``built`` (it has ``model`` and ``concrete_args``), a model built for this
        analysis alone, with its example ``inputs``."""
        ...


#: name -> analysis, in the order the analyses run and their findings are reported.
REGISTRY: dict[str, Analysis] = {}


def register(analysis: Analysis) -> Analysis:
    """Add ``analysis`` to :data:`REGISTRY` (replacing one of the same name)."""
    REGISTRY[analysis.name] = analysis
    return analysis


def selected(config: Config, target_id: str) -> list[Analysis]:
    """The registered analyses ``config`` runs for the target, in registry order."""
    wanted = config.analyses_for(target_id)
    return [a for name, a in REGISTRY.items() if name in wanted]


def _imported(entries: tuple[str, ...], kind: str, warnings: list[str]) -> list[Any]:
    """``pkg.mod:name`` (or ``pkg.mod.name``) entries imported; those that fail become warnings."""
    found = []
    for entry in entries:
        module_name, sep, attr = entry.partition(":")
        if not sep:
            module_name, _, attr = entry.rpartition(".")
        try:
            if not module_name or not attr:
                raise ValueError("expected 'package.module:function'")
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            if kind == "leaf-modules" and not isinstance(obj, type):
                raise TypeError(f"{entry} is not a class")
            if kind == "wrap-functions" and not callable(obj):
                raise TypeError(f"{entry} is not callable")
            found.append(obj)
        except Exception as e:  # noqa: BLE001 - importing a configured entry may raise anything: a warning
            problem = f"{kind} entry {entry!r} could not be imported: {type(e).__name__}: {e}"
            if problem not in warnings:
                warnings.append(problem)
    return found


@dataclass(frozen=True)
class FxOptions:
    """``leaf_modules`` (classes traced as one call) and ``wrap_functions`` (functions recorded as
    one node), as configured."""

    leaf_modules: tuple[str, ...]
    wrap_functions: tuple[str, ...]


class FxAnalysis:
    """torch.fx symbolic tracing, module by module (:func:`fxscope.trace.analysis.analyze`)."""

    name = "fx"
    device = "meta"

    def options(self, config: Config) -> FxOptions:
        return FxOptions(tuple(config.leaf_modules), tuple(config.wrap_functions))

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.analysis import analyze

        options = self.options(context.job.config)
        leaf_types = tuple(_imported(options.leaf_modules, "leaf-modules", context.warnings))
        wrap_functions = tuple(_imported(options.wrap_functions, "wrap-functions", context.warnings))
        target = context.job.target
        concrete = {**dict(target.concrete_args), **(built.concrete_args or {})}
        if inputs is not None and target.inputs == "auto":
            from fxscope.trace.inputs import default_concrete_args

            concrete = {**default_concrete_args(built.model), **concrete}
        job = context.job
        try:
            report = analyze(built.model, concrete or None, is_user_file=context.is_user_file,
                             leaf_types=leaf_types, sites=built.sites, extra_findings=built.findings,
                             inputs=inputs, wrap_functions=wrap_functions,
                             target_site=context.where if job.fallback_file else None)
        except Exception as e:  # noqa: BLE001 - a bug in the tracer itself must still give a located answer
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            finding = error_finding("FXS107", f"internal tracing error: {detail}", e, context.is_user_file,
                                    context.fallback)
            return AnalysisResult([finding], report={"status": "error", "modules": [], "nodes": 0,
                                                     "findings": [finding]}, failed=True, error=e)
        body = report.to_json(graphs=True)
        return AnalysisResult(body.get("findings") or [], body.get("graphs") or [], report=body)


class _Pt2Analysis:
    """Shared by torch.compile's and torch.export's analyses: options from the configuration."""

    name = ""
    device = "cpu"

    def options(self, config: Config) -> Any:
        from fxscope.trace.pt2 import Pt2Options

        return Pt2Options((self.name,), config.compile_dynamic, config.export_strict, config.export_dynamic_batch)


class CompileAnalysis(_Pt2Analysis):
    """Where torch.compile breaks the graph, and the graphs it captured."""

    name = "compile"

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.pt2 import run_compile

        part = run_compile(built, self.options(context.job.config), is_user_file=context.is_user_file,
                           fallback=context.where)
        return AnalysisResult(part["findings"], part["graphs"], part["compile"])


class ExportAnalysis(_Pt2Analysis):
    """Whether torch.export captures the model whole, and where it does not."""

    name = "export"

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.pt2 import run_export

        part = run_export(built, self.options(context.job.config), is_user_file=context.is_user_file,
                          fallback=context.where)
        return AnalysisResult(part["findings"], [], part["export"], failed=part["export"].get("exported") is False)


for _analysis in (FxAnalysis(), CompileAnalysis(), ExportAnalysis()):
    register(_analysis)
