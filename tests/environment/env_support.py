"""A real Python environment without torch: a venv (``python -m venv --without-pip``) whose
site-packages holds a ``.pth`` naming this checkout's ``daemon/`` and a directory of links to the
server's own dependencies (pygls, lsprotocol, attrs, cattrs, watchdog, ...), and nothing else: the
situation of a user whose interpreter has fxscope but no torch."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

DAEMON = Path(__file__).resolve().parents[2] / "daemon"

#: What ``fxscope serve`` and ``fxscope check`` import besides the standard library.
DEPENDENCIES = ("pygls", "lsprotocol", "attr", "attrs", "cattr", "cattrs", "typing_extensions", "watchdog",
                "exceptiongroup", "tomli")


def python_without_torch(directory: Path) -> Path:
    """Create the environment in ``directory`` and return its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory / "venv")], check=True)
    python = directory / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    deps = directory / "deps"
    deps.mkdir()
    for name in DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue  # only needed on older Pythons
        origin = Path(next(iter(spec.submodule_search_locations))) if spec.submodule_search_locations \
            else Path(str(spec.origin))
        (deps / origin.name).symlink_to(origin)
    (site / "fxscope-test.pth").write_text(f"{DAEMON}\n{deps}\n", encoding="utf-8")
    probe = subprocess.run([str(python), "-c", "import fxscope, pygls, importlib.util, sys; "
                            "sys.exit(importlib.util.find_spec('torch') is not None)"], env=environment())
    assert probe.returncode == 0, "the environment must import fxscope and must not find torch"
    return python


def environment() -> dict[str, str]:
    """The environment its processes run with: no PYTHONPATH (the .pth file is the only path)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONUNBUFFERED"] = "1"
    return env
