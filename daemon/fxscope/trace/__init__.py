"""The tracing core: RobustTracer, GraphCollection, recursive_trace and findings.

Needs torch only; names are loaded on first attribute access, so importing the package itself does
not import torch. The finding-code table lives in :mod:`fxscope.model.codes`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RobustTracer": "fxscope.trace.tracer",
    "GraphCollection": "fxscope.trace.collection",
    "recursive_trace": "fxscope.trace.collection",
    "Finding": "fxscope.trace.findings",
    "SourceLocation": "fxscope.trace.frames",
    "analyze": "fxscope.trace.analysis",
    "TraceReport": "fxscope.trace.analysis",
    "build_model": "fxscope.trace.build",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fxscope.trace' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
