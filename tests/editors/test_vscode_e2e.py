"""VS Code end to end: the packaged .vsix installed into code-server, driven in headless Chromium.

The driver (clients/vscode/test/e2e/drive.mjs, playwright-core with the system Chromium) opens
a copy of examples/, opens a model file and reports the Problems panel, a hover and the status
bar. The extension starts this environment's `fxscope serve` (fxscope.interpreter = this Python).
Skips with the reason when code-server, Chromium, Node or the built .vsix are missing
(`clients/vscode/scripts/install-e2e-deps.sh` and `make vscode-package` provide them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from browser_support import find_chromium
from editor_support import copy_examples, require_server
from vscode_support import VSCODE, VSIX, code_server, code_server_node_bin, have_node_modules, node

pytestmark = [pytest.mark.requires_torch, pytest.mark.editor, pytest.mark.slow]

UNTRACEABLE = "zoo/untraceable.py"
QKV_LINE, QKV_COLUMN = 17, 24  # `self.qkv(x).chunk(3, dim=-1)`: traced inside Transformer's blocks
TRANSFORMER_FORWARD_LINE = 46  # `for block in self.blocks:` inside class Transformer


def _missing() -> str | None:
    if node() is None:
        return "Node.js is not installed"
    if not have_node_modules():
        return "clients/vscode/node_modules missing (run `make vscode`)"
    if code_server() is None:
        return "code-server is not installed (clients/vscode/scripts/install-e2e-deps.sh)"
    if find_chromium() is None:
        return "Chromium is not installed (apt-get install chromium, or set FXSCOPE_CHROMIUM)"
    return None


@pytest.fixture(scope="module")
def vsix() -> Path:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    require_server()
    proc = subprocess.run(["npm", "run", "package"], cwd=VSCODE, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and VSIX.exists(), proc.stdout[-3000:] + proc.stderr[-2000:]
    return VSIX


def _drive(vsix: Path, workspace: Path, scratch: Path, *, trusted: bool, expect: str,
           python: str = sys.executable, file: str = UNTRACEABLE, hover: tuple[int, int] = (QKV_LINE, QKV_COLUMN),
           graph_line: int = TRANSFORMER_FORWARD_LINE, missing: str | None = None,
           extra_env: dict[str, str] | None = None, screenshots: bool = False) -> dict:
    env = dict(os.environ)
    if not screenshots:  # only one scenario takes the README's pictures
        env.pop("FXSCOPE_SCREENSHOTS", None)
    if missing is not None:  # the interpreter under test sees its own environment only
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONHOME", None)
    env.update(extra_env or {})
    env.update(
        FXSCOPE_CODE_SERVER=code_server() or "",
        FXSCOPE_E2E_NODE_BIN=code_server_node_bin() or "",
        FXSCOPE_CHROMIUM=find_chromium() or "",
        FXSCOPE_VSIX=str(vsix),
        FXSCOPE_WORKSPACE=str(workspace),
        FXSCOPE_PYTHON=python,
        FXSCOPE_EXPECT_MISSING="0" if missing is None else "1",
        FXSCOPE_EXPECT_STATUS=missing or "",
        FXSCOPE_FILE=file,
        FXSCOPE_HOVER_LINE=str(hover[0]),
        FXSCOPE_HOVER_COLUMN=str(hover[1]),
        FXSCOPE_GRAPH_LINE=str(graph_line),
        FXSCOPE_EXPECT=expect,
        FXSCOPE_TRUSTED="1" if trusted else "0",
        FXSCOPE_E2E_TMP=str(scratch),
        FXSCOPE_E2E_TIMEOUT_MS="240000",
        HOME=str(scratch / "home"),
    )
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["node", str(VSCODE / "test" / "e2e" / "drive.mjs")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr[-3000:]
    return result


def _explain(result: dict) -> str:
    keys = ("problems", "hover", "status", "notification", "buttons", "graph", "afterRestart", "quickFix",
            "quickFixTitle", "clearCache", "retrace", "errors", "output", "serverLog", "stderr")
    return json.dumps({k: result.get(k) for k in keys}, indent=1)[-8000:]


def test_vsix_in_code_server_shows_diagnostics_and_hover(vsix: Path, tmp_path: Path) -> None:
    ws = copy_examples(tmp_path)
    # FXSCOPE_SCREENSHOTS=$PWD/clients/vscode/images refreshes the extension README's pictures.
    result = _drive(vsix, ws, tmp_path / "trusted", trusted=True, expect="FXS101 [Ln 20\nFXS101 [Ln 34\nFXS104 [Ln 48",
                    extra_env={"FXSCOPE_RESTART": "1"}, screenshots=True)
    assert not result["errors"], _explain(result)
    problems = result["problems"]
    # Attention's `if mask is not None and mask.any():` (line 20) and EarlyExit's `if x.norm() < 1e-3` (line 34).
    assert any("FXS101" in p and "mask.any()" in p and "[Ln 20" in p for p in problems), _explain(result)
    assert any("FXS101" in p and "x.norm() < 1e-3" in p and "[Ln 34" in p for p in problems), _explain(result)
    assert any("FXS104" in p and "[Ln 48" in p for p in problems), _explain(result)
    # The hover on a traced line lists its nodes per module instance.
    hover = result["hover"]
    assert "qkv" in hover and "zoo/untraceable.py::Transformer" in hover, _explain(result)
    assert "fxscope: 3 errors" in result["status"], _explain(result)
    # Show FX Graph on the class under the cursor: the webview draws Transformer's block graphs
    # (its own forward fails), and clicking a node of the hovered line moves the cursor there.
    graph = result.get("graph") or {}
    assert graph.get("nodes") == 74 and "zoo/untraceable.py::Transformer" in graph.get("title", ""), _explain(result)
    assert {"blocks.0", "blocks.1"} <= set(graph.get("boxes") or []), _explain(result)
    assert f"Ln {QKV_LINE}," in graph.get("afterClick", ""), _explain(result)
    # ... and the editor cursor on that line highlights its nodes in both block graphs.
    assert sorted(graph.get("highlighted") or []) == sorted(["qkv", "chunk", "getitem", "getitem_1", "getitem_2"] * 2), _explain(result)
    # At the default split the canvas gets the space: the findings column starts folded.
    assert graph.get("sideOpen") is False and graph.get("canvasWidth", 0) >= graph.get("viewWidth", 1) - 2 > 0, \
        _explain(result)
    # "fxscope: Restart Server": the server runs again, and a normal stop is no error.
    assert "fxscope: 3 errors" in (result.get("afterRestart") or ""), _explain(result)
    assert "exited with code" not in result["output"] and "[Error" not in result["output"], _explain(result)
    assert "the server stopped" in result["output"], _explain(result)


#: A model whose module takes seconds to import: its graph is asked for while it is being traced.
SLOW = "zoo/slow.py"
SLOW_SOURCE = """import time

