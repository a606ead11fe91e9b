"""Inputs from the model's structure through the real CLI: tokens (B, H*W, C) on the grid a
constructor names, patch tokens from ``img_size // patch_size``, companions the forward's parameter
names fix from the first input (a context and its mask, a diffusion timestep); an invented input the
eager forward rejects is never used (FXS409 says what was tried, no finding comes from it); and a
sub-network argument is built the smallest way that builds, not from the repository's full-size
example."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_support import CheckRun, locate, run_check, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODELS = Path(__file__).resolve().parents[1] / "models" / "token_inputs.py"

WRAPPERS = """
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self, dim, depth):
            super().__init__()
            self.dim = dim
            self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

        def forward(self, x):
            return self.layers(x)


    class MAE(nn.Module):
        def __init__(self, encoder, decoder_dim):
            super().__init__()
            self.encoder = encoder
            self.decoder = nn.Linear(encoder.dim, decoder_dim)

        def forward(self, x):
            return self.decoder(self.encoder(x))


    class ResNetBackbone(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.width = width
            self.conv = nn.Conv2d(3, width, 3)

        def forward(self, x):
            return self.conv(x)


    class Detector(nn.Module):
        def __init__(self, backbone):  # the one class the repository builds whose name ends in Backbone
            super().__init__()
            self.backbone = backbone
            self.head = nn.Conv2d(backbone.width, 2, 1)

        def forward(self, x):
            return self.head(self.backbone(x))


    class Distiller(nn.Module):  # MARK distiller
        def __init__(self, teacher, student):  # nothing relates: never a random class
            super().__init__()
            self.teacher = teacher
            self.student = student

        def forward(self, x):
            return self.student(x) - self.teacher(x)
    """

README = """
    # wrappers

    ```python
    from wrappers import Encoder, ResNetBackbone
    encoder = Encoder(dim=1024, depth=12)
    backbone = ResNetBackbone(width=4)
    ```
    """


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("structured")
    write_tree(root, {"pyproject.toml": '[tool.fxscope]\ntimeout = 240\nanalyses = ["fx", "compile", "export"]\n',
                      "wrappers.py": WRAPPERS, "README.md": README})
    (root / "token_inputs.py").write_text(MODELS.read_text())
    return root, run_check(root, "--show-info", timeout=900)


def _inputs(run: CheckRun, name: str) -> dict:  # type: ignore[type-arg]
    target = run.targets[f"token_inputs.py::{name}"]
    assert "inputs" in target, run.findings(target["id"])
    return target["inputs"]  # type: ignore[no-any-return]


def test_tokens_on_the_grid_the_constructor_names(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    block = _inputs(run, "TokenBlock")
    assert block["specs"] == {"x": {"shape": [2, 24, 8], "dtype": "float32"}} and block["kind"] == "structure"
    assert "input_resolution=(4, 6) as 24 tokens" in block["text"] and "file" not in block
    assert run.targets["token_inputs.py::TokenBlock"]["analyses"]["export"]["ok"] is True
    patches = _inputs(run, "PatchTokens")  # (16 // 4) ** 2 tokens of embed_dim
    assert patches["specs"] == {"x": {"shape": [2, 16, 8], "dtype": "float32"}}
    assert "img_size=16 and patch_size=4 as 16 tokens" in patches["text"]


def test_companions_the_parameter_names_fix(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    cross = _inputs(run, "CrossBlock")  # the context's width from context_dim, a mask over the positions
    assert cross["specs"] == {"x": {"shape": [2, 8, 8], "dtype": "float32"},
                              "context": {"shape": [2, 8, 6], "dtype": "float32"},
                              "mask": {"shape": [2, 8], "dtype": "bool"}}
    assert run.targets["token_inputs.py::CrossBlock"]["analyses"]["compile"]["counts"]["graphs"] == 1
    time = _inputs(run, "TimeConv")  # an image and one timestep per sample
    assert time["specs"]["x"]["shape"][:2] == [2, 3] and time["specs"]["t"] == {"shape": [2], "dtype": "float32"}
    assert "with t (2,)" in time["text"]
    gated = _inputs(run, "GatedResidual")  # a residual stream shaped like the input it is added to
    assert gated["specs"]["residual"] == gated["specs"]["x"] and gated["specs"]["x"]["shape"][-1] == 8


def test_an_invented_input_that_fails_eagerly_is_never_used(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    target = run.targets["token_inputs.py::ClsTokens"]
    assert target["status"] == "traced" and "inputs" not in target and "analyses" not in target
    [info] = run.findings(target["id"], "FXS409")
    assert info["line"] == locate(root, "token_inputs.py", "class ClsTokens")[0]
    assert "input_resolution=(4, 4) as 16 tokens" in info["message"] and "needs a class token" in info["message"]
    assert [f["code"] for f in run.findings(target["id"])] == ["FXS409"]  # nothing from a made-up input


def test_a_sub_network_is_built_the_smallest_way(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    mae = run.targets["wrappers.py::MAE"]
    assert mae["status"] == "traced", run.findings("wrappers.py::MAE")
    # not the README's full-size Encoder(dim=1024, depth=12): the smallest Encoder that builds
    assert mae["build"]["text"].startswith("MAE(encoder=Encoder(dim=16, depth=2)"), mae["build"]["text"]
    assert run.targets["wrappers.py::Encoder"]["build"]["text"] == "Encoder(dim=1024, depth=12)"


def test_a_generic_sub_network_name_gets_the_class_that_relates_or_none(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    detector = run.targets["wrappers.py::Detector"]
    assert detector["status"] == "traced", run.findings("wrappers.py::Detector")
    assert detector["build"]["text"] == "Detector(backbone=ResNetBackbone(width=4))"
    distiller = run.targets["wrappers.py::Distiller"]
    assert distiller["status"] == "skipped" and "build" not in distiller
    [info] = run.findings("wrappers.py::Distiller")
    assert info["code"] == "FXS405" and info["line"] == locate(root, "wrappers.py", "MARK distiller")[0]
    assert "nothing fits `teacher`, `student`: no workspace nn.Module class" in info["message"]
