"""Zero-config construction of classes that take a configuration object or pass ``**kwargs`` on,
through the real CLI: an unannotated ``config`` is built from the one workspace configuration
class that has every attribute the class reads off it; an annotated one is built even when other
parameters need placeholders; ``**kwargs`` passed on to a workspace class get what that class
requires (and what the constructor pins by assertion). Every such build is invented (a hypothesis):
two classes that fit equally choose nothing, and a build that fails is "could not build" (FXS405)
with what was tried, never an error at the user's line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine_support import CheckRun, locate, plain_fx_of, run_check, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/config.py": """
        from dataclasses import dataclass


        @dataclass
        class GPTConfig:
            n_layer: int = None  # set from a preset name in the training script
            n_head: int = None
            n_embd: int = None
            block_size: int = 16
            dropout: float = 0.0


        @dataclass
        class OptimizerConfig:
            learning_rate: float = 3e-4
            weight_decay: float = 0.1


        @dataclass
        class WindowConfig:
            window_size: int = None
            width: int = 8


        @dataclass
        class MoEConfig:
            dim: int
            hidden: int = 32
    """,
    "pkg/model.py": """
        import torch
        from torch import nn

        from pkg.config import GPTConfig, MoEConfig, WindowConfig


        class SelfAttention(nn.Module):
            def __init__(self, config):  # unannotated: its siblings take `config: GPTConfig`
                super().__init__()
                assert config.n_embd % config.n_head == 0
                self.n_head = config.n_head
                self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
                self.drop = nn.Dropout(config.dropout)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return self.drop(q * k + v)


        class Experts(nn.Module):
            def __init__(self, config: MoEConfig, num_experts: int):  # a config, and an int nothing names
                super().__init__()
                self.experts = nn.ModuleList(nn.Linear(config.dim, config.hidden) for _ in range(num_experts))

            def forward(self, x):
                return torch.stack([e(x) for e in self.experts]).sum(0)


        class WindowAttention(nn.Module):  # MARK window-class
            def __init__(self, config):
                super().__init__()
                self.window_size = config.window_size
                self.proj = nn.Linear(config.width, config.width)

            def forward(self, x):
                h, w = self.window_size  # MARK window-unpack
                return self.proj(x)[:, : h * w]


        class Router(nn.Module):
            def __init__(self, cfg):  # MARK router
                super().__init__()
                self.proj = nn.Linear(cfg.dim, cfg.hidden)
                self.cfg = cfg

            def forward(self, x):
                return self.proj(x)
    """,
    "pkg/ambiguous.py": """
        from torch import nn


        class SmallSettings:
            def __init__(self):
                self.width = 8
                self.depth = 2


        class LargeSettings:
            width = 64
            depth = 12


        class Tower(nn.Module):  # MARK tower
            def __init__(self, settings):  # both classes have `width` and `depth`
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(settings.width, settings.width)
                                              for _ in range(settings.depth)])

            def forward(self, x):
                return self.layers(x)
    """,
    "pkg/quant.py": """
        import torch
        from torch import nn


        class Residual(nn.Module):
            def __init__(self, *, levels, num_quantizers, dim=None):
                super().__init__()
                dim = dim or len(levels)
                self.project_in = nn.Linear(dim, len(levels))
                self.layers = nn.ModuleList(nn.Linear(len(levels), len(levels)) for _ in range(num_quantizers))
                self.project_out = nn.Linear(len(levels), dim)

            def forward(self, x):
                x = self.project_in(x)
                for layer in self.layers:
                    x = x + layer(x)
                return self.project_out(x)


        class GroupedResidual(nn.Module):
            def __init__(self, *, dim, groups=1, **kwargs):  # `levels`, `num_quantizers`: Residual's
                super().__init__()
                self.groups = nn.ModuleList([Residual(dim=dim // groups, **kwargs) for _ in range(groups)])

            def forward(self, x):
                for group in self.groups:
                    x = group(x)
                return x


        class Layers(nn.Module):
            def __init__(self, dim, depth=None, causal=False):
                super().__init__()
                assert depth is not None, "`depth` must be passed in"
                self.causal = causal
                self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

            def forward(self, x):
                return self.layers(x)


        class PrefixLayers(Layers):
            def __init__(self, **kwargs):
                assert "causal" not in kwargs
                super().__init__(causal=False, **kwargs)


        class Backbone(nn.Module):
            def __init__(self, width=8, num_classes=10):
                super().__init__()
                self.num_classes = num_classes
                self.proj = nn.Linear(width, width)
                self.head = nn.Linear(width, num_classes)

            def forward(self, x):
                return self.head(self.proj(x))


        class BackboneForPretraining(Backbone):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                assert self.num_classes == 0  # a feature extractor: no classes
                self.head = nn.Identity()


        class Odd(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                if width % 7:
                    raise ValueError("width must be a multiple of 7")
                self.proj = nn.Linear(width, width * heads)

            def forward(self, x):
                return self.proj(x)


        class OddChild(Odd):  # MARK odd
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
    """,
    "tests/test_quant.py": """
        from pkg.quant import Residual


        def test_residual():
            Residual(levels=[4, 4], num_quantizers=2, dim=8)
    """,
}





@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("config-builds")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def _traced(run: CheckRun, target: str) -> dict[str, Any]:
    found = run.targets[target]
    assert found["status"] == "traced", (found["status"], run.findings(target))
    assert not [f for f in run.findings(target) if f["severity"] == "error"]
    build: dict[str, Any] = found["build"]
    return build


def test_an_unannotated_config_is_the_workspace_class_with_the_attributes_it_reads(
        checked: tuple[Path, CheckRun]) -> None:
    """`config.n_embd`, `config.n_head`, `config.dropout`: GPTConfig has them (OptimizerConfig does
    not). Its defaults leave `n_embd` None: rejected, then the fields read are filled."""
    root, run = checked
    build = _traced(run, "pkg/model.py::SelfAttention")
    assert build["kind"] == "placeholder"
    assert build["text"] == "SelfAttention(config=GPTConfig(n_head=2, n_embd=16))"
    assert not run.findings("pkg/model.py::SelfAttention")
    assert plain_fx_of(root, build) == {"failed": False}
    router = _traced(run, "pkg/model.py::Router")  # `cfg.dim`, `cfg.hidden`: only MoEConfig has both;
    assert router["kind"] == "placeholder"  # its `dim`: the value the workspace passes for that name
    assert router["text"] == "Router(cfg=MoEConfig(dim=8))"


def test_an_annotated_config_is_built_when_other_parameters_need_placeholders(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    build = _traced(run, "pkg/model.py::Experts")
    assert build["kind"] == "placeholder"
    assert build["text"].startswith("Experts(config=MoEConfig(dim=8), num_experts=")


def test_kwargs_passed_on_get_what_the_callee_requires(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    grouped = _traced(run, "pkg/quant.py::GroupedResidual")  # the repository's values for those names
    assert grouped["kind"] == "vocabulary"
    assert grouped["text"] == "GroupedResidual(dim=8, levels=[4, 4], num_quantizers=2)"
    assert plain_fx_of(root, grouped) == {"failed": False}
    layers = _traced(run, "pkg/quant.py::Layers")  # `depth` defaults to None, and is asserted given
    assert layers["kind"] == "placeholder" and layers["text"].startswith("Layers(dim=") and "depth=2" in layers["text"]
    prefix = _traced(run, "pkg/quant.py::PrefixLayers")  # the same, through `super().__init__(**kwargs)`
    assert prefix["kind"] in ("vocabulary", "placeholder") and "depth=2" in prefix["text"]
    assert prefix["text"].startswith("PrefixLayers(dim=")
    pretraining = _traced(run, "pkg/quant.py::BackboneForPretraining")  # `assert self.num_classes == 0`
    assert pretraining["kind"] == "placeholder"
    assert pretraining["text"] == "BackboneForPretraining(num_classes=0)"


def test_two_config_classes_that_fit_equally_choose_nothing(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    target = run.targets["pkg/ambiguous.py::Tower"]
    assert target["status"] == "skipped" and "build" not in target
    (info,) = run.findings("pkg/ambiguous.py::Tower")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    assert info["line"] == locate(root, "pkg/ambiguous.py", "MARK tower")[0]
    assert "nothing fits `settings`" in info["message"]
    assert "`SmallSettings` and `LargeSettings` each have every attribute read off `settings`" in info["message"]


def test_a_build_that_fails_is_could_not_build_with_what_was_tried(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    target = run.targets["pkg/quant.py::OddChild"]
    assert target["status"] == "skipped" and "build" not in target
    (info,) = run.findings("pkg/quant.py::OddChild")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    assert info["line"] == locate(root, "pkg/quant.py", "MARK odd")[0]
    message = info["message"]
    assert "tried `OddChild(width=" in message and ", heads=" in message  # Odd's parameters, passed on
    assert "ValueError: width must be a multiple of 7" in message
    errors = [f for f in run.report["findings"] if f["severity"] == "error"]
    assert not errors, errors


def test_a_config_whose_made_up_fields_break_the_forward_is_could_not_build(checked: tuple[Path, CheckRun]) -> None:
    """`h, w = self.window_size` with the config's unset `None`, then with a placeholder int: both
    builds are the made-up values' fault (plain Python fails the same way), never the user's."""
    root, run = checked
    target = run.targets["pkg/model.py::WindowAttention"]
    assert target["status"] == "skipped" and "build" not in target
    (info,) = run.findings("pkg/model.py::WindowAttention")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    assert info["line"] == locate(root, "pkg/model.py", "MARK window-class")[0]
    assert "`WindowAttention(config=WindowConfig())` (placeholder" in info["message"]
    assert "`WindowAttention(config=WindowConfig(window_size=16))` (placeholder" in info["message"]
    assert "cannot unpack non-iterable NoneType object" in info["message"]
    line, _ = locate(root, "pkg/model.py", "MARK window-unpack")
    assert not [f for f in run.report["findings"] if f["line"] == line and f["file"] == "pkg/model.py"]
