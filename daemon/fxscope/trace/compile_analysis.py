"""The compile analysis: run a model under ``torch.compile`` and report what Dynamo did with it.

The model runs with a backend that generates no code (it records each graph Dynamo captured and
runs it as is, as ``torch._dynamo.explain`` does), on real example inputs, twice: the first call
gives the graphs and every graph break (FXS601, at the user line, torch's own explanation and hints
from its graph-break registry), the second, with a batch one larger, gives the recompilations and
the guard that failed (FXS602). A forward that raises under torch.compile is FXS603.

>>> import torch
>>> class Net(torch.nn.Module):
...     def forward(self, x):
...         y = x * 2
...         if y.sum() > 0:
...             y = y + 1
...         return y * 3
>>> report = analyze_compile(Net(), {"x": torch.ones(2, 3)})
>>> report.graphs, report.breaks, sorted({f.code for f in report.findings})
(2, 1, ['FXS601', 'FXS602'])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn as nn

from fxscope.trace.classify import EXTERNAL_CAUSES
from fxscope.trace._torch_compat import compile_reason, graph_break_registry_path, qualified_name
from fxscope.trace.examples import batch_size, grow_batch
from fxscope.trace.findings import Finding, FindingSet
from fxscope.trace.frames import INTERNAL, USER, FrameClassifier, SourceLocation
from fxscope.trace.graph_breaks import BreakEvent, BreakRegistry, BreakText, DynamoLogCapture, Recompile, explain_reason
from fxscope.trace.stacks import StackFrame, frames_from_summaries, frames_from_traceback, place

__all__ = ["CompileReport", "analyze_compile", "compiled_graph_json"]

_registry: BreakRegistry | None = None


def registry() -> BreakRegistry:
    """torch's graph-break registry, read once per process."""
    global _registry
    if _registry is None:
        _registry = BreakRegistry.load(graph_break_registry_path())
    return _registry


@dataclass
class CompileReport:
    """What the compile analysis found: ``findings``, the ``graphs`` Dynamo captured on the first
    call (``compiled_graph_json`` entries), how many ``breaks`` (distinct places) and
    ``recompiles`` there were, and the batch sizes of the two calls."""

    findings: list[Finding] = field(default_factory=list)
    graph_json: list[dict[str, Any]] = field(default_factory=list)
    breaks: int = 0
    recompiles: int = 0
    batches: tuple[int | None, int | None] = (None, None)
    dynamic: bool | None = None

    @property
    def graphs(self) -> int:
        """Graphs captured by the first call."""
        return len(self.graph_json)

    def summary(self) -> dict[str, Any]:
        """``{"graphs", "breaks", "recompiles", "dynamic"}``: the target's compile summary."""
        return {"graphs": self.graphs, "breaks": self.breaks, "recompiles": self.recompiles,
                "dynamic": "auto" if self.dynamic is None else self.dynamic}


