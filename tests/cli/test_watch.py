"""``fxscope watch`` in a subprocess: an edit on disk is re-checked and its new finding printed."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine_support import cli_env, new_marker, processes_with_marker, write_tree

pytestmark = pytest.mark.requires_torch

LIMIT = 240  # seconds the watcher may need on a loaded machine (a limit, not a measurement)

NET = """
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            return x.relu()
    """


def _reader(stream, lines: "queue.Queue[str]") -> None:
    for line in stream:
        lines.put(line)
    lines.put("")


def _until(lines: "queue.Queue[str]", needle: str, seen: list[str]) -> bool:
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line == "":
            return False
        seen.append(line)
        if needle in line:
            return True
    return False


def test_watch_prints_the_new_finding_after_an_edit(tmp_path: Path) -> None:
    write_tree(tmp_path, {"net.py": NET, "other.py": NET.replace("Net", "Other"),
                          "pyproject.toml": "[tool.fxscope]\nworkers = 1\n"})
    marker = new_marker()
    proc = subprocess.Popen([sys.executable, "-m", "fxscope", "watch", "--debounce", "0.2", "--color", "never"],
                            cwd=tmp_path, env=cli_env(marker), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    seen: list[str] = []
    try:
        assert _until(lines, "All checks passed: 2 targets traced", seen), "".join(seen)
        assert seen[0].startswith(f"fxscope: watching {tmp_path} (2 targets)")
        text = (tmp_path / "net.py").read_text()
        (tmp_path / "net.py").write_text(text.replace("        return x.relu()\n",
                                                      "        if x.sum() > 0:\n            x = -x\n"
                                                      "        return x.relu()\n"))
        start = len(seen)
        assert _until(lines, "Found 1 error", seen), "".join(seen)
        printed = "".join(seen[start:])
        assert "--- " in printed and "net.py changed" in printed
        assert "net.py:6:12: FXS101" in printed and "other.py" not in printed.split("changed", 1)[1]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, proc.stderr.read()[-3000:]
    deadline = time.monotonic() + 30
    while processes_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with_marker(marker) == []