import torch
from torch import nn

time.sleep(8)  # a slow import: the graph view is opened before the result exists


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # FXS101: Slow keeps Gate as a leaf
            x = x * 2
        return x


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.lin(x))
"""
SLOW_IF_LINE, SLOW_FORWARD_LINE = 11, 23


def test_graph_opened_while_tracing_fills_in(vsix: Path, tmp_path: Path) -> None:
    """Show FX Graph on a class whose trace is still running: the view says it is waiting, then
    draws the graph when the result arrives, without being opened again."""
    ws = copy_examples(tmp_path)
    (ws / SLOW).write_text(SLOW_SOURCE)
    result = _drive(vsix, ws, tmp_path / "early", trusted=True, expect=f"FXS101 [Ln {SLOW_IF_LINE}", file=SLOW,
                    hover=(0, 1), graph_line=SLOW_FORWARD_LINE,
                    extra_env={"FXSCOPE_GRAPH_EARLY": "1"})
    assert not result["errors"], _explain(result)
    graph = result.get("graph") or {}
    assert graph.get("firstStatus") == "pending", _explain(result)
    assert graph.get("status") in ("traced", "partial") and graph.get("nodes", 0) >= 4, _explain(result)
    assert "zoo/slow.py::Slow" in graph.get("title", ""), _explain(result)


NOTEBOOK_CELLS = [
    "# Exploring a model",
    ("code", "import torch\nfrom torch import nn\n%matplotlib inline"),
    ("code", "class Gate(nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            x = x * 2\n"
             "        return x"),
    ("code", "model = Gate()\nfor step in range(3):\n    model(torch.randn(2))"),
]


def test_notebook_cells_show_diagnostics_in_code_server(vsix: Path, tmp_path: Path) -> None:
    """VS Code's notebook editor (code-server's built-in ipynb support): the notebook's untraceable
    line is a diagnostic of its cell, at the line inside the cell."""
    from fxscope.project.notebooks import make_notebook

    ws = copy_examples(tmp_path)
    (ws / "notebooks").mkdir()
    (ws / "notebooks" / "explore.ipynb").write_text(make_notebook(NOTEBOOK_CELLS), encoding="utf-8")
    result = _drive(vsix, ws, tmp_path / "notebook", trusted=True, expect="x.sum() > 0",
                    file="notebooks/explore.ipynb", hover=(0, 1), graph_line=0)
    assert not result["errors"], _explain(result)
    rows = [p for p in result["problems"] if "x.sum() > 0" in p]
    # the cell's third line, column 12: positions inside the cell, not in the .ipynb file
    assert any("FXS101" in p and "[Ln 3, Col 12]" in p for p in rows), _explain(result)
    assert result.get("cellSquiggles", 0) >= 1, _explain(result)


#: The file the compile/export test adds to the examples, and the factory target that asks for
#: both analyses (with example inputs).
COMPILED = "zoo/compiled.py"
COMPILED_SOURCE = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:  # data-dependent: a graph break, and an export failure
            y = y * 2
        print("gate")  # a graph break
        return y + 1
"""
COMPILED_TARGET = """
[tool.fxscope.targets.gate]
factory = "zoo.compiled:Gate"
inputs = { x = [2, 8] }
analyses = ["fx", "compile", "export"]
"""
BRANCH_LINE, PRINT_LINE = 12, 14


