"""Importing a job's target: its module (a notebook, a script, a package module), the class or
factory it names, and the process state a script expects (``sys.path``, ``sys.argv``)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable

from fxscope.job.overlay import OverlayLoader
from fxscope.job.safe_module import load_notebook
from fxscope.job.trace_job import TraceJob
from fxscope.project.discovery import Target
from fxscope.project.notebooks import is_notebook

__all__ = ["import_target", "prepare_process", "rebound", "target_module"]


def prepare_process(job: TraceJob) -> None:
    """``sys.path`` and ``sys.argv`` as the target's code expects them: the configured python
    path, the script directory of a directory of scripts, and no command-line arguments. A
    target with an import root (its file is under a directory that is no import name) has that
    root first, as when a script there runs: its modules are found there before the python
    path's modules of the same names."""
    root, config, target = job.root, job.config, job.target
    for p in reversed(config.python_path):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    if target.import_root:
        _put_root_first(root, os.path.join(root, target.import_root))
    script_dir = _script_directory(root, target.file)
    if script_dir is not None and script_dir not in sys.path:  # as `python dir/main.py` would have it
        sys.path.insert(len(config.python_path), script_dir)
    # As `python file.py` run with no arguments: a module that parses the command line when it is
    # imported sees none of the worker's own.
    sys.argv = [str(Path(root) / target.file)]


def _put_root_first(workspace: str, import_root: str) -> None:
    """``import_root`` first on ``sys.path``, and no module of the workspace outside it already
    imported (by the zygote's ``preload``) under a name one of its own modules has: that name is
    its module's here."""
    if import_root in sys.path:
        sys.path.remove(import_root)
    sys.path.insert(0, import_root)
    try:
        names = {entry[:-3] if entry.endswith(".py") else entry for entry in os.listdir(import_root)}
    except OSError:
        return
    inside, own = os.path.join(workspace, ""), os.path.join(import_root, "")
    for name in [n for n in sys.modules if n.partition(".")[0] in names]:
        file = getattr(sys.modules[name], "__file__", None)
        if isinstance(file, str) and file.startswith(inside) and not file.startswith(own):
            del sys.modules[name]


def _script_directory(root: str, file: str) -> str | None:
    """The directory of a target's file when it is a directory of scripts rather than a package
    (no ``__init__.py``) below the root: its files import their siblings by bare name (``from
    train import ...``), as Python allows a script run from there. None for the root itself and
    for packages."""
    if not file or "/" not in file:
        return None
    directory = os.path.join(root, os.path.dirname(file))
    if os.path.exists(os.path.join(directory, "__init__.py")):
        return None
    return directory


def _import_module(name: str, root: str) -> Any:
    """Import workspace module ``name``; a notebook is named by its root-relative path."""
    if not is_notebook(name):
        return importlib.import_module(name)
    path = os.path.join(root, name)
    real, base = os.path.realpath(path), os.path.realpath(root).rstrip(os.sep) + os.sep
    if not real.startswith(base):
        raise ImportError(f"{path} resolves to {real}, outside the workspace: fxscope imports only files under "
                          "the workspace root", path=path)
    return load_notebook(path, name)


def import_target(job: TraceJob) -> Callable[[], Any]:
    """The class or factory ``job``'s target names, its module imported (raises what it raises)."""
    target = job.target
    if target.kind == "factory":
        module_name, _, attr = (target.factory or "").partition(":")
        obj: Any = _import_module(module_name, job.root)
    else:
        if target.module:
            obj = _import_module(target.module, job.root)
        else:
            path = os.path.join(job.root, target.file)
            name = "_fxscope_target_" + "".join(c if c.isalnum() else "_" for c in target.file)
            spec = importlib.util.spec_from_file_location(name, path, loader=OverlayLoader(name, path))
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {target.file}")
            obj = importlib.util.module_from_spec(spec)
            sys.modules[name] = obj
            spec.loader.exec_module(obj)
        attr = target.qualname or ""
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def target_module(target: Target) -> str | None:
    """The module the target's class or factory is defined in."""
    if target.kind == "factory":
        return (target.factory or "").partition(":")[0]
    return target.module


def rebound(obj: Any, target: Target) -> str | None:
    """Why a discovered class is not a target after all (None: it is): its module-level name is
    bound to something else once the module ran (``Swish = nn.SiLU`` in the branch that ran), or
    what it names is no ``nn.Module`` class (a library base that was not a model)."""
    import torch

    name = target.qualname or ""
    if not inspect.isclass(obj) or getattr(obj, "__qualname__", None) != name or (
            target.module and not is_notebook(target.module) and getattr(obj, "__module__", None) != target.module):
        what = getattr(obj, "__module__", "") + "." + getattr(obj, "__qualname__", type(obj).__name__)
        return (f"`{name}` at {target.file}:{target.line} is not traced: after import the name `{name}` is "
                f"`{what.lstrip('.')}`, not the class defined there")
    if not issubclass(obj, torch.nn.Module):
        return f"`{name}` at {target.file}:{target.line} is not traced: it is not a torch.nn.Module subclass"
    return None
