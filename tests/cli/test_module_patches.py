"""Module patches in notebooks and scripts through the real CLI: ``f.softargmax = f.softmax``
rebinds an attribute of an imported module to an existing value, so fxscope makes it, as running
the notebook would, and a forward that calls ``f.softargmax`` traces (plain ``torch.fx`` after the
notebook's definitions traces it too). A patch fxscope does not make (its value comes from a call,
it sits in a loop, it changes the interpreter) makes a class that then reads it FXS407 (info),
never an error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine_support import CheckRun, cli_env, locate, run_check, write_tree
from fxscope.project.notebooks import make_notebook

pytestmark = pytest.mark.requires_torch

IMPORTS = "import builtins\nimport torch\nimport torch.nn.functional as f\nfrom torch import nn"
PATCH = "f.softargmax = f.softmax\ntorch.backends.cudnn.benchmark = True"
NET = """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return f.softargmax(self.proj(x), dim=-1)"""
SKIPPED = """def pick():
    return f.softmin

f.softpick = pick()  # MARK call
builtins.softlen = len  # MARK builtins
for _ in range(2):
    torch.nn.functional.softloop = f.softmin  # MARK loop"""
USERS = """class Picks(nn.Module):
    def forward(self, x):
        return f.softpick(x, dim=-1)


class Counts(nn.Module):
    def forward(self, x):
        return x * builtins.softlen(x.shape)


class Loops(nn.Module):
    act = torch.nn.functional.softloop

    def forward(self, x):
        return x"""


def errors(run: CheckRun) -> list[dict[str, Any]]:
    return [f for f in run.findings() if f["severity"] == "error"]


def plain_fx(source: str, name: str) -> str:
    """Run ``source`` as Python runs it, then plain ``torch.fx.symbolic_trace`` of ``name()``,
    in a fresh interpreter; the traced graph's code."""
    code = source + f"\nimport torch.fx\nprint(torch.fx.symbolic_trace({name}()).code)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=cli_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_a_notebook_module_patch_runs_and_what_fxscope_skips_is_info(tmp_path: Path) -> None:
    cells = [IMPORTS, PATCH, NET, SKIPPED, USERS]
    (tmp_path / "patch.ipynb").write_text(make_notebook([("code", c) for c in cells]))
    assert "softmax" in plain_fx("\n".join([IMPORTS, PATCH, NET]), "Net")  # plain fx after the definitions
    run = run_check(tmp_path, "--show-info")
    assert run.targets["patch.ipynb::Net"]["status"] == "traced"
    assert not errors(run), run.findings()
    assert {t: run.targets[f"patch.ipynb::{t}"]["status"] for t in ("Picks", "Counts", "Loops")} == {
        "Picks": "skipped", "Counts": "skipped", "Loops": "skipped"}
    infos = {(i["cell"], i["line"]): i["message"] for i in run.findings(code="FXS407")}
    assert set(infos) == {(4, 4), (4, 5), (5, 11)}, infos
    assert "`torch.nn.functional.softpick`" in infos[(4, 4)] and "a call of `pick`" in infos[(4, 4)]
    assert "`builtins.softlen`" in infos[(4, 5)] and "interpreter" in infos[(4, 5)]
    assert "`Loops` is defined by a statement fxscope does not run" in infos[(5, 11)]
    assert "a loop" in infos[(5, 11)]


def test_a_script_module_patch_runs_without_the_scripts_work(tmp_path: Path) -> None:
    marker = tmp_path / "trained.marker"
    definitions = "\n".join([IMPORTS, PATCH, "", "", NET, "", "", SKIPPED, "", "", USERS])
    work = f"""

model = Net()
for step in range(2):
    model(torch.randn(2, 4)).sum().backward()
    __import__("pathlib").Path({str(marker)!r}).write_text("trained")
"""
    write_tree(tmp_path, {"train.py": definitions + work})
    assert "softmax" in plain_fx(definitions, "Net")
    run = run_check(tmp_path, "--show-info")
    assert not marker.exists()  # the script's training loop never ran
    assert run.targets["train.py::Net"]["status"] == "traced"
    assert not errors(run), run.findings()
    lines = {name: locate(tmp_path, "train.py", f"MARK {name}")[0] for name in ("call", "builtins")}
    infos = {i["line"]: i["message"] for i in run.findings(code="FXS407")}
    assert "`torch.nn.functional.softpick`" in infos[lines["call"]]
    assert "`builtins.softlen`" in infos[lines["builtins"]]
    assert run.targets["train.py::Loops"]["status"] == "skipped"


def test_a_module_patch_in_an_importable_file_runs_as_python_runs_it(tmp_path: Path) -> None:
    """Not a script (no work at import): imported as it is, the patch is Python's own."""
    write_tree(tmp_path, {"model.py": textwrap.dedent(
        "\n".join([IMPORTS, "f.softargmax = f.softmax", "", "", NET]))})
    run = run_check(tmp_path)
    assert run.targets["model.py::Net"]["status"] == "traced" and not errors(run)
