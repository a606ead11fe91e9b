"""The fault zoo (hang, crash, os._exit, sys.exit, memory blow-up, stdout spam, forking, setsid,
a result forger, monkey-patching) next to healthy models, through the CLI and the daemon: every
target gets its result, the healthy ones exactly right, and no process of the check remains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine_support import (assert_failures_explained, check_command, cli_env, locate, new_marker,
                            processes_with_marker)

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "faults"))
from procs import wait_gone  # noqa: E402
from zoo import EXPECTED, leftover_pids, write_zoo  # noqa: E402

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]


def assert_zoo_report(root: Path, report: dict) -> None:
    assert_failures_explained(report)
    targets = {t["id"]: t for t in report["targets"]}
    assert set(targets) == set(EXPECTED), "every target must be reported, and only those"
    for tid, (status, code, text) in EXPECTED.items():
        found = [f for f in report["findings"] if tid in (f.get("targets") or [f["target"]])]
        assert targets[tid]["status"] == status, (tid, targets[tid], found)
        if code is None:
            assert found == [], (tid, found)
        else:
            assert [f["code"] for f in found] == [code], (tid, found)
            assert text in found[0]["message"], (tid, found[0])
            assert found[0]["file"] == tid.split("::")[0], (tid, found[0])
    (branch,) = [f for f in report["findings"] if f["target"] == "healthy.py::Branchy"]
    assert (branch["line"], branch["column"]) == locate(root, "healthy.py", "MARK if", "x.sum() > 0")


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def run(root: Path, env: dict[str, str], *extra: str) -> dict:
    proc = subprocess.run(check_command(*extra), cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1, f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def test_fault_zoo_through_the_cli(tmp_path):
    root, scratch = tmp_path / "ws", tmp_path / "pids"
    write_zoo(root, scratch)
    marker = new_marker()
    env = cli_env(marker)
    try:
        assert_zoo_report(root, run(root, env))
        left = leftover_pids(scratch)
        assert len(left) == 3, "the forking models ran"
        assert wait_gone(left, timeout=20) == []
        assert processes_with_marker(marker) == []
        cached = run(root, env)  # every outcome is cached, the forged one included
        assert all(t["cached"] for t in cached["targets"])
        assert_zoo_report(root, cached)
    finally:
        kill_all([p for p, _ in processes_with_marker(marker)])


def test_fault_zoo_through_the_daemon(tmp_path):
    root, scratch = tmp_path / "ws", tmp_path / "pids"
    write_zoo(root, scratch)
    marker = new_marker()
    env = cli_env(marker)
    daemon = [sys.executable, "-m", "fxscope", "daemon"]
    try:
        assert_zoo_report(root, run(root, env, "--daemon"))
        assert wait_gone(leftover_pids(scratch), timeout=20) == []
        assert_zoo_report(root, run(root, env, "--daemon", "--no-cache"))
        assert wait_gone(leftover_pids(scratch), timeout=20) == []
        status = subprocess.run([*daemon, "status"], cwd=root, env=env, capture_output=True, text=True)
        assert status.returncode == 0 and "running" in status.stdout, "the daemon survived the zoo"
    finally:
        subprocess.run([*daemon, "stop"], cwd=root, env=env, capture_output=True, timeout=60)
        left = processes_with_marker(marker)
        kill_all([p for p, _ in left])
    assert left == [], f"processes of the check remain: {left}"
