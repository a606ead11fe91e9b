"""A read-only workspace through the real CLI, run without the privilege to bypass file permissions:
the cache and the worker log cannot be written, the check still completes with the findings (and
exit code) of a normal run, and says the cache was unavailable."""

from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine_support import CheckRun, check_command, cli_env, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

WORKSPACE = {
    "pyproject.toml": """
        [tool.fxscope]
        timeout = 60
        """,
    "pkg/__init__.py": "",
    "pkg/layers.py": """
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return torch.relu(self.fc(x))
        """,
    "pkg/models.py": """
        from torch import nn

        from pkg.layers import Block


        class Healthy(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x) + 1


        class Branchy(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x
        """,
}

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_file_capabilities() -> None:
    """preexec_fn: root keeps its uid but loses what bypasses file permissions (from the bounding
    set, so the program it executes never has it): a mode without ``w`` then refuses writes."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(126)


def _probe(kwargs: dict[str, Any], cwd: Path) -> bool:
    """Whether the CLI's interpreter, torch and fxscope work under ``kwargs``, and writing into the
    read-only ``cwd`` is refused there (the restriction really applies)."""
    code = ("import fxscope, torch, sys\n"
            "try:\n    open('probe', 'w')\nexcept PermissionError:\n    sys.exit(0)\nsys.exit(3)\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=cli_env(), capture_output=True,
                              timeout=240, **kwargs)
    except (OSError, ValueError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _make_read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(stat.S_IMODE(mode) & ~0o222)


def _make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IWUSR)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can traverse (pytest's own tmp directory is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="fxscope-readonly-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)


def _unprivileged(probe_dir: Path) -> dict[str, Any]:
    """``subprocess.run`` arguments that run the CLI without the privilege to ignore file modes:
    this user when it is not root; else the user ``nobody`` when it can run this interpreter and
    this checkout; else root without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH."""
    if os.geteuid() != 0:
        return {}
    options: list[dict[str, Any]] = []
    try:
        options.append({"user": "nobody", "group": pwd.getpwnam("nobody").pw_gid})
    except KeyError:
        pass
    if sys.platform.startswith("linux"):
        options.append({"preexec_fn": _drop_file_capabilities})
    for kwargs in options:
        if _probe(kwargs, probe_dir):
            return kwargs
    pytest.skip("running as root, and neither the user nobody (interpreter, torch or checkout not "
                "readable by it) nor dropping CAP_DAC_OVERRIDE works here")


def _summary(run: CheckRun) -> tuple[Any, ...]:
    targets = sorted((t["id"], t["status"], t["nodes"]) for t in run.report["targets"])
    findings = sorted((f["code"], f["file"], f["line"], f["column"], f["message"])
                      for f in run.report["findings"])
    return run.rc, targets, findings


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.mark.parametrize("cache", ["no cache yet", "cache of an earlier run"])
def test_read_only_workspace_checks_without_a_cache(shared_dir, cache):
    normal_root = shared_dir / "normal"
    write_tree(normal_root, WORKSPACE)
    normal = CheckRun(subprocess.run(check_command(), cwd=normal_root, env=cli_env(),
                                     capture_output=True, text=True, timeout=600))
    assert normal.rc == 1 and [f["code"] for f in normal.report["findings"]] == ["FXS101"]

    root = shared_dir / "ws"
    if cache == "no cache yet":
        write_tree(root, WORKSPACE)
    else:  # the copy holds the earlier run's cache, worker log and __pycache__, all read-only
        shutil.copytree(normal_root, root)
        assert (root / ".fxscope_cache").is_dir()
    _make_read_only(root)
    probe_dir = shared_dir / "probe"
    probe_dir.mkdir()
    _make_read_only(probe_dir)
    kwargs = _unprivileged(probe_dir)
    before = _tree(root)

    proc = subprocess.run(check_command(), cwd=root, env=cli_env(), capture_output=True, text=True,
                          timeout=600, **kwargs)
    run = CheckRun(proc)
    assert _summary(run) == _summary(normal), run.stderr
    assert not any(t["cached"] for t in run.report["targets"])
    cache_dir = root / ".fxscope_cache"
    assert "cache" in run.stderr and str(cache_dir) in run.stderr, run.stderr
    assert "continuing without it" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    assert _tree(root) == before, "nothing in the read-only workspace may change"

    text = subprocess.run([*check_command(), "--format", "text"], cwd=root, env=cli_env(),
                          capture_output=True, text=True, timeout=600, **kwargs)
    assert text.returncode == 1 and "FXS101" in text.stdout and "continuing without it" in text.stderr


def test_read_only_workspace_with_daemon_is_one_clear_error(shared_dir):
    root = shared_dir / "ws"
    write_tree(root, WORKSPACE)
    earlier = subprocess.run(check_command(), cwd=root, env=cli_env(), capture_output=True, text=True,
                             timeout=600)  # its cache directory exists when the workspace becomes read-only
    assert earlier.returncode == 1, earlier.stderr
    _make_read_only(root)
    probe_dir = shared_dir / "probe"
    probe_dir.mkdir()
    _make_read_only(probe_dir)
    kwargs = _unprivileged(probe_dir)
    proc = subprocess.run([*check_command(), "--daemon"], cwd=root, env=cli_env(), capture_output=True,
                          text=True, timeout=600, **kwargs)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start the daemon" in lines[0], proc.stderr
    assert str(root / ".fxscope_cache") in lines[0] and "--cache-dir" in lines[0], proc.stderr
