"""Jupyter notebooks through the real CLI: nbformat 4 files written by nbformat (as Jupyter writes
them, outputs included) are checked by default; magics are neutralised, a class whose methods are
defined over several cells is traced, the training loop and the shell cell never run (the marker
files they would write stay absent), and every finding is at the right cell and line in text,
JSON, SARIF and GitHub annotations. A notebook's factory and a ``.py`` script's work are covered
too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from engine_support import SCHEMA, assert_schema_describes, cli_env, locate, run_check, run_fxscope, write_tree

pytestmark = pytest.mark.requires_torch


def write_notebook(path: Path, cells: list[Any]) -> None:
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                            "display_name": "Python 3"},
                                             "language_info": {"name": "python", "version": "3.11"}})
    nbformat.validate(nb)
    nbformat.write(nb, str(path))


IMPORTS = """%matplotlib inline
%load_ext autoreload
!pip install einops
import pathlib
import torch
from torch import nn
from dataclasses import dataclass"""

CONFIG = """@dataclass
class Config:
    dim: int = 8
    depth: int = 2


cfg = Config(dim=16)"""

BLOCK = """class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        if x.sum() > 0:  # untraceable
            x = x * 2
        return self.proj(x)"""

NET = """class Net(nn.Module):
    def __init__(self, config: Config = cfg):
        super().__init__()
        self.blocks = nn.ModuleList(Block(config.dim) for _ in range(config.depth))"""

NET_FORWARD = """def net_forward(self, x):
    for block in self.blocks:
        x = block(x)
    return x


Net.forward = net_forward"""

SCALED = """device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
scale = torch.randn(1).item()


class Scaled(nn.Module):
    def forward(self, x):
        return x * scale"""


def training(marker: Path) -> str:
    return f"""model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(4, 16)).sum()
    loss.backward()
    opt.step()
