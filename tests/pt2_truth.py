"""What the installed torch itself says about a corpus module: the oracle of the agreement tests.

Run as a script in a fresh process, with the corpus module's directory first on ``sys.path``::

    python pt2_truth.py compile compile_breaks      # torch._dynamo.explain + TORCH_LOGS, per model
    python pt2_truth.py export export_failures [--strict] [--dynamic-batch]

It prints one JSON object: per model class, what torch reported. The models and inputs are built
the way fxscope's analyses document it (torch's generator seeded with 0 before the model is built;
the input ``x`` of shape [2, 4] drawn from ``torch.Generator().manual_seed(0)``; a second call with
its first row appended), with plain torch only: nothing of fxscope is imported here.

For compile, each model first runs under ``torch.compile(backend="eager")`` with
``TORCH_LOGS=graph_breaks,recompiles`` (set by the caller; the records go to stderr between marker
lines, and are parsed here: the user stack printed with each break and the "Recompiling function"
lines), then under ``torch._dynamo.explain`` (graph count and break reasons). For export, each
model goes through ``torch.export.export`` (the error it raises) and ``torch.export.draft_export``
(every problem it lists).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import sys
import traceback
from typing import Any

import torch

MARK = "@@@fxscope-truth"
_RECORD_RE = re.compile(r"(Graph break in user code at|Graph break \(user stack suppressed[^)]*\) in user code at"
                        r"|Graph break: torch\.compile cannot properly resume)")
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')
_AT_RE = re.compile(r"in user code at (?P<file>\S+):(?P<line>\d+)")
_RECOMPILE_RE = re.compile(r"Recompiling function (?P<name>\S+) in (?P<file>\S+):(?P<line>\d+)")


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn((2, 4), generator=torch.Generator().manual_seed(0))
    return x, torch.cat([x, x[:1]])


def _model(cls: type) -> torch.nn.Module:
    torch.manual_seed(0)
    return cls()


def _innermost(frames: list[tuple[str, int]], file: str) -> int | None:
    lines = [line for f, line in frames if os.path.abspath(f) == file]
    return lines[-1] if lines else None


def _say(text: str) -> None:
    sys.stdout.flush()
    print(text, file=sys.stderr, flush=True)


def compile_truth(module: Any) -> dict[str, Any]:
    """Per model: explain's graph count and break places, and the places, record texts and
    recompiled functions of the logs (read back from stderr by :func:`parse_compile_log`)."""
    file = os.path.abspath(module.__file__)
    out: dict[str, Any] = {}
    for cls in module.MODELS:
        x, larger = _inputs()
        torch.compiler.reset()
        compiled = torch.compile(_model(cls), backend="eager")
        _say(f"{MARK} {cls.__name__} first")
        with contextlib.redirect_stdout(io.StringIO()):
            compiled(x=x)
            _say(f"{MARK} {cls.__name__} second")
            compiled(x=larger)
        _say(f"{MARK} {cls.__name__} end")
        torch.compiler.reset()
        with contextlib.redirect_stdout(io.StringIO()):
            explained = torch._dynamo.explain(_model(cls))(x=x)
        reasons = []
        for r in explained.break_reasons:
            frames = [(f.filename, f.lineno) for f in r.user_stack]
            reasons.append({"line": _innermost(frames, file), "reason": r.reason})
        out[cls.__name__] = {"graphs": explained.graph_count, "explain": reasons}
    return out


def parse_compile_log(text: str, file: str) -> dict[str, dict[str, Any]]:
    """The graph breaks (corpus line of each record, and the record's text) and the recompiled
    functions (name, file, line) of each model, from the stderr of :func:`compile_truth`."""
    models: dict[str, dict[str, Any]] = {}
    current, phase, lines = None, None, []
    for line in text.splitlines() + [f"{MARK} - end"]:
        if line.startswith(MARK):
            if current is not None and phase is not None:
                entry = models.setdefault(current, {"breaks": [], "recompiles": []})
                if phase == "first":
                    entry["breaks"] += _records(lines, file)
                entry["recompiles"] += [m.groupdict() for m in _RECOMPILE_RE.finditer("\n".join(lines))]
            _, current, phase = line.split(" ", 2)
            lines = []
        else:
            lines.append(re.sub(r"^[VWIE]\d{4} .*?\] (\[[^\]]*\] )*(\[__\w+\] )?", "", line))
    return models


def _records(lines: list[str], file: str) -> list[dict[str, Any]]:
    """Each graph-break record of a log segment: the innermost line of the corpus file in the
    stack it prints (or, for a record whose stack was suppressed as a duplicate, its place)."""
    starts = [i for i, line in enumerate(lines) if _RECORD_RE.search(line)]
    out = []
    seen: dict[tuple[str, int], int | None] = {}  # a record's place -> its corpus line
    for k, start in enumerate(starts):
        block = "\n".join(lines[start: starts[k + 1] if k + 1 < len(starts) else len(lines)])
        frames = [(m.group("file"), int(m.group("line"))) for m in _FRAME_RE.finditer(block)]
        at = _AT_RE.search(block.split("\n", 1)[0])
        place = (at.group("file"), int(at.group("line"))) if at is not None else None
        if place is not None:
            frames.append(place)
        line = _innermost(frames, file)
        if line is None and place is not None:  # a duplicate: torch printed its stack the first time
            line = seen.get(place)
        if place is not None and line is not None:
            seen.setdefault(place, line)
        out.append({"line": line, "text": block})
    return out


def _error_record(error: BaseException, file: str) -> dict[str, Any]:
    frames = [(f.filename, f.lineno) for f in getattr(error, "real_stack", None) or ()]
    frames += [(f.filename, f.lineno) for f in traceback.extract_tb(error.__traceback__)]
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = next((line[2:] for line in lines if line.startswith("- ")), None)
    return {"type": type(error).__name__, "first_line": lines[0] if lines else "", "detail": detail,
            "line": _innermost(frames, file)}


def export_truth(module: Any, strict: bool, dynamic_batch: bool) -> dict[str, Any]:
    """Per model: whether ``torch.export.export`` succeeded, else its error (type, first line, the
    constraint's ``- `` line, the innermost corpus line), and ``draft_export``'s failures."""
    file = os.path.abspath(module.__file__)
    out: dict[str, Any] = {}
    for cls in module.MODELS:
        x, _ = _inputs()
        shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic_batch else None
        entry: dict[str, Any] = {"exported": True, "error": None, "draft": []}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                torch.export.export(_model(cls), (), {"x": x}, dynamic_shapes=shapes, strict=strict)
            except Exception as e:  # noqa: BLE001 - the error is what is recorded
                entry["exported"] = False
                entry["error"] = _error_record(e, file)
            if not entry["exported"]:
                try:
                    program = torch.export.draft_export(_model(cls), (), {"x": x}, dynamic_shapes=shapes,
                                                        strict=strict)
                except Exception:  # noqa: BLE001 - draft_export stopped where export did
                    program = None
                report = getattr(program, "_report", None)
                # a file interned by an earlier draft_export of this process is in torch's table only
                from torch._logging import structured

                names = {number: name for name, number in structured.INTERN_TABLE.items()}
                names.update(getattr(report, "str_to_filename", None) or {})
                for failure in getattr(report, "failures", None) or ():
                    stack = failure.data.get("user_stack") or ()
                    frames = [(names.get(f.get("filename"), str(f.get("filename"))), int(f.get("line") or 0))
                              for f in stack]
                    entry["draft"].append({"type": str(failure.failure_type), "line": _innermost(frames, file)})
        out[cls.__name__] = entry
    return out


def main(argv: list[str]) -> None:
    kind, module_name = argv[0], argv[1]
    module = importlib.import_module(module_name)
    if kind == "compile":
        result = compile_truth(module)
    else:
        result = export_truth(module, "--strict" in argv, "--dynamic-batch" in argv)
    print(json.dumps({"file": os.path.abspath(module.__file__), "models": result}))


if __name__ == "__main__":
    main(sys.argv[1:])