def analyze_compile(model: nn.Module, inputs: Mapping[str, Any], concrete: Mapping[str, Any] | None = None, *,
                    is_user_file: Callable[[str], bool] | None = None, dynamic: bool | None = None,
                    fallback: SourceLocation | None = None) -> CompileReport:
    """Run ``model(**inputs, **concrete)`` under ``torch.compile(dynamic=dynamic)`` with a backend
    that generates no code, then again with a batch one larger. ``fallback`` is where a finding
    goes when no model frame is involved (the target's class line)."""
    classifier = FrameClassifier(is_user_file)
    graphs: list[Any] = []

    def record(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(gm)
        return gm.forward

    import torch._dynamo  # noqa: F401 - torch.compile imports it lazily; the log capture needs it loaded

    torch.compiler.reset()
    report = CompileReport(dynamic=dynamic)
    found = FindingSet()
    kwargs = {**dict(concrete or {}), **dict(inputs)}
    larger = {**dict(concrete or {}), **grow_batch(inputs)}
    report.batches = (batch_size(inputs), batch_size(larger))
    compiled = torch.compile(model, backend=record, dynamic=dynamic)
    with DynamoLogCapture() as logs:
        try:
            compiled(**kwargs)
        except Exception as e:  # noqa: BLE001 - user code under torch.compile may raise anything
            found.add(_raised(e, classifier, fallback))
        first_call = len(logs.entries)
        first_graphs = list(graphs)
        if not found and report.batches[1] != report.batches[0]:
            try:
                compiled(**larger)
            except Exception:  # noqa: BLE001 - the second call only tells the recompilations
                pass
    events = _merged_events(logs.breaks(first_call), first_graphs)
    for same in _by_place(events):
        finding = _break_finding(same, classifier, fallback)
        if finding is not None:
            found.add(finding)
    report.breaks = sum(1 for f in found.items() if f.code == "FXS601")
    for group in _by_function(logs.recompiles(first_call)):
        found.add(_recompile_finding(group, report.batches, classifier, fallback))
    for group in _by_function(logs.recompiles(0, first_call)):  # a function called again within the forward
        found.add(_recompile_finding(group, (None, None), classifier, fallback))
    report.recompiles = sum(1 for f in found.items() if f.code == "FXS602")
    report.findings = found.items()
    names = {id(m): path for path, m in model.named_modules()}
    kinds = {(e.innermost.file, e.innermost.line): explain_reason(e.reason, registry()) for e in events}
    report.graph_json = [compiled_graph_json(gm, names, kinds) for gm in first_graphs]
    return report


def _merged_events(logged: list[BreakEvent], graphs: list[Any]) -> list[BreakEvent]:
    """The breaks of the graph_breaks log, then those of the compiled graphs' break reasons (what
    ``torch._dynamo.explain`` lists) at a place the log did not name. Where both name a place, the
    break's columns are the compiled graph's (the instruction's exact range, not the log's carets)."""
    explained: dict[tuple[str, int], BreakEvent] = {}
    for gm in graphs:
        reason = compile_reason(gm)
        if reason is None or not getattr(reason, "graph_break", False):
            continue
        frames = frames_from_summaries(getattr(reason, "user_stack", None) or ())
        if frames:
            event = BreakEvent(frames, str(getattr(reason, "reason", "")))
            explained.setdefault((frames[-1].file, frames[-1].line), event)
    events = []
    for event in logged:
        twin = explained.get((event.innermost.file, event.innermost.line))
        if twin is not None:
            exact = replace(event.innermost, column=twin.innermost.column, end_column=twin.innermost.end_column)
            event = BreakEvent((*event.frames[:-1], exact), event.reason)
        events.append(event)
    seen = {(e.innermost.file, e.innermost.line) for e in events}
    events += [e for where, e in explained.items() if where not in seen]
    return events


def _by_place(events: list[BreakEvent]) -> list[list[BreakEvent]]:
    """Breaks grouped by place: Dynamo logs a break again when it retries a frame (and when it
    then gives up on the function); one finding per place says it once."""
    groups: dict[tuple[str, int], list[BreakEvent]] = {}
    for event in events:
        groups.setdefault((event.innermost.file, event.innermost.line), []).append(event)
    return list(groups.values())


def _break_finding(same: list[BreakEvent], classifier: FrameClassifier,
                   fallback: SourceLocation | None) -> Finding | None:
    """The FXS601 finding of the breaks at one place: the first one's explanation, the types of the
    others, and whether torch.compile gave up on the function there."""
    event = same[0]
    placed = place(event.frames, classifier)
    texts = [explain_reason(e.reason, registry()) for e in same]
    text = texts[0]
    message = f"graph break: {text.message}"
    others = list(dict.fromkeys(t.gb_type for t in texts[1:] if t.gb_type and t.gb_type != text.gb_type))
    if others:
        message += f" (then: {'; '.join(others)})"
    if any(t.skips_function for t in texts):
        message += " torch.compile does not compile this function: it runs it eagerly."
    hint = " ".join(text.hints) or None
    if text.gb_id and text.url:
        hint = f"{hint} ({text.gb_id}: {text.url})" if hint else f"{text.gb_id}: {text.url}"
    if placed is None:
        if fallback is None:
            return None
        return Finding("FXS601", message, fallback, hint)
    return Finding("FXS601", message, placed.location, hint, placed.anchor, placed.related)


_RESUME_RE = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+)_at_(?P<line>\d+)$")


def _by_function(recompiles: list[Recompile]) -> list[list[Recompile]]:
    """Recompilations grouped by the user function they belong to: a function and the parts of it
    that Dynamo resumes after its graph breaks (``torch_dynamo_resume_in_forward_at_12``) are one
    group, the function's own entry (its ``def`` line) first."""
    groups: dict[tuple[str, str], list[Recompile]] = {}
    for r in recompiles:
        resumed = _RESUME_RE.match(r.function)
        groups.setdefault((r.file, resumed.group("name") if resumed else r.function), []).append(r)
    return [sorted(g, key=lambda r: _RESUME_RE.match(r.function) is not None) for g in groups.values()]


