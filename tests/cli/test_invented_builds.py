"""Zero-config builds with invented values are hypotheses, through the real CLI: a failure that
comes from a made-up value (an int where the code unpacks a pair, a width that does not divide by
the heads) rejects the build; the next candidate is tried, and when none is left the class is
"could not build" (FXS405, info) with what was tried, never an error at the user's line. A real fx
error of a build with invented values stays an error and says the values were invented. A class
name rebound at module level is not a target; a class deriving from a library model class is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine_support import CheckRun, cli_env, locate, plain_fx_of, run_check, write_tree

pytestmark = pytest.mark.requires_torch

SWIN = {
    "pkg/__init__.py": "",
    "pkg/swin.py": """
        import torch
        from torch import nn


        class PatchMerging(nn.Module):  # MARK class
            def __init__(self, input_resolution, dim):
                super().__init__()
                self.input_resolution = input_resolution
                self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

            def forward(self, x):
                H, W = self.input_resolution  # MARK unpack
                x = x.view(x.size(0), H // 2, 2, W // 2, 2, -1).permute(0, 1, 3, 2, 4, 5).flatten(3)
                return self.reduction(x)


        class PatchSplit3d(nn.Module):  # MARK class3d
            def __init__(self, input_resolution, dim):
                super().__init__()
                self.input_resolution = input_resolution
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                D, H, W = self.input_resolution  # MARK unpack3d
                return self.proj(x.view(x.size(0), D, H, W, -1))


        if hasattr(nn, "SiLU"):
            Swish = nn.SiLU
        else:
            class Swish(nn.Module):  # MARK swish
                def forward(self, x):
                    return x * torch.sigmoid(x)


        class Mish(nn.Module):
            def forward(self, x):
                return x * torch.tanh(nn.functional.softplus(x))


        Mish = nn.Mish

        Gelu = nn.GELU


        class Gelu(nn.Module):  # defined after the alias: the name is the class
            def forward(self, x):
                return nn.functional.gelu(x)
    """,
}

MODELS = {
    "pkg/__init__.py": "",
    "pkg/blocks.py": """
        from torch import nn


        class Attention(nn.Module):
            def __init__(self, dim, num_heads):
                super().__init__()
                self.dim = dim
                self.num_heads = num_heads
                self.qkv = nn.Linear(dim, dim * 3)

            def forward(self, x):
                if self.dim % self.num_heads:
                    raise ValueError("dim must be divisible by num_heads")  # MARK divisible
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return q * k * v


        class Branchy(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.proj = nn.Linear(width, width)

            def forward(self, x):
                if x.sum() > 0:  # MARK branch
                    return self.proj(x)
                return x


        class Stem(nn.Module):
            def __init__(self, dim=6, num_heads=4):
                super().__init__()
                self.proj = nn.Linear(dim, dim * num_heads)

            def forward(self, x):
                return self.proj(x)
    """,
    # the workspace passes dim=6 and num_heads=4 elsewhere: Attention's first guess (6 % 4 != 0)
    "scripts/make.py": """
        from pkg.blocks import Stem

        stem = Stem(dim=6, num_heads=4)
        other = Stem(dim=6, num_heads=4)
    """,
}

LIBRARY = {
    "pyproject.toml": """
        [tool.fxscope]
        timeout = 180  # importing and tracing BertModel on a busy machine
    """,
    "pkg/__init__.py": "",
    "pkg/hf.py": """
        from torch import nn
        from transformers import BertModel, PretrainedConfig, PreTrainedModel


        class TinyConfig(PretrainedConfig):
            model_type = "fxscope-tiny"

            def __init__(self, hidden=8, **kwargs):
                super().__init__(**kwargs)
                self.hidden = hidden


        class TinyPreTrained(PreTrainedModel):
            config_class = TinyConfig

            def __init__(self, config):
                super().__init__(config)
                self.proj = nn.Linear(config.hidden, config.hidden)

            def forward(self, x):
                return self.proj(x)


        class TinyHead(TinyPreTrained):  # a workspace model deriving from one
            pass


        class MyBert(BertModel):  # MARK bert
            pass
    """,
    "tests/test_hf.py": """
        from transformers import BertConfig

        from pkg.hf import MyBert


        def test_bert():
            MyBert(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,  # MARK site
                              intermediate_size=8, vocab_size=32, max_position_embeddings=16))
    """,
}




@pytest.fixture(scope="module")
def swin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("invented-swin")
    write_tree(root, SWIN)
    return root, run_check(root, "--show-info", timeout=300)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("invented-models")
    write_tree(root, MODELS)
    return root, run_check(root, "--show-info", timeout=300)


def test_an_invented_int_that_breaks_the_build_gives_way_to_a_pair(swin: tuple[Path, CheckRun]) -> None:
    """`H, W = self.input_resolution` with the placeholder int is the build's fault: rejected, and
    the next placeholder candidate (a pair, for a resolution) builds and traces."""
    root, run = swin
    target = run.targets["pkg/swin.py::PatchMerging"]
    assert target["status"] == "traced" and not run.findings("pkg/swin.py::PatchMerging")
    assert target["build"]["kind"] == "placeholder"
    assert target["build"]["text"] == "PatchMerging(input_resolution=(56, 56), dim=16)"
    unpack, _ = locate(root, "pkg/swin.py", "MARK unpack")
    assert not [f for f in run.report["findings"] if f["line"] == unpack]


def test_when_no_invented_value_fits_the_class_is_could_not_build(swin: tuple[Path, CheckRun]) -> None:
    root, run = swin
    (info,) = run.findings("pkg/swin.py::PatchSplit3d")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    assert info["line"] == locate(root, "pkg/swin.py", "MARK class3d")[0]
    message = info["message"]  # what was tried, and why each was rejected
    assert "`PatchSplit3d(input_resolution=56, dim=16)` (placeholder" in message
    assert "cannot unpack non-iterable int object" in message and "invented input_resolution=56" in message
    assert "`PatchSplit3d(input_resolution=(56, 56), dim=16)` (placeholder" in message
    assert "not enough values to unpack" in message
    assert run.targets["pkg/swin.py::PatchSplit3d"]["status"] == "skipped"
    assert "build" not in run.targets["pkg/swin.py::PatchSplit3d"]
    unpack, _ = locate(root, "pkg/swin.py", "MARK unpack3d")
    assert not [f for f in run.report["findings"] if f["line"] == unpack]
    assert run.rc == 0  # infos only: the exit code of a clean check


def test_the_build_fails_eagerly_too(swin: tuple[Path, CheckRun]) -> None:
    """The rejected build is the build's fault: plain Python fails on it the same way."""
    root, _ = swin
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); from pkg.swin import PatchMerging\n"
            "m = PatchMerging(input_resolution=32, dim=16)\n"
            "try:\n    m(torch.zeros(1, 1024, 16))\nexcept TypeError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(root)], env=cli_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.strip() == "cannot unpack non-iterable int object", proc.stderr


