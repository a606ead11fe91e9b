"""The export analysis: ``torch.export.export`` a model and report why it fails, at the user's line.

Non-strict export runs the model's Python with symbolic values; strict export (an option)
captures it with Dynamo. On failure the error torch.export raised is one finding, located at the
innermost model frame: a guard on a value computed from tensor data is FXS701 (with the
``torch.cond`` / ``torch._check`` fix), a construct strict export cannot capture FXS702 (torch's
own explanation and hints), a dynamic dimension (``Dim``) that was specialised FXS703 (torch's
suggested fix), anything else FXS704. ``torch.export.draft_export`` then lists every other problem
of the same run, as fxscope does for fx.

>>> import torch
>>> class Net(torch.nn.Module):
...     def forward(self, x):
...         if x.sum() > 0:
...             return x + 1
...         return x - 1
>>> report = analyze_export(Net(), {"x": torch.ones(2, 3)}, draft=False)
>>> report.exported, [f.code for f in report.findings], "torch._check" in report.findings[0].hint
(False, ['FXS701'], True)
>>> analyze_export(torch.nn.Linear(3, 3), {"input": torch.ones(2, 3)}).exported
True
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn

from fxscope.trace._torch_compat import (
    draft_export_filenames,
    draft_export_report,
    export_error_kinds,
    is_constraint_user_error,
)
from fxscope.trace.classify import EXTERNAL_CAUSES
from fxscope.trace.compile_analysis import registry
from fxscope.trace.examples import batch_size
from fxscope.trace.findings import Finding, FindingSet
from fxscope.trace.frames import FrameClassifier, SourceLocation
from fxscope.trace.graph_breaks import explain_reason, parse_stack
from fxscope.trace.stacks import StackFrame, frames_from_summaries, frames_from_traceback, place

__all__ = ["ExportReport", "analyze_export"]


@dataclass
class ExportReport:
    """What the export analysis found: whether the model ``exported``, in ``strict`` mode, with a
    dynamic batch (``dynamic_batch``), and the ``findings`` (the error export raised first, then
    every other problem ``draft_export`` listed)."""

    exported: bool
    strict: bool = False
    dynamic_batch: bool = False
    findings: list[Finding] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """``{"exported", "strict", "dynamic_batch", "problems"}``: the target's export summary."""
        return {"exported": self.exported, "strict": self.strict, "dynamic_batch": self.dynamic_batch,
                "problems": len(self.findings)}


def analyze_export(model: nn.Module, inputs: Mapping[str, Any], concrete: Mapping[str, Any] | None = None, *,
                   is_user_file: Callable[[str], bool] | None = None, strict: bool = False,
                   dynamic_batch: bool = False, draft: bool = True,
                   fallback: SourceLocation | None = None) -> ExportReport:
    """Export ``model`` with ``inputs`` and ``concrete`` as keyword arguments (``dynamic_batch``:
    dimension 0 of every batched input is a ``torch.export.Dim``); on failure, and with ``draft``,
    list every problem with ``torch.export.draft_export``. ``fallback`` is where a finding goes when
    no model frame is involved (the target's class line)."""
    classifier = FrameClassifier(is_user_file)
    kwargs = {**dict(concrete or {}), **dict(inputs)}
    shapes = _dynamic_shapes(kwargs) if dynamic_batch else None
    report = ExportReport(exported=True, strict=strict, dynamic_batch=dynamic_batch)
    try:
        torch.export.export(model, (), kwargs, dynamic_shapes=shapes, strict=strict)
        return report
    except Exception as e:  # noqa: BLE001 - torch.export may raise anything: that error is the finding
        report.exported = False
        error, located = _error_finding(e, classifier, fallback)
    found = [error]
    draft_export = getattr(torch.export, "draft_export", None)
    if draft and callable(draft_export):
        try:
            program = draft_export(model, (), kwargs, dynamic_shapes=shapes, strict=strict)
        except Exception:  # noqa: BLE001 - draft_export failing adds nothing to that error
            program = None
        for finding in _draft_findings(draft_export_report(program), classifier, fallback):
            if not located and finding.code == error.code and found[0] is error:
                # the error has no line of its own (a constraint checked after tracing): it is this one
                found[0] = Finding(error.code, error.message, finding.location, error.hint or finding.hint,
                                   finding.anchor, finding.related)
                continue
            if not any((f.code, f.location.file, f.location.line) == (finding.code, finding.location.file,
                                                                     finding.location.line) for f in found):
                found.append(finding)
    merged = FindingSet()
    merged.extend(found)
    report.findings = merged.items()
    return report


