"""Quick-fix edits applied to real text give the expected, valid result."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from fxscope.lsp.edits import (add_to_config_list, apply, enclosing_function, module_name,
                               replace_int_shape, replace_len, suppress)

MODELS = Path(__file__).resolve().parent.parent / "models"


def _range_of(text: str, line_no: int, needle: str) -> tuple[int, int, int, int]:
    line = text.split("\n")[line_no - 1]
    col = line.index(needle) + 1
    return line_no, col, line_no, col + len(needle)


def _marker_line(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if line.rstrip().endswith(marker))


def test_suppress_on_a_corpus_line_and_existing_lists():
    text = (MODELS / "length.py").read_text()
    line = _marker_line(text, "# FXS103 len")
    out = apply(text, [suppress(text, line, "FXS103")])
    assert out.split("\n")[line - 1] == "        n = len(x)  # FXS103 len  # fxscope: ignore[FXS103]"
    assert out.count("\n") == text.count("\n")
    ast.parse(out)
    assert suppress(out, line, "FXS103") is None  # already suppressed
    assert suppress("x  # fxscope: ignore", 1, "FXS101") is None  # bare ignore covers everything
    t = "x  # fxscope: ignore[ FXS101 ]  # why"
    assert apply(t, [suppress(t, 1, "FXS104")]) == "x  # fxscope: ignore[FXS101, FXS104]  # why"
    assert apply("", [suppress("", 1, "FXS101")]) == "# fxscope: ignore[FXS101]"
    assert suppress("x", 3, "FXS101") is None


def test_len_replacements_on_the_corpus():
    text = (MODELS / "length.py").read_text()
    line = _marker_line(text, "# FXS103 len")
    out = apply(text, [replace_len(text, *_range_of(text, line, "len(x)"))])
    assert "n = x.size(0)  # FXS103 len" in out
    line = _marker_line(text, "# FXS103 shape")
    out = apply(text, [replace_len(text, *_range_of(text, line, "len(x.shape)"))])
    assert "if x.dim() == 2:" in out
    line = _marker_line(text, "# FXS103 inner")
    out = apply(text, [replace_len(text, *_range_of(text, line, "len(x)"))])
    assert "return self.proj(x) / x.size(0)" in out
    ast.parse(out)
    t = "n = len(a + b)"
    assert apply(t, [replace_len(t, *_range_of(t, 1, "len(a + b)"))]) == "n = (a + b).size(0)"
    assert replace_len("n = len(*xs)", 1, 5, 1, 13) is None
    assert replace_len("n = x.sum()", 1, 5, 1, 12) is None


def test_int_shape_replacement():
    text = "def f(x, i):\n    steps = int(x.shape[1])\n    k = int(x.size(i + 1))\n    m = int(x.sum())\n"
    out = apply(text, [replace_int_shape(text, *_range_of(text, 2, "int(x.shape[1])"))])
    assert "steps = x.size(1)" in out
    out = apply(text, [replace_int_shape(text, *_range_of(text, 3, "int(x.size(i + 1))"))])
    assert "k = x.size(i + 1)" in out
    assert replace_int_shape(text, *_range_of(text, 4, "int(x.sum())")) is None
    assert replace_int_shape("y = int(x.shape[1:])", 1, 5, 1, 21) is None


@pytest.mark.parametrize("before, after", [
    (None, {"leaf-modules": ["pkg.A"]}),
    ("", {"leaf-modules": ["pkg.A"]}),
    ('[project]\nname = "x"\n', {"leaf-modules": ["pkg.A"]}),
    ('[project]\nname = "x"', {"leaf-modules": ["pkg.A"]}),
    ('[tool.fxscope]\ntimeout = 3\n\n[tool.fxscope.targets.t]\nfactory = "m:f"\n', {"leaf-modules": ["pkg.A"], "timeout": 3}),
    ('[tool.fxscope]\nleaf-modules = []\n', {"leaf-modules": ["pkg.A"]}),
    ('[tool.fxscope]\nleaf-modules = ["x.Y",]  # keep\n', {"leaf-modules": ["x.Y", "pkg.A"]}),
    ('[tool.fxscope]\nleaf-modules = [\n    "x.Y",\n]\n', {"leaf-modules": ["x.Y", "pkg.A"]}),
    ('[tool.fxscope]\nleaf-modules = [\n    "x.Y"  # why\n    # more\n]\ndevice = "cpu"\n', {"leaf-modules": ["x.Y", "pkg.A"], "device": "cpu"}),
    ('[tool.fxscope]\nleaf-modules = ["a]b", \'c[d\']\n', {"leaf-modules": ["a]b", "c[d", "pkg.A"]}),
    ('[tool.fxscope.targets.t]\nfactory = "m:f"\n', {"leaf-modules": ["pkg.A"]}),
])
def test_add_to_config_list(before, after):
    edit = add_to_config_list(before, "leaf-modules", "pkg.A")
    out = apply(before or "", [edit])
    data = tomllib.loads(out)["tool"]["fxscope"]
    for key, value in after.items():
        assert data[key] == value, out
    if before and "[project]" in before:
        assert tomllib.loads(out)["project"] == {"name": "x"}
    assert add_to_config_list(out, "leaf-modules", "pkg.A") is None  # idempotent


def test_add_to_config_list_refuses_what_it_cannot_edit_safely():
    assert add_to_config_list("[tool.fxscope\n", "leaf-modules", "a.B") is None  # invalid TOML
    assert add_to_config_list('[tool]\nfxscope.timeout = 3\n', "leaf-modules", "a.B") is None
    assert add_to_config_list('[tool.fxscope]\nleaf-modules = "a.B"\n', "leaf-modules", "c.D") is None


def test_wrap_functions_entry_for_a_helper():
    text = (MODELS / "helpers.py").read_text()
    tree = ast.parse(text)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert enclosing_function(text, func.body[0].lineno) == func.name
    assert enclosing_function("class A:\n    def f(self):\n        pass\n", 3) is None
    name = module_name(MODELS / "helpers.py", [MODELS])
    edit = add_to_config_list('[tool.fxscope]\n', "wrap-functions", f"{name}:{func.name}")
    out = apply('[tool.fxscope]\n', [edit])
    assert tomllib.loads(out)["tool"]["fxscope"]["wrap-functions"] == [f"helpers:{func.name}"]


def test_module_name():
    root = Path("/ws")
    assert module_name(root / "pkg" / "__init__.py", [root]) == "pkg"
    assert module_name(root / "a-b" / "m.py", [root]) is None
    assert module_name(Path("/elsewhere/m.py"), [root]) is None