def _recompile_finding(group: list[Recompile], batches: tuple[int | None, int | None], classifier: FrameClassifier,
                       fallback: SourceLocation | None) -> Finding:
    first = group[0]
    resumed = _RESUME_RE.match(first.function)
    name = resumed.group("name") if resumed else first.function
    parts = len({r.function for r in group if _RESUME_RE.match(r.function)})
    what = f"`{name}`"
    if parts:
        what += f" ({'and ' if not resumed else ''}{parts} part{'s' if parts > 1 else ''} of it after graph breaks)"
    sizes = (f" for batch size {batches[1]} (first compiled for {batches[0]})" if None not in batches
             else " within the first call")
    guard = first.reasons[0] if first.reasons else "torch gave no guard failure"
    message = f"torch.compile recompiled {what}{sizes}: guard failed: {guard}"
    hint = ("Mark the batch dimension dynamic before the first call (`torch._dynamo.mark_dynamic(x, 0)`) or "
            "compile with `dynamic=True`, so one graph serves every batch size; keep sizes out of Python "
            "decisions (`if x.shape[0] == ...`).")
    here = StackFrame(first.file, first.line, first.function).location()
    kind = classifier.file_kind(first.file)
    if kind == USER or fallback is None:
        return Finding("FXS602", message, here, hint)
    if kind == INTERNAL:
        return Finding("FXS602", message, fallback, hint)
    return Finding("FXS602", message, here, hint, anchor=fallback)


def _raised(error: BaseException, classifier: FrameClassifier, fallback: SourceLocation | None) -> Finding:
    """FXS603 for a forward that raised under torch.compile: the original error (Dynamo wraps it:
    the innermost ``raise ... from`` cause), at the user frame Dynamo was tracing (its
    ``real_stack``) or else the traceback's."""
    cause = error
    while cause.__cause__ is not None and cause.__cause__ is not cause:
        cause = cause.__cause__
    detail = str(cause).strip().splitlines()
    text = explain_reason(str(cause), registry())  # Dynamo's own errors are written like graph breaks
    hint = (" ".join(text.hints) or None) if text.gb_type else None
    message = f"the forward raised under torch.compile: {text.message if text.gb_type else type(cause).__name__}"
    if detail and not text.gb_type:
        message += f": {detail[0]}"
    code = "FXS603"
    explained = next((e for e in (explain(error) for explain in EXTERNAL_CAUSES) if e is not None), None)
    if explained is not None:  # not the model's error (the worker's sandbox refused a write)
        code, message, hint = explained
    real = getattr(error, "real_stack", None)
    placed = place(frames_from_summaries(real), classifier) if real else None
    if placed is None:
        placed = place(frames_from_traceback(error.__traceback__), classifier)
    if placed is None:
        where = fallback or SourceLocation("<unknown>", 1)
        return Finding(code, message, where, hint)
    return Finding(code, message, placed.location, hint, placed.anchor, placed.related)


# ------------------------------------------------------------------------------ graphs

_FRAME_LINE_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def compiled_graph_json(gm: torch.fx.GraphModule, module_paths: Mapping[int, str],
                        breaks: Mapping[tuple[str, int], BreakText] | None = None) -> dict[str, Any]:
    """One captured graph as a report graph entry (``analysis: "compile"``): its nodes with their
    source line (from the node's stack trace) and module instance (from its module stack, by the
    module's identity in the model), and ``ends``, the graph break that ended it (file, line,
    reason: the break's type from ``breaks``, the explained breaks by place, when it is there)."""
    nodes = []
    for n in gm.graph.nodes:
        item: dict[str, Any] = {"name": n.name, "op": n.op, "target": _target(n.target),
                                "scope": "", "scope_type": "", "inputs": [i.name for i in n.all_input_nodes]}
        stack = n.meta.get("nn_module_stack") or {}
        if stack:
            key, (_, cls) = next(reversed(stack.items()))
            path = module_paths.get(int(key)) if str(key).isdigit() else None
            item["scope"] = path if path is not None else ""
            item["scope_type"] = f"{cls.__module__}.{cls.__qualname__}" if isinstance(cls, type) else str(cls)
        trace = n.meta.get("stack_trace")
        if isinstance(trace, str):
            places = _FRAME_LINE_RE.findall(trace)
            if places:
                item["file"], item["line"] = places[-1][0], int(places[-1][1])
        nodes.append(item)
    entry: dict[str, Any] = {"module": "", "analysis": "compile", "nodes": nodes}
    reason = compile_reason(gm)
    if reason is not None and getattr(reason, "graph_break", False):
        frames = frames_from_summaries(getattr(reason, "user_stack", None) or ())
        text = (breaks or {}).get((frames[-1].file, frames[-1].line)) if frames else None
        if text is None:
            text = explain_reason(str(getattr(reason, "reason", "")), registry())
        ends: dict[str, Any] = {"reason": text.gb_type or text.message}
        if frames:
            ends.update(file=frames[-1].file, line=frames[-1].line)
        entry["ends"] = ends
    return entry


def _target(target: Any) -> str:
    if isinstance(target, str):
        return target
    try:
        return qualified_name(target)
    except Exception:  # noqa: BLE001 - anything fx records: its plain name when it has no qualified one
        return getattr(target, "__name__", repr(target))
