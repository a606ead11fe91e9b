"""The package's layers import downwards only (model at the bottom, the front ends at the top), so
the tracing core never learns about files or editors and the session can use the report views."""

from __future__ import annotations

import ast
from pathlib import Path

import fxscope

PACKAGE = Path(fxscope.__file__).parent

# Bottom to top. A module may import its own layer, any layer listed before it, and the base
# modules (``fxscope`` itself and ``fxscope.errors``).
LAYERS = ["model", "trace", "project", "job", "worker", "cache", "engine", "report", "graphview", "session",
          "server", "lsp", "cli"]


def _layer(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0] if len(parts) > 1 else ""


def _imported_layers(path: Path) -> set[tuple[int, str]]:
    """(line, top-level fxscope subpackage) for every absolute fxscope import, lazy ones included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "fxscope":  # ``from fxscope import trace``
                names = [f"fxscope.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "fxscope":  # ``fxscope.__version__`` and the like belong to the base
                found.add((node.lineno, parts[1] if len(parts) > 1 and parts[1] in LAYERS else ""))
    return found


def test_every_subpackage_has_a_layer() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert subpackages == set(LAYERS)


def test_imports_point_down_only() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = _layer(path)
        if layer not in LAYERS:  # the base modules and ``__main__`` (which runs the CLI)
            continue
        rank = LAYERS.index(layer)
        for line, other in sorted(_imported_layers(path)):
            if other in LAYERS and LAYERS.index(other) > rank:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} imports fxscope.{other}")
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from fxscope.lsp import server\n    from fxscope import cli\n")
    assert _imported_layers(source) == {(2, "lsp"), (3, "cli")}
