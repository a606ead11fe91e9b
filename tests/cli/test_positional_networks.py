"""A sub-network the repository passes by position counts for the parameter at that position, through
the real CLI: ``GaussianDiffusion(model, image_size=32)`` after ``model = Unet(dim=8)`` tells fxscope
what a ``model`` is, so a sibling wrapper nobody constructs (``VariationalDiffusion(model)``) is built
with a ``Unet`` too; a plain value passed by position is not a sub-network."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_support import CheckRun, locate, run_check, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

DIFFUSION = """
    from torch import nn


    class Unet(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
            self.conv = nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, x):
            return self.conv(x)


    class GaussianDiffusion(nn.Module):
        def __init__(self, model, image_size):
            super().__init__()
            self.model = model
            self.image_size = image_size

        def forward(self, img):
            return self.model(img).mean()


    class VariationalDiffusion(nn.Module):  # nobody constructs it: its `model` is what the others get
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, img):
            return self.model(img) * 2


    class Scaled(nn.Module):  # MARK scaled
        def __init__(self, factor_table):  # a plain value passed by position elsewhere is no sub-network
            super().__init__()
            self.factor_table = factor_table

        def forward(self, x):
            return x * self.factor_table["x"]


    class Pipeline(nn.Module):
        def __init__(self, factor_table, other):
            super().__init__()
            self.factor_table = factor_table
            self.other = other

        def forward(self, x):
            return self.other(x) * self.factor_table["x"]
    """

README = """
    # diffusion

    ```python
    from diffusion import Unet, GaussianDiffusion, Pipeline
    model = Unet(dim=8)
    diffusion = GaussianDiffusion(model, image_size=32)
    pipeline = Pipeline({"x": 2}, Unet(dim=4))
    ```
    """


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("positional")
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "diffusion.py": DIFFUSION, "README.md": README})
    return root, run_check(root, timeout=600)


def test_a_sub_network_passed_by_position_counts_for_that_parameter(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    target = run.targets["diffusion.py::VariationalDiffusion"]
    assert target["status"] == "traced", run.findings(target["id"])
    assert target["build"]["text"].startswith("VariationalDiffusion(model=Unet(dim="), target["build"]["text"]
    assert run.findings(target["id"]) == []


def test_a_plain_value_passed_by_position_is_not_a_sub_network(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    target = run.targets["diffusion.py::Scaled"]
    assert target["status"] == "skipped" and "build" not in target, target
    [why] = run.findings(target["id"])
    assert why["code"] == "FXS405" and why["line"] == locate(root, "diffusion.py", "MARK scaled")[0]
    assert "nothing fits `factor_table`" in why["message"]
    pipeline = run.targets["diffusion.py::Pipeline"]  # the README's own construction, as written
    assert pipeline["status"] == "traced" and pipeline["build"]["kind"] == "readme", pipeline
