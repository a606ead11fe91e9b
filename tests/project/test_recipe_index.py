"""The recipe index is incremental: after each edit, discovery reuses what the edit did not change,
and gives exactly the candidates a discovery from scratch gives."""

from __future__ import annotations

from pathlib import Path

from engine_support import write_tree

from fxscope.project import discover, load_config
from fxscope.project import recipes as recipe_index

FILES = {
    "pkg/__init__.py": "",
    "pkg/layers.py": """
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, depth=2):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)


        class Wrapper(nn.Module):
            def __init__(self, block, scale):
                super().__init__()
                self.block = block

            def forward(self, x):
                return self.block(x)
    """,
    "pkg/models.py": """
        from torch import nn

        from pkg.layers import Block


        class Net(nn.Module):
            def __init__(self, width, pretrained=True):
                super().__init__()
                self.block = Block(width)

            def forward(self, x):
                return self.block(x)
    """,
    "tests/test_net.py": """
        from pkg.models import Net


        def test_net():
            Net(width=8)
    """,
}

#: Edits, one after the other: (file, old text, new text).
EDITS = [
    ("pkg/models.py", "return self.block(x)", "x = x + 0\n        return self.block(x)"),  # a body: lines move
    ("tests/test_net.py", "Net(width=8)", "Net(width=12)"),  # a call site: the vocabulary changes
    ("pkg/layers.py", "depth=2", "depth=3"),  # a default
    ("pkg/layers.py", "class Wrapper", "Blocks = None\n\n\nclass Wrapper"),  # a new module-level name
    ("tests/test_net.py", "Net(width=12)", "Net(width=12)\n    Wrapper(block=Block(4), scale=2)"),  # a call site
    ("tests/test_net.py", "from pkg.models import Net", "from pkg.layers import Block, Wrapper\nfrom pkg.models import Net"),
    ("pkg/models.py", "from pkg.layers import Block", "from pkg.layers import *"),  # a star import
    ("pkg/layers.py", "Blocks = None", "Blocks = None\nscale = 2"),  # a plain name a star import binds
    ("pkg/layers.py", "class Block(", "class Block2("),  # a class renamed: names resolve elsewhere
]


def _candidates(root: Path, overlays: dict[Path, str]) -> dict[str, tuple[str, ...]]:
    found = discover(load_config(root), overlays=overlays)
    return {t.id: tuple(f"{r.kind}:{r.origin}:{r.text}" for r in t.recipes) for t in found.targets}


def test_discovery_after_each_edit_equals_discovery_from_scratch(tmp_path: Path) -> None:
    write_tree(tmp_path, FILES)
    recipe_index.clear_cache()
    overlays: dict[Path, str] = {}
    first = _candidates(tmp_path, overlays)
    assert first["pkg/models.py::Net"][0].startswith("call-site:tests/test_net.py:")
    assert "Net(width=8, pretrained=False)" in first["pkg/models.py::Net"][0]  # no weights, ever
    after: dict[str, dict[str, tuple[str, ...]]] = {}
    for rel, old, new in EDITS:
        path = tmp_path / rel
        text = overlays.get(path, path.read_text())
        assert old in text
        overlays[path] = text.replace(old, new, 1)
        incremental = _candidates(tmp_path, overlays)
        recipe_index.clear_cache()
        assert incremental == _candidates(tmp_path, overlays), (rel, new)
        after[new] = incremental
    imported = after["from pkg.layers import Block, Wrapper\nfrom pkg.models import Net"]
    assert imported["pkg/layers.py::Wrapper"][0] == "call-site:tests/test_net.py:7:Wrapper(block=Block(4), scale=2)"
    assert "pkg/layers.py::Block" not in incremental and "pkg/layers.py::Block2" in incremental


def test_an_unchanged_workspace_reuses_every_file_and_class(tmp_path: Path) -> None:
    write_tree(tmp_path, FILES)
    recipe_index.clear_cache()
    made: list[recipe_index.RecipeIndex] = []
    original = recipe_index.RecipeIndex.__init__

    def spy(self: recipe_index.RecipeIndex, ws) -> None:  # type: ignore[no-untyped-def]
        original(self, ws)
        made.append(self)

    recipe_index.RecipeIndex.__init__ = spy  # type: ignore[method-assign]
    try:
        _candidates(tmp_path, {})
        assert made[-1].reused == 0
        path = tmp_path / "pkg/models.py"
        _candidates(tmp_path, {path: path.read_text().replace("return self.block(x)", "y = x\n        return self.block(y)")})
    finally:
        recipe_index.RecipeIndex.__init__ = original  # type: ignore[method-assign]
    files, classes = 4, 3
    assert made[-1].reused >= files - 1 + classes - 1  # all but the edited file and its class
