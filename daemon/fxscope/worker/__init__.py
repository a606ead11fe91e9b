"""Process isolation: a zygote that imported torch once forks one child per trace job.

Only :mod:`fxscope.worker.pool` is meant for the parent process; it imports no torch. Its names
are loaded on first attribute access, so a parent that only needs :mod:`.protocol` (the fault
kinds) or :mod:`.trace_job` does not load the pool.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["JobHandle", "WorkerPool"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'fxscope.worker' has no attribute {name!r}")
    return getattr(importlib.import_module("fxscope.worker.pool"), name)
