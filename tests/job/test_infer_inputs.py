"""Inferring a class's example inputs in the worker: each source (a literal call, a library
convention, an annotation with named dimensions, the first layer), and the eager check that keeps
only an input the forward runs on (meta first, then real CPU tensors on a model of its own)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from fxscope.job.inputs import infer_inputs  # noqa: E402
from fxscope.model.inputs import InputCandidate, TensorShape  # noqa: E402

pytestmark = pytest.mark.requires_torch


def _never_user(path: str) -> bool:
    return False


class Vision(nn.Module):
    def __init__(self, image_size=24, patch_size=8):
        super().__init__()
        self.image_size = image_size
        self.proj = nn.Conv2d(3, 4, patch_size, patch_size)
        self.pos = nn.Parameter(torch.zeros(1, 4, image_size // patch_size, image_size // patch_size))

    def forward(self, img):
        return self.proj(img) + self.pos  # only image_size x image_size fits


class Counting(nn.Module):
    calls = 0

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        Counting.calls += 1
        if x.sum().item() > 1e9:  # data-dependent: meta cannot answer, the CPU run decides
            return x
        return self.fc(x)


class TwoInputs(nn.Module):
    def forward(self, a, b):
        return a @ b


class Dummy(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    @property
    def dummy_inputs(self):
        return {"input_ids": torch.zeros(3, 7, dtype=torch.long)}

    def forward(self, input_ids, attention_mask=None):
        return self.emb(input_ids)


class Timm(nn.Module):
    def __init__(self):
        super().__init__()
        self.pretrained_cfg = {"input_size": (3, 20, 20)}
        self.conv = nn.Conv2d(3, 2, 3)

    def forward(self, x):
        assert x.shape[-1] == 20
        return self.conv(x)


def test_structure_takes_the_spatial_size_from_the_model() -> None:
    got = infer_inputs(Vision, (), _never_user)
    assert got.inputs is not None and got.inputs.kind == "structure"
    assert got.inputs.specs == (("img", TensorShape((2, 3, 24, 24))),)
    assert "proj" in got.inputs.text and "Conv2d" in got.inputs.text


def test_a_literal_call_that_does_not_run_is_rejected_and_said() -> None:
    wrong = InputCandidate("call-site", "tests/t.py", 3, "net(x)", args=(TensorShape((2, 3, 32, 32)),))
    got = infer_inputs(Vision, (wrong,), _never_user)
    assert got.inputs is not None and got.inputs.kind == "structure"  # the next candidate
    assert got.tried and got.tried[0].startswith("`net(x)` as in tests/t.py:3") and "RuntimeError" in got.tried[0]


def test_a_meta_limitation_leaves_the_decision_to_the_cpu_run() -> None:
    Counting.calls = 0
    hint = InputCandidate("readme", "README.md", 9, "m(torch.randn(4, 5))", args=(TensorShape((4, 5)),))
    got = infer_inputs(Counting, (hint,), _never_user)
    assert got.inputs is not None and (got.inputs.kind, got.inputs.file, got.inputs.line) == ("readme", "README.md", 9)
    assert got.inputs.describe() == "inputs (4, 5) as in README.md:9"
    assert Counting.calls == 2  # once on meta (undecided), once on the CPU


def test_an_annotation_s_named_dimensions_are_filled() -> None:
    hint = InputCandidate("annotation", "m.py", 30, "forward(a: (n, k), b: (k, m))",
                          kwargs=(("a", TensorShape(("n", "k"))), ("b", TensorShape(("k", "m")))))
    got = infer_inputs(TwoInputs, (hint,), _never_user)
    assert got.inputs is not None and got.inputs.kind == "annotation"
    (_, a), (_, b) = got.inputs.specs
    assert a.shape[0] == 2 and a.shape[1] == b.shape[0]  # the batch, and one value per name


def test_nothing_runs_and_every_try_is_said() -> None:
    hint = InputCandidate("call-site", "t.py", 1, "m(x, y)", args=(TensorShape((2, 3)), TensorShape((4, 5))))
    got = infer_inputs(TwoInputs, (hint,), _never_user)
    assert got.inputs is None and got.params == ("a", "b")
    assert len(got.tried) == 1 and "t.py:1" in got.tried[0]


def test_library_conventions() -> None:
    got = infer_inputs(Dummy, (), _never_user)
    assert got.inputs is not None and got.inputs.text == "its dummy_inputs"
    assert got.inputs.specs == (("input_ids", TensorShape((3, 7), "int64")),)
    got = infer_inputs(Timm, (), _never_user)
    assert got.inputs is not None and got.inputs.text == 'its pretrained_cfg["input_size"]'
    assert got.inputs.specs == (("x", TensorShape((2, 3, 20, 20))),)


class Gelu(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(x))


def test_a_module_without_layers_gets_a_small_tensor() -> None:
    got = infer_inputs(Gelu, (), _never_user)
    assert got.inputs is not None and got.inputs.kind == "structure"
    assert got.inputs.specs == (("x", TensorShape((2, 4, 8, 8))),)
    assert "no layer" in got.inputs.text


class Patchify(nn.Module):
    def __init__(self, image_size=16, patch_size=4, channels=2, dim=8):
        super().__init__()
        self.patch_size = patch_size
        self.to_tokens = nn.Linear(patch_size * patch_size * channels, dim)

    def forward(self, img):
        b, c, h, w = img.shape
        p = self.patch_size
        x = img.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p), -1)
        return self.to_tokens(x)


def test_an_image_model_whose_first_layer_follows_a_patchify() -> None:
    got = infer_inputs(Patchify, (), _never_user)
    assert got.inputs is not None and got.inputs.specs == (("img", TensorShape((2, 2, 16, 16))),)
    assert got.inputs.text == "its image_size=16 and 2 channels"