def _dynamic_shapes(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Dimension 0 of every tensor whose first dimension is the batch size as ``Dim("batch")``."""
    batch = batch_size(kwargs)
    dim = torch.export.Dim("batch")
    return {name: ({0: dim} if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == batch else None)
            for name, v in kwargs.items()}


def _chain(error: BaseException, *, context: bool) -> list[BaseException]:
    """The error and the errors it was raised from (``raise ... from``; with ``context``, also
    those it was raised while handling), innermost last."""
    out: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(out) < 8:
        out.append(current)
        current = current.__cause__ or (current.__context__ if context else None)
    return out


def _kind(error: BaseException) -> str:
    """FXS701 (data-dependent), FXS703 (constraint violation), FXS702 (unsupported) or FXS704."""
    kinds = export_error_kinds()
    handled = _chain(error, context=True)  # strict export re-raises a guard error while handling it
    if any(isinstance(e, kinds["data_dependent"]) for e in handled):
        return "FXS701"
    if any(isinstance(e, kinds["constraint"]) or is_constraint_user_error(e) for e in handled):
        return "FXS703"
    if any(isinstance(e, kinds["unsupported"]) for e in _chain(error, context=False)):
        text = explain_reason(str(error), registry())
        return "FXS701" if (text.gb_type or "").startswith("Data-dependent") else "FXS702"
    return "FXS704"


def _frames(error: BaseException) -> tuple[StackFrame, ...]:
    """The user stack of an export error: Dynamo's (strict export), else the traceback's, else the
    ``from user code:`` section of the message."""
    real = getattr(error, "real_stack", None)
    frames = frames_from_summaries(real) if real else ()
    if not frames:
        frames = frames_from_traceback(error.__traceback__)
    text = str(error)
    at = text.find("from user code:")
    if at >= 0 and not frames:
        frames = tuple(parse_stack(text[at:]))
    return frames


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


_SUGGESTED_RE = re.compile(r"Suggested fixes:\s*\n(?P<fixes>(?:[ \t]+\S.*\n?)+)")


def _error_finding(error: BaseException, classifier: FrameClassifier,
                   fallback: SourceLocation | None) -> tuple[Finding, bool]:
    """The finding of the error export raised, and whether it is located at model code."""
    code = _kind(error)
    placed = place(_frames(error), classifier)
    where = placed.location if placed is not None else (fallback or SourceLocation("<unknown>", 1))
    hint: str | None
    explained = next((e for e in (explain(error) for explain in EXTERNAL_CAUSES) if e is not None), None)
    if explained is not None:  # not the model's error (the worker's sandbox refused a write or a connection)
        code, message, hint = explained
    elif code == "FXS701":
        expression = _first_line(str(error))
        text = explain_reason(str(error), registry())
        detail = text.message if text.gb_type else expression
        message = f"torch.export needs a value that depends on tensor data: {detail}"
        hint = _data_dependent_hint(where)
    elif code == "FXS702":
        text = explain_reason(str(error), registry())
        message = f"torch.export (strict) cannot capture this: {text.message}"
        hint = " ".join(text.hints) or None
    elif code == "FXS703":
        detail = next((line.strip()[2:] for line in str(error).splitlines() if line.strip().startswith("- ")),
                      _first_line(str(error)))
        message = f"torch.export specialised a dynamic dimension: {detail}"
        fixes = _SUGGESTED_RE.search(str(error) + "\n")
        hint = ("Declare the dimension as torch suggests: " + "; ".join(
            line.strip() for line in fixes.group("fixes").splitlines() if line.strip())) if fixes else None
    else:
        message = f"torch.export failed: {type(error).__name__}: {_first_line(str(error))}"
        hint = None
    if placed is None:
        return Finding(code, message, where, hint), False
    return Finding(code, message, placed.location, hint, placed.anchor, placed.related), True


_BRANCH_RE = re.compile(r"^\s*(if|elif|while|assert)\b|\bif\b.*\belse\b")


def _data_dependent_hint(where: SourceLocation) -> str:
    """The fix for a data-dependent guard at ``where``: ``torch.cond`` for a branch, else
    ``torch._check``."""
    source = linecache.getline(where.file, where.line)
    if _BRANCH_RE.search(source):
        return ("This branch depends on tensor values: express it with `torch.cond(pred, true_fn, false_fn, "
                "operands)` so export traces both sides, or, when the condition always holds for your inputs, "
                "assert it before the line with `torch._check(...)`.")
    return ("export cannot know this value: state what holds with `torch._check(...)` before the line "
            "(`torch._check_is_size(n)` for a size, `torch._check(n <= x.shape[0])` for a bound), or keep the "
            "computation in tensor operations instead of Python numbers.")


def _draft_findings(report: Any, classifier: FrameClassifier, fallback: SourceLocation | None) -> list[Finding]:
    """Findings for the failures of a ``draft_export`` report (None: no report)."""
    if report is None:
        return []
    files: dict[Any, str] = draft_export_filenames(report)  # a file's number, or a name already
    out = []
    for failure in getattr(report, "failures", None) or ():
        kind = getattr(getattr(failure, "failure_type", None), "name", "")
        data = getattr(failure, "data", None) or {}
        frames = tuple(StackFrame(str(files.get(f.get("filename"), f.get("filename"))), int(f.get("line") or 0),
                                  str(f.get("name") or ""))
                       for f in data.get("user_stack") or () if isinstance(f, dict) and int(f.get("line") or 0) > 0)
        placed = place(frames, classifier)
        where = placed.location if placed is not None else fallback
        if where is None:
            continue
        anchor = placed.anchor if placed is not None else None
        related = placed.related if placed is not None else []
        if kind == "DATA_DEPENDENT_ERROR":
            seen = int(data.get("occurrences") or 1)
            times = f", {seen} times" if seen > 1 else ""
            message = (f"torch.export needs a value that depends on tensor data: `{data.get('expr')}` "
                       f"(draft_export assumed {data.get('result')}{times})")
            out.append(Finding("FXS701", message, where, _data_dependent_hint(where), anchor, related))
        elif kind == "GUARD_ADDED":
            message = f"torch.export specialised a dynamic dimension: guard `{data.get('expr')}` was added"
            out.append(Finding("FXS703", message, where, None, anchor, related))
        elif kind in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL"):
            what = "has no fake kernel" if kind == "MISSING_FAKE_KERNEL" else "has a fake kernel that disagrees with it"
            reason = f": {data.get('reason')}" if data.get("reason") else ""
            message = f"torch.export failed: the custom op torch.ops.{data.get('op')} {what}{reason}"
            out.append(Finding("FXS704", message, where, None, anchor, related))
    return out