pathlib.Path({str(marker)!r}).write_text("trained")"""


def bash(marker: Path) -> str:
    return f"%%bash\ntouch {marker}\n"


@pytest.fixture(scope="module")
def notebook_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nbws")
    (root / "pyproject.toml").write_text('[tool.fxscope]\ntimeout = 60\n\n'
                                         '[tool.fxscope.targets.small]\nfactory = "notebooks/model.ipynb:build"\n')
    (root / "notebooks").mkdir()
    write_notebook(root / "notebooks" / "model.ipynb", [
        new_markdown_cell("# A small model"),                      # cell 1
        new_code_cell(IMPORTS, execution_count=1, outputs=[new_output("stream", name="stdout", text="ok\n")]),
        new_code_cell(CONFIG, execution_count=2),                 # cell 3
        new_code_cell(BLOCK, execution_count=3),                  # cell 4
        new_code_cell(NET, execution_count=4),                    # cell 5
        new_code_cell(NET_FORWARD, execution_count=5),            # cell 6
        new_code_cell(training(root / "trained.marker")),         # cell 7
        new_code_cell(bash(root / "bash.marker")),                # cell 8
        new_code_cell(SCALED),                                    # cell 9
        new_code_cell("def build():\n    return Net(Config(dim=4, depth=1))"),  # cell 10
    ])
    return root


@pytest.fixture(scope="module")
def checked(notebook_ws: Path) -> dict[str, Any]:
    return run_check(notebook_ws, "--show-info", timeout=300).report


def _raw(root: Path, cell_text: str, needle: str) -> tuple[int, int]:
    """(line, column) of ``needle`` in the .ipynb text, on the line holding ``cell_text``'s line
    with it (as nbformat wrote it: one JSON string per source line)."""
    line = next(line for line in cell_text.splitlines() if needle in line)
    escaped = json.dumps(line)[1:-1]
    for number, raw in enumerate((root / "notebooks" / "model.ipynb").read_text().splitlines(), 1):
        if escaped in raw:
            return number, raw.index(escaped) + len(escaped[: escaped.index(json.dumps(needle)[1:-1])]) + 1
    raise AssertionError(needle)


def test_notebook_targets_and_nothing_of_its_work_ran(notebook_ws: Path, checked: dict[str, Any]) -> None:
    targets = {t["id"]: t for t in checked["targets"]}
    assert set(targets) == {"notebooks/model.ipynb::Block", "notebooks/model.ipynb::Net",
                            "notebooks/model.ipynb::Scaled", "small"}
    assert not (notebook_ws / "trained.marker").exists()  # the training cell never ran
    assert not (notebook_ws / "bash.marker").exists()  # nor the %%bash cell
    net = targets["notebooks/model.ipynb::Net"]
    # Net's forward is defined in the next cell: traced, its blocks kept as leaves (they fail)
    assert net["status"] == "partial" and (net["cell"], net["line"]) == (5, 1)
    assert {m["path"] for m in net["modules"] if m["status"] == "failed"} == {"blocks.0", "blocks.1"}
    assert targets["small"]["status"] == "partial" and targets["small"]["file"] == "notebooks/model.ipynb"
    assert (targets["notebooks/model.ipynb::Block"]["cell"], targets["notebooks/model.ipynb::Block"]["line"]) == (4, 1)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(checked)
    assert_schema_describes(checked, json.loads(SCHEMA.read_text()))


def test_findings_point_at_the_cell_and_line(checked: dict[str, Any]) -> None:
    (branch,) = [f for f in checked["findings"] if f["code"] == "FXS101"]
    assert (branch["file"], branch["cell"], branch["line"], branch["column"], branch["end_column"]) == (
        "notebooks/model.ipynb", 4, 7, 12, 23)
    assert {s["path"] for s in branch["scopes"]} >= {"", "blocks.0", "blocks.1"}
    assert set(branch.get("targets", [branch["target"]])) >= {"notebooks/model.ipynb::Block",
                                                              "notebooks/model.ipynb::Net", "small"}
    # Scaled reads `scale`, which only a call would set: not traced, one info at that statement
    (skip,) = [f for f in checked["findings"] if f["code"] == "FXS407"]
    assert (skip["cell"], skip["line"], skip["column"], skip["severity"]) == (9, 2, 1, "info")
    assert "`scale`" in skip["message"] and "a call of `torch.randn`" in skip["message"]
    assert not [f for f in checked["findings"] if f["severity"] == "error" and f["code"] != "FXS101"]
    build = next(t for t in checked["targets"] if t["id"] == "notebooks/model.ipynb::Block").get("build")
    assert build is None or build["file"] == "notebooks/model.ipynb"


def test_text_names_the_cell(notebook_ws: Path) -> None:
    proc = run_fxscope(notebook_ws, "check", "--show-info", "--color", "never")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "notebooks/model.ipynb:cell 4:7:12: FXS101 traced value `x.sum() > 0`" in out, out
    assert "   7 |         if x.sum() > 0:  # untraceable" in out.replace("  7 |", "   7 |", 1) or \
        "  7 |         if x.sum() > 0:  # untraceable" in out, out
    assert "notebooks/model.ipynb:cell 9:2:1: FXS407" in out, out


def test_sarif_and_github_point_into_the_ipynb_file(notebook_ws: Path) -> None:
    line, column = _raw(notebook_ws, BLOCK, "x.sum() > 0")
    sarif = json.loads(run_fxscope(notebook_ws, "check", "--format", "sarif", "--fail-on", "never").stdout)
    schema = json.loads((SCHEMA.parent / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(sarif)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "FXS101"]
    location = result["locations"][0]
    region = location["physicalLocation"]["region"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "notebooks/model.ipynb"
    assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
        line, column, line, column + len("x.sum() > 0"))
    assert location["properties"] == {"cell": 4, "cellLine": 7, "cellColumn": 12}
    assert "(notebook cell 4, line 7)" in result["message"]["text"]
    github = run_fxscope(notebook_ws, "check", "--format", "github").stdout
    (annotation,) = [a for a in github.splitlines() if "FXS101" in a]
    assert annotation.startswith(f"::error file=notebooks/model.ipynb,line={line},col={column},"
                                 f"endLine={line},endColumn={column + len('x.sum() > 0')},"
                                 "title=FXS101 (traced-control-flow) in cell 4%3A7%3A12::"), annotation


def test_second_check_is_cached_and_a_suppression_works(notebook_ws: Path, tmp_path: Path) -> None:
    again = run_check(notebook_ws, "--show-info")
    assert not again.uncached()
    ws = tmp_path / "ws"
    ws.mkdir()
    cells = [new_code_cell("import torch\nfrom torch import nn"),
             new_code_cell(BLOCK.replace("# untraceable", "# fxscope: ignore[FXS101]"))]
    write_notebook(ws / "sup.ipynb", cells)
    run = run_check(ws)
    assert not run.findings(code="FXS101") and run.report["summary"]["suppressed"] == 1


def test_a_cell_that_does_not_parse(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", [
        new_markdown_cell("x"), new_code_cell("from torch import nn"), new_code_cell("def broken(:\n    pass"),
        new_code_cell("class Fine(nn.Module):\n    def forward(self, x):\n        return x + 1")])
    run = run_check(tmp_path)
    (error,) = run.findings(code="FXS402")
    assert (error["file"], error["cell"], error["line"]) == ("nb.ipynb", 3, 1)
    assert run.targets["nb.ipynb::Fine"]["status"] == "traced"


def test_a_script_is_imported_without_its_work(tmp_path: Path) -> None:
    marker = tmp_path / "script.marker"
    write_tree(tmp_path, {"train.py": f"""
        import pathlib

        import torch
        from torch import nn


        class Tiny(nn.Module):
            def forward(self, x):
                return x.relu()


        class Noisy(nn.Module):
            def forward(self, x):
                return x + noise


        noise = torch.randn(1)  # MARK noise
        model = Tiny()
        for epoch in range(2):
            pathlib.Path({str(marker)!r}).write_text("trained")
    """, "uses.py": """
        from torch import nn

        from train import Tiny


        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Tiny()

            def forward(self, x):
                return self.inner(x)
    """})
    run = run_check(tmp_path, "--show-info")
    assert not marker.exists()  # neither importing train.py for Tiny nor through uses.py ran the loop
    assert run.targets["train.py::Tiny"]["status"] == "traced"
    assert run.targets["uses.py::Outer"]["status"] == "traced"
    assert run.targets["train.py::Noisy"]["status"] == "skipped"
    (info,) = run.findings(code="FXS407")
    assert (info["file"], info["line"]) == ("train.py", locate(tmp_path, "train.py", "MARK noise")[0])
    assert "`noise`" in info["message"]


def test_a_notebook_is_found_by_watch_and_daemon_paths(notebook_ws: Path) -> None:
    """``fxscope check PATH`` with a notebook path checks that notebook's targets."""
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", "notebooks/model.ipynb", "--format", "json"],
                          cwd=notebook_ws, env=cli_env(), capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    assert {t["id"] for t in doc["targets"]} == {"notebooks/model.ipynb::Block", "notebooks/model.ipynb::Net",
                                                 "notebooks/model.ipynb::Scaled", "small"}