def test_a_rebound_class_name_is_not_a_target(swin: tuple[Path, CheckRun]) -> None:
    root, run = swin
    targets = run.targets
    assert "pkg/swin.py::Mish" not in targets  # `Mish = nn.Mish` after the class: never a target
    swish = targets["pkg/swin.py::Swish"]  # rebound in the branch that runs: not traced, not counted
    assert swish["status"] == "skipped" and not swish.get("modules") and "build" not in swish
    assert not run.findings("pkg/swin.py::Swish")
    gelu = targets["pkg/swin.py::Gelu"]
    assert gelu["status"] == "traced" and gelu["build"]["kind"] == "defaults"
    assert {m["type"] for m in gelu["modules"]} == {"pkg.swin.Gelu"}
    assert "after import the name `Swish` is `torch.nn.modules.activation.SiLU`" in run.stderr


def test_a_rejected_guess_gives_way_to_the_next_candidate(models: tuple[Path, CheckRun]) -> None:
    root, run = models
    attention = run.targets["pkg/blocks.py::Attention"]
    assert attention["status"] == "traced"
    assert (attention["build"]["kind"], attention["build"]["text"]) == ("placeholder", "Attention(dim=16, num_heads=2)")
    assert not run.findings("pkg/blocks.py::Attention")
    divisible, _ = locate(root, "pkg/blocks.py", "MARK divisible")
    assert not [f for f in run.report["findings"] if f["line"] == divisible]
    assert plain_fx_of(root, attention["build"]) == {"failed": False}


def test_a_real_fx_error_of_an_invented_build_stays_and_says_so(models: tuple[Path, CheckRun]) -> None:
    root, run = models
    errors = [f for f in run.report["findings"] if f["severity"] == "error"]
    line, _ = locate(root, "pkg/blocks.py", "MARK branch")
    assert [(f["code"], f["file"], f["line"]) for f in errors] == [("FXS101", "pkg/blocks.py", line)]
    assert "fxscope built `Branchy` with invented values: width=16; no call site found" in errors[0]["message"]
    branchy = run.targets["pkg/blocks.py::Branchy"]
    assert branchy["build"]["kind"] == "placeholder"
    assert plain_fx_of(root, branchy["build"])["failed"]  # plain fx fails on that build too
    assert run.rc == 1


def test_the_text_output_names_the_invented_values(models: tuple[Path, CheckRun]) -> None:
    root, _ = models
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", ".", "--color", "never"], cwd=root,
                          env=cli_env(), capture_output=True, text=True, timeout=300)
    assert "with invented values: width=16" in proc.stdout


def test_a_class_deriving_from_a_library_model_is_a_target(tmp_path: Path) -> None:
    write_tree(tmp_path, LIBRARY)
    run = run_check(tmp_path, "--show-info", timeout=300)
    targets = run.targets
    assert targets["pkg/hf.py::TinyHead"]["status"] == "traced"
    assert targets["pkg/hf.py::TinyHead"]["build"]["kind"] == "config-class"
    bert = targets["pkg/hf.py::MyBert"]  # reached: built from the test's tiny config, and traced
    assert bert["status"] in ("traced", "partial", "failed")
    assert bert["build"]["kind"] == "call-site"
    assert (bert["build"]["file"], bert["build"]["line"]) == ("tests/test_hf.py",
                                                              locate(tmp_path, "tests/test_hf.py", "MARK site")[0])
    assert bert.get("modules")
