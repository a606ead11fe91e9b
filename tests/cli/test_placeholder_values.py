"""Zero-config invents the values a class's parameters call for, through the real CLI: a shape
the class unpacks, a flag, an index, a length, a float, an iterated tuple, a subscripted sequence of
sizes, an activation, the required parameters of a torch.nn base, and a larger size when the small
ones do not build. Each of these classes had no candidate before. Builds with invented values stay
hypotheses: one whose build or trace fails because of them is "could not build" (FXS405) with what
was tried, never an error at the user's line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine_support import CheckRun, locate, plain_fx_of, run_check

pytestmark = pytest.mark.requires_torch

MODELS = Path(__file__).resolve().parent.parent / "models"
FILE = "placeholder_values.py"



@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("placeholder-values")
    shutil.copy(MODELS / FILE, root / FILE)
    return root, run_check(root, "--show-info", timeout=600)


@pytest.mark.parametrize("name, text", [
    ("PatchDiscriminator", "PatchDiscriminator(input_shape=(3, 64, 64))"),
    ("Generator", "Generator(latent_dim=16, img_shape=(3, 64, 64))"),
    ("Resample", "Resample(channels=16, use_conv=False)"),
    ("Masked", "Masked(dim=16, causal=False)"),
    ("ConcatCombine", "ConcatCombine(dim=16, prev_layer_ind=0)"),
    ("Memory", "Memory(dim_model=16, mem_len=16)"),
    ("Scale", "Scale(value=1.0, fn=torch.nn.Identity())"),
    ("ShiftTokens", "ShiftTokens(shifts=(0, 1), fn=torch.nn.Identity())"),
    ("GLU", "GLU(dim_in=16, dim_out=16, activation=torch.nn.GELU())"),
    ("FpnHead", "FpnHead(dim=16, fpn_dims=(16, 16, 16))"),
    ("SmallGroups", "SmallGroups(channels=16)"),  # builds small: keeps the small size
    ("GroupNormBlock", "GroupNormBlock(channels=128)"),  # GroupNorm(32, c): 16 and 2 do not build
    ("GroupNorm32", "GroupNorm32(num_groups=2, num_channels=16)"),  # nn.GroupNorm's parameters
])
def test_a_class_builds_from_the_values_its_parameters_call_for(checked: tuple[Path, CheckRun], name: str,
                                                               text: str) -> None:
    root, run = checked
    target = run.targets[f"{FILE}::{name}"]
    assert target["status"] == "traced", (target, run.findings(f"{FILE}::{name}"))
    assert (target["build"]["kind"], target["build"]["text"]) == ("placeholder", text)
    assert not run.findings(f"{FILE}::{name}")
    assert plain_fx_of(root, target["build"]) == {"failed": False}  # plain fx traces that build too


def test_when_no_invented_size_builds_the_class_says_what_was_tried(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    (info,) = run.findings(f"{FILE}::OddGroups")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    message = " ".join(info["message"].split())
    assert "`OddGroups(channels=16)` (placeholder" in message and "`OddGroups(channels=128)` (placeholder" in message
    assert "num_channels (128) must be divisible by num_groups (24)" in message
    assert run.targets[f"{FILE}::OddGroups"]["status"] == "skipped"


def test_an_invented_shape_the_forward_rejects_is_could_not_build(checked: tuple[Path, CheckRun]) -> None:
    """Every shape candidate builds, and the forward's unpacking of it fails: the build's fault
    (FXS405 with each candidate and why), never an error at the user's line."""
    root, run = checked
    (info,) = run.findings(f"{FILE}::Volume")
    assert (info["code"], info["severity"]) == ("FXS405", "info")
    message = " ".join(info["message"].split())
    for shape in ("(3, 64, 64)", "(3, 32, 32)", "(3, 128, 128)"):
        assert f"`Volume(input_shape={shape})` (placeholder" in message
    assert "not enough values to unpack (expected 4, got 3)" in message
    assert "invented input_shape=(3, 64, 64) is read" in message
    volume, _ = locate(root, FILE, "MARK volume")
    assert not [f for f in run.report["findings"] if f["line"] == volume]


def test_only_what_still_has_no_value_is_named(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    (info,) = run.findings(f"{FILE}::Lookup")
    assert info["code"] == "FXS405"
    assert "nothing fits `thing_map`: " in info["message"] and "`dim`" not in info["message"]


def test_no_error_and_a_clean_exit(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    assert not [f for f in run.report["findings"] if f["severity"] == "error"]
    assert not run.findings(code="FXS401")
    assert run.rc == 0