def test_a_training_script_sees_its_parsers_defaults(tmp_path: Path) -> None:
    """A script that reads its sizes from argparse (PyTorch-GAN's layout): its classes are traced
    with the defaults it would get run with no arguments; its training loop never runs (a module
    that parses its command line at import is imported as it is, with no arguments); a class
    that reads an argument without a default is FXS407 with argparse's usage as the reason."""
    marker = tmp_path / "trained.marker"
    write_tree(tmp_path, {"gan.py": f"""
        import argparse
        import os
        import pathlib

        import torch.nn as nn

        os.makedirs("images", exist_ok=True)
        parser = argparse.ArgumentParser()
        parser.add_argument("--latent_dim", type=int, default=100, help="dimensionality of the latent space")
        parser.add_argument("--img_size", type=int, default="28", help="size of each image dimension")
        opt = parser.parse_args()
        print(opt)
        img_shape = (1, opt.img_size, opt.img_size)


        class Generator(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = nn.Linear(opt.latent_dim, 1 * 28 * 28)

            def forward(self, z):
                img = self.model(z)
                return img.view(img.size(0), *img_shape)


        for epoch in range(opt.latent_dim):
            pathlib.Path({str(marker)!r}).write_text("trained")
    """, "cli.py": """
        import argparse

        import torch.nn as nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--data", required=True)
        args = parser.parse_args()  # MARK args


        class Reader(nn.Module):
            def forward(self, x):
                return x[: len(args.data)]


        for line in open(args.data):
            print(line)
    """, "module.py": """
        import argparse

        import torch.nn as nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--dim", type=int, default=4)
        args = parser.parse_args()  # not a script: imported as Python imports it


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(args.dim, 2)

            def forward(self, x):
                return self.fc(x)
    """})
    run = run_check(tmp_path, "--show-info")
    assert not marker.exists() and not (tmp_path / "images").exists()
    assert run.targets["gan.py::Generator"]["status"] == "traced"
    assert run.targets["gan.py::Generator"]["nodes"] > 0
    assert run.targets["module.py::Head"]["status"] == "traced"  # the worker's own argv is not its command line
    (info,) = run.findings(code="FXS407")
    assert (info["file"], info["line"]) == ("cli.py", locate(tmp_path, "cli.py", "MARK args")[0])
    assert "needs command-line arguments" in info["message"] and "--data" in info["message"]
