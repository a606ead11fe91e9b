"""Zero-config construction through the real CLI: sub-network arguments built from the workspace's
own classes, int parameters and config dataclasses with required fields, ``**kwargs`` constructors,
and no candidate that downloads (the construction policy, ``fxscope.project.policy``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_support import CheckRun, locate, run_check, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/vit.py": """
        import torch
        from torch import nn


        class ViT(nn.Module):
            def __init__(self, dim, depth):
                super().__init__()
                self.dim = dim
                self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

            def forward(self, x):
                return self.layers(x)


        class Encoder(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.width = width
                self.proj = nn.Linear(width, width)

            def forward(self, x):
                return self.proj(x)
    """,
    "pkg/wrappers.py": """
        import torch
        from torch import nn

        from pkg.vit import Encoder, ViT


        class Recorder(nn.Module):
            def __init__(self, vit):  # a reader builds the ViT the repository builds
                super().__init__()
                self.vit = vit
                self.head = nn.Linear(vit.dim, 2)

            def forward(self, x):
                return self.head(self.vit(x))


        class MAE(nn.Module):
            def __init__(self, encoder: Encoder, decoder_dim):  # MARK mae
                super().__init__()
                self.encoder = encoder
                self.decoder = nn.Linear(encoder.width, decoder_dim)

            def forward(self, x):
                return self.decoder(self.encoder(x))


        class Distiller(nn.Module):
            def __init__(self, student):  # what tests/ pass by that name
                super().__init__()
                self.student = student

            def forward(self, x):
                return self.student(x) * 2
    """,
    "pkg/sizes.py": """
        from dataclasses import dataclass

        import torch
        from torch import nn


        class Scale(nn.Module):
            def __init__(self, k):  # a plain int nothing names: a small search
                super().__init__()
                self.proj = nn.Linear(k, k)

            def forward(self, x):
                return self.proj(x)


        class Head(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x).softmax(dim=-1)  # dim=-1 is an axis, never a size


        @dataclass
        class BlockConfig:
            dim: int
            depth: int


        class Block(nn.Module):
            def __init__(self, config: BlockConfig):  # a config dataclass with required fields
                super().__init__()
                self.layers = nn.ModuleList(nn.Linear(config.dim, config.dim) for _ in range(config.depth))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class FromKwargs(nn.Module):
            def __init__(self, **kwargs):  # the names the body reads
                super().__init__()
                self.proj = nn.Linear(kwargs["dim"], kwargs.get("out", 4))

            def forward(self, x):
                return self.proj(x)
    """,
    "pkg/weights.py": """
        import torch
        from torch import nn


        def fetch(url):
            from urllib.request import urlopen
            return urlopen(url, timeout=5)


        class Backbone(nn.Module):
            def __init__(self, pretrained=True):
                super().__init__()
                self.proj = nn.Linear(4, 4)
                if pretrained:  # MARK download
                    fetch("https://download.example.invalid/backbone.pth")

            def forward(self, x):
                return self.proj(x)


        class Hub(nn.Module):
            def __init__(self, size=4):
                super().__init__()
                self.proj = nn.Linear(size, size)
                fetch("https://download.example.invalid/hub.pth")  # MARK always

            def forward(self, x):
                return self.proj(x)


        class Pretrained(nn.Module):
            def __init__(self, proj):
                super().__init__()
                self.proj = proj

            @classmethod
            def from_pretrained(cls, name):
                return cls(torch.load(name))

            def forward(self, x):
                return self.proj(x)
    """,
    "tests/test_models.py": """
        from pkg.vit import ViT, Encoder
        from pkg.wrappers import Distiller
        from pkg.weights import Pretrained


        def test_vit():
            ViT(dim=8, depth=2)


        def test_teacher():
            Distiller(student=Encoder(width=6)).train()


        def test_pretrained():
            Pretrained.from_pretrained("tiny.pt")
    """,
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("construction")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def _build(run: CheckRun, target: str) -> dict:  # type: ignore[type-arg]
    found = run.targets[target]
    assert found["status"] == "traced", (found["status"], run.findings(target))
    return found["build"]


def test_a_sub_network_argument_is_a_workspace_class_built_by_its_own_recipe(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    recorder = _build(run, "pkg/wrappers.py::Recorder")  # `vit`: the class ViT, as tests/ build it
    assert recorder["text"] == "Recorder(vit=ViT(dim=8, depth=2))" and recorder["kind"] == "placeholder"
    mae = _build(run, "pkg/wrappers.py::MAE")  # annotated `encoder: Encoder`
    assert mae["text"].startswith("MAE(encoder=Encoder(width=")
    distiller = _build(run, "pkg/wrappers.py::Distiller")  # a call site passes one by that name
    assert distiller["text"] == "Distiller(student=Encoder(width=6))" and distiller["kind"] == "call-site"
    assert not run.findings("pkg/wrappers.py::Recorder") and not run.findings("pkg/wrappers.py::MAE")


def test_int_parameters_config_dataclasses_and_kwargs_constructors_are_built(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    assert _build(run, "pkg/sizes.py::Scale")["text"] == "Scale(k=16)"  # nothing names `k`: the search
    head = _build(run, "pkg/sizes.py::Head")["text"]
    assert "-1" not in head and head == "Head(dim=8)"  # the workspace's constructors pass dim=8, not the axis
    block = _build(run, "pkg/sizes.py::Block")
    assert block["kind"] == "annotation" and block["text"].startswith("Block(config=BlockConfig(dim=")
    assert _build(run, "pkg/sizes.py::FromKwargs")["text"] == "FromKwargs(dim=8)"
    for target in ("Scale", "Head", "Block", "FromKwargs"):
        assert not [f for f in run.findings(f"pkg/sizes.py::{target}") if f["severity"] == "error"]


def test_no_candidate_downloads_and_what_was_tried_says_so(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    backbone = _build(run, "pkg/weights.py::Backbone")  # its default asks for weights: passed off
    assert backbone["text"] == "Backbone(pretrained=False)" and backbone["kind"] == "defaults"
    (hub,) = run.findings("pkg/weights.py::Hub", "FXS405")  # it downloads whatever it is given
    assert hub["severity"] == "info" and "fxscope never downloads" in hub["message"]
    assert "`Hub()` (defaults" in hub["message"]
    (pretrained,) = run.findings("pkg/weights.py::Pretrained", "FXS405")
    assert "`pkg.weights.Pretrained.from_pretrained` reads weights or the network: fxscope never downloads" \
        in pretrained["message"]
    always, _ = locate(root, "pkg/weights.py", "MARK always")
    assert not [f for f in run.report["findings"] if f["severity"] == "error" and f["file"] == "pkg/weights.py"]
    assert always > 0