def test_vsix_shows_compile_and_export_findings(vsix: Path, tmp_path: Path) -> None:
    """The examples plus one file whose target runs the compile and export analyses: the Problems
    panel lists torch.compile's graph breaks (FXS601) and torch.export's failure (FXS701) there."""
    ws = copy_examples(tmp_path)
    (ws / COMPILED).write_text(COMPILED_SOURCE)
    (ws / "pyproject.toml").write_text((ws / "pyproject.toml").read_text() + COMPILED_TARGET)
    expect = f"FXS601 [Ln {BRANCH_LINE}\nFXS601 [Ln {PRINT_LINE}\nFXS701 [Ln {BRANCH_LINE}"
    result = _drive(vsix, ws, tmp_path / "compiled", trusted=True, expect=expect, file=COMPILED, hover=(0, 1),
                    graph_line=0)
    assert not result["errors"], _explain(result)
    problems = result["problems"]
    assert any("FXS601" in p and "Data-dependent branching" in p and f"[Ln {BRANCH_LINE}" in p for p in problems), \
        _explain(result)
    assert any("FXS601" in p and "print" in p and f"[Ln {PRINT_LINE}" in p for p in problems), _explain(result)
    assert any("FXS701" in p and "torch.export" in p and f"[Ln {BRANCH_LINE}" in p for p in problems), _explain(result)
    assert any("FXS101" in p and f"[Ln {BRANCH_LINE}" in p for p in problems), _explain(result)  # fx's, as always


#: A class fxscope cannot build (a constructor argument with a name that says nothing): FXS405.
SCALED = "zoo/scaled.py"
SCALED_SOURCE = """import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, secret, scale=2.0):
        super().__init__()
        self.proj = nn.Linear(*secret)
        self.scale = scale

    def forward(self, x):
        return self.proj(x) * self.scale
"""
SCALED_LINE = 5


def test_actions_that_write_or_clear_say_so(vsix: Path, tmp_path: Path) -> None:
    """"Create an fxscope target" writes two files and names them (with buttons to open them);
    Clear Cache and Re-trace Workspace each give feedback."""
    ws = copy_examples(tmp_path)
    (ws / SCALED).write_text(SCALED_SOURCE)
    result = _drive(vsix, ws, tmp_path / "actions", trusted=True, expect=f"FXS405 [Ln {SCALED_LINE}", file=SCALED,
                    hover=(0, 1), graph_line=0,
                    extra_env={"FXSCOPE_QUICKFIX": f"{SCALED_LINE}|Create an fxscope target", "FXSCOPE_COMMANDS": "1"})
    assert not result["errors"], _explain(result)
    written = result.get("quickFix") or {}
    assert "fxscope: wrote fxscope_targets.py and pyproject.toml" in written.get("text", ""), _explain(result)
    assert {"Open fxscope_targets.py", "Open pyproject.toml"} <= set(written.get("buttons") or []), _explain(result)
    assert "def build_scaled" in (ws / "fxscope_targets.py").read_text(), _explain(result)
    assert "fxscope_targets:build_scaled" in (ws / "pyproject.toml").read_text(), _explain(result)
    assert "cleared the result cache of ws" in (result.get("clearCache") or {}).get("text", ""), _explain(result)
    assert "fxscope: re-tracing ws" in (result.get("retrace") or ""), _explain(result)


