"""Notebooks in the project layer (no torch): nbformat files written by nbformat itself read as one
module of their code cells, IPython syntax neutralised without moving a line, cell/line mapping
both ways and into the .ipynb text, the plan of what the safe executor runs, and discovery's
targets, recipes and imports for notebooks."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest
from engine_support import write_tree
from fxscope.project.config import ConfigError, load_config
from fxscope.project.discovery import discover
from fxscope.project._summary import Summary, summary_of_text
from fxscope.project.notebooks import (
    Notebook,
    NotebookError,
    make_notebook,
    notebook_tree,
    raw_position,
    raw_positions,
    read_notebook,
)
from fxscope.project.toplevel import dependencies, is_script, plan
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell


def write_notebook(path: Path, cells: list, **metadata: object) -> str:
    """Write an nbformat 4 notebook as Jupyter does (nbformat.write, validated) and return its text."""
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                            "display_name": "Python 3"},
                                             "language_info": {"name": "python"}, **metadata})
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path.read_text(encoding="utf-8")


MAGICS = """%matplotlib inline
!pip install einops
import torch
files = !ls
%time x = 1
torch.zeros?
y = (x
     % 2)"""


def test_code_cells_make_one_module_and_lines_map_both_ways(tmp_path: Path) -> None:
    text = write_notebook(tmp_path / "nb.ipynb", [
        new_markdown_cell("# Title"),
        new_code_cell(MAGICS, execution_count=1, outputs=[new_output("stream", name="stdout", text="hi\n")]),
        new_raw_cell("not code"),
        new_code_cell("class A:\n    pass\n"),
        new_code_cell(""),
        new_code_cell("z = y"),
    ])
    nb = read_notebook(text)
    assert [c.number for c in nb.cells] == [2, 4, 5, 6] and nb.cell_count == 6
    code = nb.code.splitlines()
    # magics and shell escapes become statements on the same lines; a `%` continuing a bracket is code
    assert code[:8] == ["pass", "pass", "import torch", "files = None", "pass", "pass", "y = (x", "     % 2)"]
    assert sorted(nb.magic_lines) == [1, 2, 4, 5, 6]
    assert nb.text.splitlines()[:2] == ["%matplotlib inline", "!pip install einops"]  # as written
    for cell in nb.cells:
        for i, line in enumerate(cell.lines, 1):
            virtual = nb.line_of(cell.number, i)
            assert virtual is not None and nb.locate(virtual) == (cell.number, i)
            assert nb.text.splitlines()[virtual - 1] == line
    assert nb.locate(len(code) + 1) is None and nb.line_of(1, 1) is None  # Markdown has no code lines
    tree = notebook_tree(nb)
    assert not tree.errors
    assert [type(s).__name__ for s in tree.tree.body][-2:] == ["ClassDef", "Assign"]
    assert tree.tree.body[-1].lineno == nb.line_of(6, 1)


CELLS: list = ["# Title", ("code", "import torch\n%time x = 1\n"), ("raw", "raw"), ("code", ""),
                ("code", "class A:\n    pass\r\n\n"), "notes", ("code", "y = x")]


def test_one_mapper_from_cells_as_from_the_written_notebook() -> None:
    nb = Notebook.from_cells(CELLS)
    written = read_notebook(make_notebook(CELLS))
    assert (nb.code, nb.text, nb.magic_lines, nb.cell_count) == (
        written.code, written.text, written.magic_lines, written.cell_count)
    assert nb.index == written.index and nb.index.spans == ((1, 2, 2), (3, 5, 3), (6, 7, 1))
    index = nb.index
    assert [(line, index.locate(line)) for line in range(0, 8)] == [
        (0, None), (1, (2, 1)), (2, (2, 2)), (3, (5, 1)), (4, (5, 2)), (5, (5, 3)), (6, (7, 1)), (7, None)]
    assert [(line, cell, at) for line, cell, at in index.lines()] == [
        (1, 2, 1), (2, 2, 2), (3, 5, 1), (4, 5, 2), (5, 5, 3), (6, 7, 1)]
    assert index.line_of(4, 1) is None and index.line_of(5, 4) is None and index.span(5) == (3, 5)
    # discovery keeps the same index (persisted with the file's summary)
    summary = summary_of_text(make_notebook(CELLS), "nb")
    assert summary.cells == index and Summary.from_json(summary.to_json()).cells == index
    assert summary.cell_of(4) == (5, 2) and summary.cell_of(7) is None


def test_a_cell_that_does_not_parse_is_left_out(tmp_path: Path) -> None:
    nb = read_notebook(write_notebook(tmp_path / "nb.ipynb", [new_code_cell("a = 1"), new_code_cell("def f(:\n"),
                                                               new_code_cell("b = 2")]))
    parsed = notebook_tree(nb)
    assert [s.lineno for s in parsed.tree.body] == [1, 3]
    ((line, _, message),) = parsed.errors
    assert line == 2 and nb.locate(line) == (2, 1) and message


def test_cell_magics_and_other_languages(tmp_path: Path) -> None:
    nb = read_notebook(write_notebook(tmp_path / "nb.ipynb", [
        new_code_cell("%%bash\necho hi > marker\n"), new_code_cell("%%time\nw = 3"),
        new_code_cell("SELECT 1", metadata={"vscode": {"languageId": "sql"}}),
    ]))
    assert nb.code.splitlines() == ["", "", "", "w = 3"]  # %%bash is not Python; %%time's body is
    assert [c.number for c in nb.cells] == [1, 2]
    r = read_notebook(write_notebook(tmp_path / "r.ipynb", [new_code_cell("x <- 1")],
                                     kernelspec={"name": "ir", "language": "R", "display_name": "R"},
                                     language_info={"name": "R"}))
    assert r.cells == () and r.code == ""


@pytest.mark.parametrize(("text", "why"), [
    ("{not json", "invalid JSON"),
    (json.dumps({"worksheets": [], "nbformat": 3}), "nbformat 3"),
    (json.dumps({"cells": [], "nbformat": 5}), "nbformat 5"),
    (json.dumps({"cells": [{"cell_type": "code", "source": 3}], "nbformat": 4}), "source"),
])
def test_what_is_not_a_notebook_says_why(text: str, why: str) -> None:
    with pytest.raises(NotebookError, match=why):
        read_notebook(text)


def test_positions_in_the_ipynb_file_point_at_every_character(tmp_path: Path) -> None:
    cells = ["s = \"quote \\\" back\\\\slash\\ttab\"\n\tindented = 'é😀'\n", "a = 1\r\nb = 2\n", "last = 'no newline'"]
    text = write_notebook(tmp_path / "nb.ipynb", [new_markdown_cell("x"), *(new_code_cell(c) for c in cells)])
    nb, sources = read_notebook(text), raw_positions(text)
    raw_lines = text.splitlines()
    checked = 0
    for cell in nb.cells:
        for line_no, line in enumerate(cell.lines, 1):
            for column, char in enumerate(line, 1):
                where = raw_position(text, sources, cell.number, line_no, column)
                assert where is not None
                escaped = json.dumps(char, ensure_ascii=False)[1:-1]
                assert raw_lines[where[0] - 1][where[1] - 1:].startswith(escaped), (cell.number, line_no, column)
                checked += 1
    assert checked == sum(len(line) for c in nb.cells for line in c.lines)
    assert raw_position(text, sources, 9, 1, 1) is None


def test_the_plan_runs_definitions_and_skips_work() -> None:
    tree = ast.parse(
        "import torch\n"
        "try:\n    import einops\nexcept ImportError:\n    einops = None\n"
        "torch.fx.wrap('helper')\n"
        "cfg = Config(dim=8)\n"
        "cfg.depth = 2\n"
        "for epoch in range(3):\n    loss = step()\n"
        "train(model)\n"
        "with open('x') as fh:\n    data = fh.read()\n"
        "if __name__ == '__main__':\n    main()\n"
        "class Net: pass\n")
    steps = [(s.kind, s.names, s.reason) for s in plan(tree)]
    assert steps == [
        ("run", ("torch",), None), ("run", ("einops",), None), ("assign", ("torch",), None),
        ("assign", ("cfg",), None), ("assign", ("cfg",), None),
        ("skip", ("epoch", "loss"), "a loop"), ("skip", (), "a call of `train`"),
        ("skip", ("fh", "data"), "a `with` block"), ("skip", (), "an `if` block"), ("run", ("Net",), None)]


def test_dependencies_follow_what_build_and_forward_reach() -> None:
    tree = ast.parse(
        "SCALE = 2\nDEVICE = pick()\nLOADER = make()\n"
        "def helper(x):\n    return x * SCALE\n"
        "class Base:\n    def forward(self, x):\n        return self.inner(x)\n    def inner(self, x):\n"
        "        return x.to(DEVICE)\n"
        "class Net(Base):\n    def __init__(self):\n        self.k = helper(1)\n"
        "    def fit(self):\n        return LOADER\n")
    assert set(dependencies(tree, "Net")) == {"Base", "helper", "SCALE", "DEVICE"}  # not `fit`'s LOADER


@pytest.mark.parametrize(("source", "script"), [
    ("def main():\n    pass\nif __name__ == '__main__':\n    main()\n", False),
    ("def main():\n    pass\nmain()\n", False),  # runs nothing that could be work
    ("def main():\n    for _ in range(3):\n        pass\nmain()\n", True),
    ("import fire\ndef train(lr=0.1):\n    for _ in range(3):\n        pass\nfire.Fire(train)\n", True),
    ("for epoch in range(2):\n    pass\n", True),
    ("import logging\nlogging.basicConfig()\nclass A: pass\n", False),
    ("torch.fx.wrap('f')\ndef f(x):\n    return x\n", False),
])
def test_what_makes_a_script(source: str, script: bool) -> None:
    assert is_script(ast.parse(source)) is script


def test_discovery_reads_notebooks(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": '[tool.fxscope.targets.built]\nfactory = "nb/model.ipynb:build"\n',
        "nb/helpers.py": "from torch import nn\nclass Helper(nn.Module):\n"
                         "    def forward(self, x):\n        return x\n",
    })
    write_notebook(tmp_path / "nb" / "model.ipynb", [
        new_markdown_cell("# Model"),
        new_code_cell("import helpers\nfrom torch import nn\n%load_ext autoreload"),
        new_code_cell("class Net(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
                      "        self.h = helpers.Helper()\n    def forward(self, x):\n        return self.h(x)"),
        new_code_cell("def build():\n    return Net(4)\nmodel = Net(dim=32)\n"
                      "for i in range(2):\n    class Hidden(nn.Module):\n        def forward(self, x):\n"
                      "            return x\n"),
    ])
    write_notebook(tmp_path / ".ipynb_checkpoints" / "model-checkpoint.ipynb",
                   [new_code_cell("from torch import nn\nclass Old(nn.Module):\n    def forward(self, x): return x")])
    d = discover(load_config(tmp_path))
    by_id = {t.id: t for t in d.targets}
    assert set(by_id) == {"built", "nb/helpers.py::Helper", "nb/model.ipynb::Net"}  # not Hidden, not a checkpoint
    net = by_id["nb/model.ipynb::Net"]
    assert (net.file, net.module, net.qualname, net.line, net.needs_args) == (
        "nb/model.ipynb", "nb/model.ipynb", "Net", 4, True)
    recipes = {(r.text, r.cell, r.line, r.origin) for r in net.recipes}
    assert {("Net(dim=32)", 4, 3, "nb/model.ipynb:cell 4:3"), ("Net(4)", 4, 2, "nb/model.ipynb:cell 4:2")} <= recipes
    built = by_id["built"]
    assert (built.file, built.line) == ("nb/model.ipynb", 10)
    assert d.imports["nb/model.ipynb"] == {"nb/helpers.py"}  # the notebook's directory comes first
    assert d.dependents("nb/helpers.py") == {"nb/helpers.py", "nb/model.ipynb"}


def test_a_notebook_that_is_not_one_is_a_file_error(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text("{ no")
    write_notebook(tmp_path / "cells.ipynb", [new_code_cell("from torch import nn"), new_code_cell("def (:"),
                                              new_code_cell("class N(nn.Module):\n    def forward(self, x): return x")])
    d = discover(load_config(tmp_path))
    errors = {(e.file, e.line) for e in d.file_errors}
    assert errors == {("broken.ipynb", 1), ("cells.ipynb", 2)}
    assert [t.id for t in d.targets] == ["cells.ipynb::N"]  # the other cells still count


def test_notebook_factory_paths_in_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.fxscope.targets.a]\nfactory = "sub dir/m.ipynb:build"\n')
    assert load_config(tmp_path).targets[0].factory == "sub dir/m.ipynb:build"
    (tmp_path / "pyproject.toml").write_text('[tool.fxscope.targets.a]\nfactory = "m.ipynb"\n')
    with pytest.raises(ConfigError, match="notebook.ipynb:callable"):
        load_config(tmp_path)
