"""Headless Chromium for the tests that look at what a person sees (graph HTML, VS Code).

Chromium is found through ``FXSCOPE_CHROMIUM`` or on PATH (Debian's ``chromium``); the tests
that need it skip with that reason when it is absent. Each run gets a fresh profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["CHROMIUM_FLAGS", "find_chromium", "dump_dom", "screenshot"]

#: Flags for a quiet, offline, sandbox-free headless Chromium (no GPU, no network side traffic).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """The Chromium executable: ``$FXSCOPE_CHROMIUM``, else chromium/chromium-browser on PATH."""
    env = os.environ.get("FXSCOPE_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(chromium: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="fxscope-chromium-") as profile:
        return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def dump_dom(chromium: str, url: str, *, budget_ms: int = 20000, timeout: float = 180) -> str:
    """The DOM after the page's scripts ran (``--dump-dom``, with a virtual time budget)."""
    proc = _run(chromium, ["--window-size=1400,1000", f"--virtual-time-budget={budget_ms}", "--dump-dom", url], timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(chromium: str, url: str, out: Path, *, budget_ms: int = 20000, timeout: float = 180) -> Path:
    """A PNG of the page as drawn in a 1400x1000 window."""
    proc = _run(chromium, ["--window-size=1400,1000", f"--virtual-time-budget={budget_ms}", f"--screenshot={out}", url], timeout)
    assert proc.returncode == 0 and out.exists(), proc.stderr[-2000:]
    return out
