"""Whether the interpreter that runs the worker has a torch fxscope supports, and which install it is.

A missing or too old torch is an environment error: one message naming the interpreter and the
install command, never a finding blamed on the user's code (each job would otherwise fail with
``No module named 'torch'`` as if the model code had killed its process).

>>> torch_problem({"torch_version": "2.5.1+cpu", "executable": "/venv/bin/python"}) is None
True
>>> print(torch_problem({"torch_error": "ModuleNotFoundError: No module named 'torch'",
...                      "executable": "/venv/bin/python"}))
torch cannot be imported by /venv/bin/python (ModuleNotFoundError: No module named 'torch'): fxscope traces with the interpreter it runs in; install torch there: /venv/bin/python -m pip install 'torch>=2.2'
>>> print(torch_problem({"torch_version": "2.1.2", "executable": "/venv/bin/python"}))
torch 2.1.2 in /venv/bin/python is older than fxscope supports (torch>=2.2); upgrade it there: /venv/bin/python -m pip install --upgrade 'torch>=2.2'
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["MIN_TORCH", "TORCH_REQUIREMENT", "install_command", "torch_problem", "torch_stamp"]

#: The oldest torch fxscope supports (the lower bound of the ``torch`` dependency in pyproject.toml).
MIN_TORCH = (2, 2)
#: The requirement a user installs.
TORCH_REQUIREMENT = f"torch>={MIN_TORCH[0]}.{MIN_TORCH[1]}"


def install_command(python: str, *, upgrade: bool = False) -> str:
    """The shell command that installs a supported torch into ``python``."""
    flags = " --upgrade" if upgrade else ""
    return f"{shlex.quote(python)} -m pip install{flags} {shlex.quote(TORCH_REQUIREMENT)}"


def _version(text: str) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def torch_problem(info: Mapping[str, Any]) -> str | None:
    """Why the torch of a zygote is unusable, from its ``ready`` message (``torch_error``,
    ``torch_version``, ``executable``), as one line with the install command; None when fine."""
    python = str(info.get("executable") or sys.executable)
    error = info.get("torch_error")
    if error:
        return (f"torch cannot be imported by {python} ({error}): fxscope traces with the interpreter "
                f"it runs in; install torch there: {install_command(python)}")
    version = str(info.get("torch_version") or "")
    parsed = _version(version)
    if parsed is not None and parsed < MIN_TORCH:
        return (f"torch {version} in {python} is older than fxscope supports ({TORCH_REQUIREMENT}); "
                f"upgrade it there: {install_command(python, upgrade=True)}")
    return None


def torch_stamp(torch_path: str | None) -> int | None:
    """Cheap fingerprint of the installed torch at ``torch_path`` (its package directory): the
    mtime of ``torch/version.py`` (None when unknown); a reinstalled torch has another."""
    if not torch_path:
        return None
    try:
        return os.stat(os.path.join(torch_path, "version.py")).st_mtime_ns
    except OSError:
        return None
