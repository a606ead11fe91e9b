"""Helpers for the tracing-core tests: build and analyze corpus models, and compute expected
locations from the marker comments in tests/models (see tests/models/README.md)."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from fxscope.trace.analysis import TraceReport, analyze
from fxscope.trace.build import BuiltModel, build_model
from fxscope.trace.findings import Finding

MODELS_DIR = Path(__file__).resolve().parent / "models"
_PREFIX = str(MODELS_DIR) + os.sep


def is_user_file(path: str) -> bool:
    """Files of the model corpus are the user's code (the workspace)."""
    return os.path.abspath(path).startswith(_PREFIX)


def model_class(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


def run(factory: Callable[[], Any], *, device: str = "meta",
        concrete_args: dict[str, Any] | None = None) -> tuple[BuiltModel, TraceReport]:
    """Build ``factory`` and analyze it with the corpus as user code."""
    built = build_model(factory, device=device, is_user_file=is_user_file)
    cargs = concrete_args if concrete_args is not None else built.concrete_args
    report = analyze(built.model, cargs, sites=built.sites, is_user_file=is_user_file,
                     extra_findings=built.findings)
    return built, report


@lru_cache(maxsize=None)
def _lines(file: str) -> tuple[str, ...]:
    return tuple((MODELS_DIR / file).read_text().splitlines())


def marker_line(file: str, tag: str) -> int:
    """The 1-based number of the one line of ``tests/models/<file>`` ending in ``# <tag>``."""
    hits = [i for i, text in enumerate(_lines(file), 1) if text.rstrip().endswith(f"# {tag}")]
    assert len(hits) == 1, f"marker '# {tag}' found {len(hits)} times in {file}"
    return hits[0]


def expected_range(file: str, tag: str, expr: str) -> tuple[int, int, int]:
    """(line, column, end_column) of ``expr`` on the line marked ``# <tag>``: 1-based columns,
    end exclusive."""
    line = marker_line(file, tag)
    text = _lines(file)[line - 1]
    code = text[: text.rindex(f"# {tag}")]
    assert code.count(expr) == 1, f"{expr!r} must occur once on {file}:{line}"
    column = code.index(expr) + 1
    return line, column, column + len(expr)


def assert_located(loc: Any, file: str, tag: str, expr: str) -> None:
    """``loc`` (a SourceLocation) is exactly ``expr`` on the line of ``tests/models/<file>``
    marked ``# <tag>``."""
    line, column, end_column = expected_range(file, tag, expr)
    assert loc.file == str(MODELS_DIR / file), loc
    assert (loc.line, loc.column, loc.end_line, loc.end_column) == (line, column, line, end_column), (
        f"{os.path.basename(loc.file)}:{loc.line}:{loc.column}-{loc.end_line}:{loc.end_column}, "
        f"expected {file}:{line}:{column}-{line}:{end_column} ({expr!r})"
    )


def describe(findings: list[Finding]) -> list[str]:
    """Readable one-liners for assertion messages."""
    out = []
    for f in findings:
        loc = f.location
        out.append(f"{f.code} {os.path.basename(loc.file)}:{loc.line}:{loc.column}-{loc.end_column} "
                   f"{[s[0] for s in f.scopes]} {f.message}")
    return out


def statuses(report: TraceReport) -> dict[str, str]:
    """Module path -> status."""
    return {m["path"]: m["status"] for m in report.modules}
