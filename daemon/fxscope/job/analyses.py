"""The analyses a job runs, as plug-ins: a name, where its model is built, the options it declares,
and ``run(built, inputs, context) -> AnalysisResult`` whose summary is an
:class:`~fxscope.model.analysis.AnalysisSummary` (a headline, ok or not, counts, details) that every
front end renders without knowing the analysis.

:data:`REGISTRY` holds fx (the tracer, on a model built on the meta device), compile and export
(torch.compile and torch.export, on real tensors on the CPU), in the order their findings are
reported. **Every analysis gets a model of its own**, built the same way: an analysis that runs
the model (torch.compile runs it twice) may change its state (lazy initialisation, a lazily
copied target network), and the next one must see the model as its constructor left it.

A workspace adds its own analyses with ``plugins = ["pkg.module"]`` in ``[tool.fxscope]``: the
job imports those modules, which call :func:`register`; ``analyses = [...]`` then names them.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Protocol

from fxscope.job.failures import error_finding
from fxscope.job.trace_job import TraceJob
from fxscope.model.analysis import AnalysisSummary
from fxscope.model.finding import Finding
from fxscope.model.location import Location
from fxscope.model.outcome import Graphs, ModuleInfo, TargetOutcome
from fxscope.project.config import Config, OptionValue
from fxscope.trace.frames import SourceLocation

__all__ = ["Analysis", "AnalysisContext", "AnalysisResult", "Option", "REGISTRY", "findings_of", "load_plugins",
           "register", "selected"]


@dataclass(frozen=True)
class Option:
    """An option an analysis declares: its ``name`` in ``[tool.fxscope.analysis.<analysis>]``, its
    ``default`` and the values it accepts (``choices``; empty: any value of the default's type)."""

    name: str
    default: OptionValue
    choices: tuple[OptionValue, ...] = ()
    help: str = ""

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is a valid setting of this option."""
        if self.choices:
            return any(value == c and type(value) is type(c) for c in self.choices)
        return type(value) is type(self.default) or (isinstance(self.default, float) and type(value) is int)


@dataclass
class AnalysisContext:
    """What an analysis may use besides its model: the job, which files are the workspace's,
    where a failure without a workspace frame is reported, and the result's warnings (appended to)."""

    job: TraceJob
    is_user_file: Callable[[str], bool]
    fallback: Location
    warnings: list[str] = field(default_factory=list)

    @property
    def where(self) -> SourceLocation:
        """The fallback location as the tracing core's :class:`SourceLocation`."""
        return SourceLocation(self.fallback.file, self.fallback.line)

    def settings(self, analysis: Analysis) -> Mapping[str, OptionValue]:
        """``analysis``'s options as configured (a table ``[tool.fxscope.analysis.<name>]``, or
        the older top-level keys): its defaults, overridden by the valid settings; an unknown
        option or an invalid value is a warning, and the default is used."""
        out = {o.name: o.default for o in analysis.options}
        declared = {o.name: o for o in analysis.options}
        for key, value in self.job.config.analysis_settings(analysis.name).items():
            option = declared.get(key)
            problem = (f"unknown option {key!r} of the {analysis.name} analysis (it has "
                       f"{', '.join(map(repr, declared)) or 'none'})" if option is None else
                       None if option.accepts(value) else
                       f"the {analysis.name} analysis's option {key!r} must be "
                       f"{' or '.join(map(repr, option.choices)) or type(option.default).__name__}, got {value!r}")
            if problem is None:
                out[key] = value
            elif problem not in self.warnings:
                self.warnings.append(problem)
        return MappingProxyType(out)


@dataclass
class AnalysisResult:
    """One analysis's answer: its findings (absolute paths), the graphs it captured (schema
    ``graphs[]`` JSON: thousands of nodes are read into typed ones only where shown), its summary
    (None: it has none), whether the target failed by it (decides the status when fx did not
    run), and fx's whole outcome (status, modules, nodes, findings, graphs)."""

    findings: tuple[Finding, ...] = ()
    graphs: tuple[Mapping[str, Any], ...] = ()
    summary: AnalysisSummary | None = None
    failed: bool = False
    outcome: TargetOutcome | None = None
    #: What the analysis itself raised (its files are the result's dependencies too).
    error: BaseException | None = None


class Analysis(Protocol):
    """An analysis of one built model: a ``name`` (the key of its summary, of its options' table
    and in ``analyses = [...]``), the ``options`` it declares, ``device``: where the job builds its
    model, ``"meta"`` (no data: the tracer) or ``"cpu"`` (real tensors, torch's generator seeded);
    ``warm_up`` runs once in the zygote, before any fork, when the workspace uses it (imports only,
    no torch operator)."""

    name: str
    device: str
    options: tuple[Option, ...]

    def warm_up(self) -> None:
        """Import what :meth:`run` needs (called before forking)."""
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


def load_plugins(config: Config, warnings: list[str]) -> None:
    """Import the configured ``plugins`` (modules that :func:`register` analyses); one that fails
    to import is a warning."""
    for name in config.plugins:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a plug-in is workspace code
            problem = f"analysis plug-in {name!r} could not be imported: {type(e).__name__}: {e}"
            if problem not in warnings:
                warnings.append(problem)


def selected(config: Config, target_id: str, warnings: list[str] | None = None) -> list[Analysis]:
    """The registered analyses ``config`` runs for the target, in registry order; a configured
    name no analysis has is a warning (in ``warnings``)."""
    wanted = config.analyses_for(target_id)
    if warnings is not None:
        for name in wanted:
            problem = f"no analysis is named {name!r} (registered: {', '.join(REGISTRY)}; see 'plugins')"
            if name not in REGISTRY and problem not in warnings:
                warnings.append(problem)
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


def _pluralise(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class FxAnalysis:
    """torch.fx symbolic tracing, module by module (:func:`fxscope.trace.analysis.analyze`). Its
    answer is the target's own status, modules and graphs: it has no summary. Leaf modules and
    wrapped functions are the workspace's ``leaf-modules`` and ``wrap-functions``."""

    name = "fx"
    device = "meta"
    options: tuple[Option, ...] = ()

    def warm_up(self) -> None:
        import fxscope.trace.analysis  # noqa: F401

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.analysis import analyze, graph_to_json

        config = context.job.config
        leaf_types = tuple(_imported(tuple(config.leaf_modules), "leaf-modules", context.warnings))
        wrap_functions = tuple(_imported(tuple(config.wrap_functions), "wrap-functions", context.warnings))
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
            return AnalysisResult((finding,), outcome=TargetOutcome("error", findings=(finding,)), failed=True, error=e)
        findings = tuple(Finding.from_json(f.to_json()) for f in report.findings)
        graphs = [{"module": path, "nodes": graph_to_json(g)} for path, _, g in report.collection.graphs()]
        outcome = TargetOutcome(report.status, report.nodes, tuple(ModuleInfo.from_json(m) for m in report.modules),
                                findings, Graphs(json=graphs))
        return AnalysisResult(findings, tuple(graphs), outcome=outcome)


class CompileAnalysis:
    """Where torch.compile breaks the graph, and the graphs it captured (on a model of its own,
    built on the CPU; :func:`fxscope.trace.pt2.run_compile`). ``dynamic``: torch.compile's
    (``"auto"``: its automatic default)."""

    name = "compile"
    device = "cpu"
    options: tuple[Option, ...] = (Option("dynamic", "auto", ("auto", True, False), "torch.compile(dynamic=...)"),)

    def warm_up(self) -> None:
        from fxscope.trace.pt2 import warm_up

        warm_up()

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.pt2 import Pt2Options, run_compile

        dynamic = context.settings(self)["dynamic"]
        part = run_compile(built, Pt2Options((self.name,), None if dynamic == "auto" else bool(dynamic)),
                           is_user_file=context.is_user_file, fallback=context.where)
        raw = part["compile"]
        counts = {"graphs": int(raw["graphs"]), "breaks": int(raw["breaks"]), "recompiles": int(raw["recompiles"])}
        headline = (f"{_pluralise(counts['graphs'], 'graph')}, {_pluralise(counts['breaks'], 'graph break')}, "
                    f"{_pluralise(counts['recompiles'], 'recompilation')}")
        summary = AnalysisSummary(counts["breaks"] == 0 and counts["recompiles"] == 0, headline, MappingProxyType(counts),
                                  MappingProxyType({"dynamic": raw["dynamic"]}), float(raw["duration_ms"]))
        return AnalysisResult(findings_of(part["findings"]), tuple(part["graphs"]), summary)


class ExportAnalysis:
    """Whether torch.export captures the model whole, and where it does not (on a model of its own,
    built on the CPU; :func:`fxscope.trace.pt2.run_export`). ``strict``: Dynamo's strict export;
    ``dynamic-batch``: the first dimension of every input is a ``torch.export.Dim``."""

    name = "export"
    device = "cpu"
    options: tuple[Option, ...] = (Option("strict", False, help="torch.export.export(strict=...)"),
               Option("dynamic-batch", False, help="export with a dynamic batch dimension"))

    def warm_up(self) -> None:
        from fxscope.trace.pt2 import warm_up

        warm_up()

    def run(self, built: Any, inputs: Mapping[str, Any] | None, context: AnalysisContext) -> AnalysisResult:
        from fxscope.trace.pt2 import Pt2Options, run_export

        settings = context.settings(self)
        options = Pt2Options((self.name,), strict=bool(settings["strict"]), dynamic_batch=bool(settings["dynamic-batch"]))
        part = run_export(built, options, is_user_file=context.is_user_file, fallback=context.where)
        raw = part["export"]
        exported, problems = bool(raw["exported"]), int(raw["problems"])
        headline = "exported" if exported else f"failed ({_pluralise(problems, 'problem')})"
        summary = AnalysisSummary(exported, headline, MappingProxyType({"problems": problems}),
                                  MappingProxyType({"strict": bool(raw["strict"]),
                                                    "dynamic_batch": bool(raw["dynamic_batch"])}),
                                  float(raw["duration_ms"]))
        return AnalysisResult(findings_of(part["findings"]), (), summary, failed=not exported)


def findings_of(raw: Iterable[Mapping[str, Any] | Finding]) -> tuple[Finding, ...]:
    """Report-schema finding dicts (what the tracing core writes) as typed findings."""
    return tuple(f if isinstance(f, Finding) else Finding.from_json(f) for f in raw)


for _analysis in (FxAnalysis(), CompileAnalysis(), ExportAnalysis()):
    register(_analysis)
