"""What the worker's zygote prepares, once, for every job it forks: torch imported, the workspace's
``preload`` modules (and installed libraries) imported from their source with the files they read
recorded, and the imports and caches of the analyses the workspace runs warmed. None of it runs a
torch operator: OpenMP state does not survive a fork.

>>> import os, tempfile
>>> preload(["json", "no_such_module_xyz"], explain=lambda exc: None)["no_such_module_xyz"]
"ModuleNotFoundError: No module named 'no_such_module_xyz'"
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["TorchInfo", "WARM_ANALYSES_ENV", "Warmed", "import_torch", "prepare", "preload",
           "serve_workspace_from_source", "warm_up", "workspace_files_since"]

#: The zygote's environment names the analyses the workspace runs (comma-separated): :func:`warm_up`
#: calls each one's ``warm_up`` before the first fork.
WARM_ANALYSES_ENV = "FXSCOPE_WARM_ANALYSES"


@dataclass(frozen=True)
class TorchInfo:
    """The torch the zygote imported: its version, package directory and the mtime of its
    ``version.py`` (the pool notices a reinstalled torch by it), or why it could not be imported."""

    version: str | None = None
    path: str | None = None
    stamp: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, str | int | None]:
        """The ``torch_*`` fields of the zygote's ``ready`` message."""
        return {"torch_version": self.version, "torch_path": self.path, "torch_stamp": self.stamp,
                "torch_error": self.error}


def import_torch() -> TorchInfo:
    """Import torch once, so that every child inherits it, with one intra-op thread (as in every
    child: a module-level torch op in a preload then never starts an OpenMP pool, which would not
    survive the fork)."""
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001 - reported by the pool as an environment error
        return TorchInfo(error=f"{type(exc).__name__}: {exc}")
    from fxscope.job.torch_env import torch_stamp

    torch.set_num_threads(1)
    path = os.path.dirname(os.path.abspath(torch.__file__ or ""))
    return TorchInfo(str(torch.__version__), path, torch_stamp(path))


def preload(modules: Sequence[str], *, explain: Callable[[BaseException], str | None],
            announce: Callable[[str], None] | None = None) -> dict[str, str | None]:
    """Import ``modules`` in order: name -> None, or why it failed (``explain`` words a failure of
    the process's own making, a write the OS sandbox refused; else the exception). ``announce``
    is told each name before its import."""
    results: dict[str, str | None] = {}
    for name in modules:
        if announce is not None:
            announce(name)
        try:
            importlib.import_module(name)
            results[name] = None
        except BaseException as exc:  # noqa: BLE001 - a broken preload is only a warning
            results[name] = explain(exc) or f"{type(exc).__name__}: {exc}"
    return results


def serve_workspace_from_source(root: str) -> None:
    """Compile the workspace's modules that preloads import from their source, never from a
    stale ``__pycache__``, and remember the digest of what ran (as a job's child does)."""
    from fxscope.job.failures import user_file_predicate
    from fxscope.job.overlay import serve_from_source
    from fxscope.job.safe_module import run_script

    serve_from_source(user_file_predicate(root), root=root, run_script=run_script)


def workspace_files_since(root: str, before: frozenset[str]) -> dict[str, str]:
    """Workspace files imported since ``before`` (``sys.modules`` names): root-relative path ->
    sha256 of the source executed. Results depend on them; the pool restarts when one changes."""
    from fxscope.job.touched import touched_files

    try:
        return touched_files(root, before)
    except Exception:  # noqa: BLE001 - never fatal: the results then miss these dependencies
        traceback.print_exc()
        return {}


def warm_up() -> None:
    """Import what every job imports and fill the pure-Python caches that the first trace in a
    process builds (torch's table of overridable functions, sysconfig's paths), then warm up the
    analyses :data:`WARM_ANALYSES_ENV` names, so each forked child starts warm. Runs no torch
    operator."""
    import site
    import sysconfig

    import torch.overrides

    import fxscope.trace.build
    from fxscope.job.analyses import REGISTRY
    from fxscope.trace._torch_compat import warm_imports, warm_override_tables

    warm_imports()  # imported lazily by nn.Module construction
    fxscope.trace.build.warm_up()

    sysconfig.get_paths()
    site.getsitepackages()
    torch.overrides.get_overridable_functions()
    warm_override_tables()
    for name in os.environ.get(WARM_ANALYSES_ENV, "fx").split(","):
        analysis = REGISTRY.get(name)
        if analysis is not None:
            analysis.warm_up()


@dataclass(frozen=True)
class Warmed:
    """What :func:`prepare` imported: each ``preload`` and library (name -> None, or why it failed),
    the workspace files the preloads read (root-relative path -> sha256) and warnings for the user."""

    preload: dict[str, str | None]
    libraries: dict[str, str | None]
    preload_files: dict[str, str]
    warnings: tuple[str, ...]


def prepare(torch: TorchInfo | None, modules: Sequence[str], libraries: Sequence[str], root: str | None,
            runner: str, *, explain: Callable[[BaseException], str | None],
            announce: Callable[[str, str | None], None]) -> Warmed:
    """Import the workspace's ``preload`` ``modules`` (from source when under ``root``) and, where
    ``torch`` was imported (None: a zygote without torch), its installed ``libraries``; then import
    the ``runner`` module and call its ``warm_up()``. ``announce(stage, module)`` is told each step."""
    before = frozenset(sys.modules)
    if root and modules:
        serve_workspace_from_source(root)
    loaded = preload(modules, explain=explain, announce=lambda name: announce("preload", name))
    libs = preload(libraries, explain=explain, announce=lambda name: announce("library", name)) if torch else {}
    files = workspace_files_since(root, before) if root and modules else {}
    warnings = [f"preload {name!r} failed: {err}" for name, err in loaded.items() if err]
    if torch is not None and torch.error:
        warnings.insert(0, f"torch could not be imported: {torch.error}")
    elif torch is not None:
        announce("warm-up", None)
        try:
            warm = getattr(importlib.import_module(runner), "warm_up", None)
            if callable(warm):
                warm()
        except BaseException as exc:  # noqa: BLE001 - a slower worker is better than none
            warnings.append(f"warm-up failed (jobs will run slower): {type(exc).__name__}: {exc}")
    return Warmed(loaded, libs, files, tuple(warnings))