def test_untrusted_workspace_does_not_start_the_server(vsix: Path, tmp_path: Path) -> None:
    ws = copy_examples(tmp_path)
    result = _drive(vsix, ws, tmp_path / "untrusted", trusted=False, expect="")
    assert "untrusted" in result["status"], _explain(result)
    assert not any("FXS" in p for p in result["problems"]), _explain(result)


def test_interpreter_without_fxscope_says_how_to_install(vsix: Path, tmp_path: Path) -> None:
    """A virtualenv without fxscope: no server, and the fix (pip install into it) is shown."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    result = _drive(vsix, copy_examples(tmp_path), tmp_path / "missing", trusted=True, expect="", python=python,
                    missing="not installed")
    assert "not installed" in result["status"], _explain(result)
    assert f"{python} -m pip install fxscope" in result["notification"], _explain(result)
    assert {"Select Interpreter", "Copy Install Command"} <= set(result.get("buttons") or []), _explain(result)


def test_interpreter_without_torch_says_how_to_install_it(vsix: Path, tmp_path: Path) -> None:
    """An environment with fxscope but no torch: no server (no finding blames the code), one
    notification with the install command for that interpreter and the supported range."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "environment"))
    from env_support import python_without_torch

    python = str(python_without_torch(tmp_path / "no-torch"))
    result = _drive(vsix, copy_examples(tmp_path), tmp_path / "missing-torch", trusted=True, expect="", python=python,
                    missing="no torch")
    assert "fxscope: no torch" in result["status"], _explain(result)
    assert f"{python} -m pip install 'torch>=2.2'" in result["notification"], _explain(result)
    assert {"Select Interpreter", "Copy Install Command"} <= set(result.get("buttons") or []), _explain(result)


#: A file of two classes whose forward waits while a hold file exists (so results cannot land
#: while the test looks at the editor), opened in a workspace with many slow background classes.
MOVING = "moving.py"
MOVING_SOURCE = """import os
import time

import torch
from torch import nn

HOLD = {hold!r}


def held():
    for _ in range(400):
        if not os.path.exists(HOLD):
            return
        time.sleep(0.05)


class Gate(nn.Module):
    def forward(self, x):
        held()
        if x.sum() > 0:
            x = x * 2
        return x


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        held()
        return self.lin(x) * 2
"""
MOVING_IF_LINE, MOVING_CLASS_LINES = 20, (17, 25)
BACKGROUND_CLASS = """import time

from torch import nn


class Background{i}(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(2)  # each background class takes seconds to build
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)
"""


def test_open_file_first_and_lenses_follow_inserted_lines(vsix: Path, tmp_path: Path) -> None:
    """A workspace of many slow classes: the opened file's diagnostics are shown while the rest
    is still being traced; two lines inserted above its classes move its lenses and problems with
    them before any new result exists."""
    ws = copy_examples(tmp_path)
    hold = tmp_path / "hold"
    (ws / MOVING).write_text(MOVING_SOURCE.format(hold=str(hold)))
    (ws / "background").mkdir()
    for i in range(24):
        (ws / "background" / f"model_{i}.py").write_text(BACKGROUND_CLASS.format(i=i))
    result = _drive(vsix, ws, tmp_path / "moving", trusted=True, expect=f"FXS101 [Ln {MOVING_IF_LINE}",
                    file=MOVING, hover=(0, 1), graph_line=0, extra_env={"FXSCOPE_INSERT": str(hold)})
    assert not result["errors"], _explain(result)
    # The opened file's problem was shown while the workspace was still being traced ("fxscope 5/40").
    running = re.search(r"fxscope (\d+)/(\d+)", result["status"])
    assert running and int(running.group(1)) < int(running.group(2)), _explain(result)
    before = sorted({lens["line"] for lens in result.get("lensesBefore") or []})
    after = sorted({lens["line"] for lens in result.get("lensesAfter") or []})
    assert before == list(MOVING_CLASS_LINES), _explain(result) + json.dumps(result.get("lensesBefore"))
    assert after == [line + 2 for line in MOVING_CLASS_LINES], _explain(result) + json.dumps(result.get("lensesAfter"))
    assert any("FXS101" in p and f"[Ln {MOVING_IF_LINE + 2}" in p for p in result.get("problemsAfter") or []), \
        _explain(result) + json.dumps(result.get("problemsAfter"))
