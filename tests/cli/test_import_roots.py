"""Files under a directory that is no import name (``mixtral-moe/model.py``) through the real CLI:
each is imported the way Python imports it when a script of its directory runs (its import root
first on ``sys.path``), so its classes get what a class of a package gets (config annotations,
call sites, sibling modules) and are built from their own file, never from the python path's
module of the same name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine_support import CheckRun, locate, run_check, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    # Every job's process starts with the top-level `model` imported.
    "pyproject.toml": """
        [tool.fxscope]
        preload = ["model"]
    """,
    # The top level: a `model` module and a `pkg` package whose names the directories below reuse.
    "model.py": """
        from dataclasses import dataclass

        import torch
        from torch import nn


        @dataclass
        class ModelArgs:
            dim: int = 8


        class Gate(nn.Module):
            def __init__(self, config):  # nothing builds it, and no model here uses it
                super().__init__()
                self.proj = nn.Linear(config.dim, 1)

            def forward(self, x):
                return self.proj(x)


        class Transformer(nn.Module):
            def __init__(self, config: ModelArgs):
                super().__init__()
                self.proj = nn.Linear(config.dim, config.dim)

            def forward(self, x):
                return self.proj(x)
    """,
    "pkg/__init__.py": "",
    "pkg/config.py": """
        from dataclasses import dataclass


        @dataclass
        class NetConfig:  # no `width`: a build that took this module's config would fail
            dim: int = 4
    """,
    # A directory of scripts with a hyphen (run as `cd mixtral-moe && python generate.py`).
    "mixtral-moe/model.py": """
        from dataclasses import dataclass

        import torch
        from torch import nn


        @dataclass
        class ModelArgs:
            dim: int
            num_experts: int


        class Gate(nn.Module):
            def __init__(self, config):  # built inside Transformer only
                super().__init__()
                self.proj = nn.Linear(config.dim, config.num_experts)

            def forward(self, x):
                return self.proj(x).softmax(dim=-1)


        class Transformer(nn.Module):  # MARK transformer
            def __init__(self, config: ModelArgs):
                super().__init__()
                self.gate = Gate(config)
                self.experts = nn.ModuleList(nn.Linear(config.dim, config.dim) for _ in range(config.num_experts))

            def forward(self, x):
                weights = self.gate(x)
                out = x
                for index, expert in enumerate(self.experts):
                    out = out + expert(x) * weights[..., index : index + 1]
                return out
    """,
    "mixtral-moe/quantize.py": """
        import torch
        from torch import nn

        from model import ModelArgs, Transformer


        class QuantizedTransformer(nn.Module):
            def __init__(self, config: ModelArgs):  # the sibling's config, with its required fields
                super().__init__()
                self.inner = Transformer(config)
                self.scale = nn.Parameter(torch.ones(config.num_experts))

            def forward(self, x):
                return self.inner(x) * self.scale.sum()
    """,
    "mixtral-moe/generate.py": """
        import sys

        from model import ModelArgs, Transformer


        def main():
            model = Transformer(ModelArgs(dim=12, num_experts=3))  # MARK generate
            print(model, file=sys.stderr)


        if __name__ == "__main__":
            main()
    """,
    # A package inside a hyphenated directory (run as `cd runs-2 && python train.py`).
    "runs-2/pkg/__init__.py": "",
    "runs-2/pkg/config.py": """
        from dataclasses import dataclass


        @dataclass
        class NetConfig:
            width: int
            depth: int = 2
    """,
    "runs-2/pkg/layers.py": """
        from torch import nn


        class Block(nn.Module):
            def __init__(self, width: int):
                super().__init__()
                self.proj = nn.Linear(width, width)

            def forward(self, x):
                return self.proj(x).relu()
    """,
    "runs-2/pkg/net.py": """
        from torch import nn

        from pkg.config import NetConfig
        from .layers import Block


        class Net(nn.Module):
            def __init__(self, config: NetConfig):
                super().__init__()
                self.blocks = nn.Sequential(*[Block(config.width) for _ in range(config.depth)])

            def forward(self, x):
                return self.blocks(x)
    """,
    "runs-2/train.py": """
        from pkg.config import NetConfig
        from pkg.net import Net


        def main():
            net = Net(NetConfig(width=6, depth=3))  # MARK train
            return net


        if __name__ == "__main__":
            main()
    """,
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("import-roots")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def _traced(run: CheckRun, target: str) -> dict[str, Any]:
    found = run.targets[target]
    assert found["status"] == "traced", (found["status"], run.findings(target))
    assert not [f for f in run.findings(target) if f["severity"] == "error"], run.findings(target)
    return found


def _root_row(target: dict[str, Any]) -> dict[str, Any]:
    (row,) = [m for m in target["modules"] if m["path"] == ""]
    return row


def test_a_class_in_a_hyphenated_directory_is_built_from_its_config_and_call_sites(
        checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    transformer = _traced(run, "mixtral-moe/model.py::Transformer")
    # the sizes the script passes (found through its `from model import`), by the call or the annotation
    assert transformer["build"]["text"] in ("Transformer(ModelArgs(dim=12, num_experts=3))",
                                            "Transformer(config=ModelArgs(dim=12, num_experts=3))")
    row = _root_row(transformer)  # the class of that file, not the top-level model.py's
    assert (row["file"], row["line"]) == ("mixtral-moe/model.py", locate(root, "mixtral-moe/model.py",
                                                                         "MARK transformer")[0])
    assert len([m for m in transformer["modules"] if m["path"].startswith("experts.")]) == 3
    assert not run.findings("mixtral-moe/model.py::Transformer", "FXS405")


def test_a_sibling_module_builds_from_the_sibling_s_config(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    quantized = _traced(run, "mixtral-moe/quantize.py::QuantizedTransformer")
    build = quantized["build"]  # `ModelArgs` of `from model import` is mixtral-moe/model.py's (two required fields)
    assert build["kind"] == "annotation" and build["text"].startswith("QuantizedTransformer(config=ModelArgs(dim=")
    assert "num_experts=" in build["text"]
    types = {m["path"]: (m["file"], m["line"]) for m in quantized["modules"] if "file" in m}
    assert types["inner"][0] == "mixtral-moe/model.py"


def test_a_package_under_a_hyphenated_directory_resolves_its_own_imports(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    net = _traced(run, "runs-2/pkg/net.py::Net")
    # `pkg.config` there is runs-2/pkg/config.py (the top-level pkg's config has no `width`), and
    # `width=6` is what runs-2/train.py passes
    assert net["build"]["text"] in ("Net(NetConfig(width=6, depth=3))", "Net(config=NetConfig(width=6))")
    assert _root_row(net)["file"] == "runs-2/pkg/net.py"
    assert [m for m in net["modules"] if m["path"].startswith("blocks.") and m.get("file") == "runs-2/pkg/layers.py"]
    assert _traced(run, "runs-2/pkg/layers.py::Block")["build"]["text"] == "Block(width=6)"


def test_the_same_names_at_the_top_level_keep_their_own_builds(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    top = _traced(run, "model.py::Transformer")
    assert top["build"]["text"] == "Transformer(config=ModelArgs())"  # never the call site of mixtral-moe/
    assert _root_row(top)["file"] == "model.py"
    # mixtral-moe's Gate is reached inside its Transformer; the top-level Gate, which nothing reaches,
    # keeps its FXS405: the same qualified name `model.Gate` is another class there
    assert not run.findings("mixtral-moe/model.py::Gate", "FXS405")
    (gate,) = run.findings("model.py::Gate", "FXS405")
    assert gate["file"] == "model.py"


SCRIPTS = {
    "pyproject.toml": "[tool.fxscope]\n",
    # a directory of scripts (no __init__.py): `python translate/main.py` finds `src` beside main.py
    "translate/src/model.py": """
        from torch import nn


        class Translator(nn.Module):
            def __init__(self, vocab_table):  # nothing fxscope invents fits a table
                super().__init__()
                self.embed = nn.Embedding(len(vocab_table), 4)

            def forward(self, tokens):
                return self.embed(tokens)
        """,
    "translate/main.py": """
        from src.model import Translator

        model = Translator({"a": 0, "b": 1, "c": 2})
        """,
}


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("script-dirs")
    write_tree(root, SCRIPTS)
    return root, run_check(root, timeout=300)


def test_a_script_finds_the_modules_of_its_own_directory(scripts: tuple[Path, CheckRun]) -> None:
    root, run = scripts
    target = run.targets["translate/src/model.py::Translator"]
    assert target["status"] == "traced", run.findings(target["id"])
    assert target["build"]["kind"] == "call-site" and target["build"]["file"] == "translate/main.py", target["build"]
    assert target["build"]["text"].startswith("Translator({"), target["build"]
