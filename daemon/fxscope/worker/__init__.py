"""Process isolation: a zygote that imported torch once forks one child per trace job.

Only :mod:`fxscope.worker.pool` is meant for the parent process; it imports no torch.
"""

from .pool import JobHandle, WorkerPool

__all__ = ["JobHandle", "WorkerPool"]
