"""Shared helpers of the editor tests: README snippets, a workspace to open, the editors' env.

The editor tests run real editors with exactly the files in ``clients/`` and the snippets the
README tells users to paste, against the real ``fxscope serve`` of this environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "CLIENTS", "VENV_BIN", "readme_blocks", "user_snippet", "copy_examples",
           "editor_env", "fxscope_executable", "require_server"]

REPO = Path(__file__).resolve().parents[2]
CLIENTS = REPO / "clients"
#: The bin directory of the interpreter running the tests: its fxscope (and Neovim) are used.
VENV_BIN = Path(sys.executable).parent
#: The placeholder the README snippets use for a checkout of this repository.
README_CHECKOUT = "/path/to/fxscope"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks(section: str, lang: str, readme: Path = REPO / "README.md") -> list[str]:
    """The ``lang`` code blocks under the README heading named ``section`` (any level), up to
    the next heading of the same or a higher level."""
    text = readme.read_text(encoding="utf-8")
    m = re.search(rf"^(#+) {re.escape(section)}\s*$", text, re.MULTILINE)
    assert m, f"README.md has no section {section!r}"
    level = len(m.group(1))
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    body = rest[: end.start()] if end else rest
    return [code for tag, code in _FENCE.findall(body) if tag == lang]


def user_snippet(code: str) -> str:
    """A README snippet as a user of this checkout pastes it: the placeholder path replaced."""
    assert README_CHECKOUT in code, f"snippet does not name {README_CHECKOUT}/clients/...:\n{code}"
    return code.replace(README_CHECKOUT, str(REPO))


def copy_examples(dest: Path) -> Path:
    """A fresh copy of examples/ (the workspace the README's demo checks), without caches."""
    ws = dest / "ws"
    shutil.copytree(REPO / "examples", ws,
                    ignore=shutil.ignore_patterns(".fxscope_cache", "__pycache__"))
    return ws


def fxscope_executable() -> str:
    """Path of this environment's ``fxscope`` console script."""
    exe = shutil.which("fxscope", path=str(VENV_BIN))
    assert exe, f"no fxscope in {VENV_BIN}; install the package (pip install -e .)"
    return exe


def require_server() -> None:
    """Fail with the reason when ``fxscope serve`` does not exist in this environment."""
    proc = subprocess.run([fxscope_executable(), "serve", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"`fxscope serve --help` failed:\n{proc.stderr}"


def editor_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment of an editor process: this venv's bin first on PATH (so the shipped
    ``cmd = fxscope serve`` finds it), and a private HOME and XDG directories."""
    env = dict(os.environ)
    for key in [k for k in env if k.startswith(("XDG_", "NVIM", "VIM", "EMACS"))]:
        del env[key]
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env
