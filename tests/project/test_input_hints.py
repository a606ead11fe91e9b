"""Example input candidates found by discovery (AST only): literal forward calls in tests,
``__main__`` blocks, doctests, README fences and notebooks, and shapes that a forward's annotations
and docstring give; each resolved to the class it calls, with where it was found."""

from __future__ import annotations

import json
from pathlib import Path

from fxscope.project.config import load_config
from fxscope.project.discovery import discover
from fxscope.project.forward_calls import forward_sites, markdown_forward_sites

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    """A net.

    >>> net = Net()
    >>> net(torch.zeros(1, 4)).shape
    torch.Size([1, 2])
    """

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Tagger(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)

    def forward(self, ids: "Int[Tensor, 'b t']", mask=None):
        return self.emb(ids)


class Documented(nn.Module):
    def forward(self, img, scale=1.0):
        """Scale an image.

        Args:
            img (Tensor): images of shape (B, 3, H, W)
        """
        return img * scale


if __name__ == "__main__":
    model = Net().eval()
    print(model(torch.randn(8, 4)))
'''

TEST = '''
import unittest

import torch
from pkg.model import Net, Tagger

B, L = 2, 16


class TaggerTest(unittest.TestCase):
    def setUp(self):
        self.tagger = Tagger(vocab=100, width=8).to("cpu")

    def test_forward(self):
        ids = torch.randint(0, 100, (B, L))
        mask = torch.ones(B, L, dtype=torch.bool)
        self.tagger(ids, mask=mask)


def test_not_literal(data):
    net = Net()
    net(data)                      # not a literal tensor: no candidate
    net(torch.randn(3, 4), 7)      # a positional non-tensor: no candidate


def test_rebound():
    net = Net()
    net = something_else()
    net(torch.randn(5, 4))         # `net` is no longer a Net
'''

README = '''# pkg

```python
from pkg.model import Net
net = Net()
y = net.forward(torch.rand(size=(3, 4)).cuda())
```
'''


def _workspace(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "tests").mkdir()
    (root / "tests" / "test_model.py").write_text(TEST)
    (root / "README.md").write_text(README)
    return root


def _hints(root: Path) -> dict[str, list[tuple]]:
    out = {}
    for t in discover(load_config(root)).targets:
        out[t.id] = [(h.kind, h.file, h.line, [a.shape for a in h.args], {k: (v.shape, v.dtype) for k, v in h.kwargs})
                     for h in t.input_hints]
    return out


def test_forward_calls_resolve_to_their_classes_with_provenance(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    hints = _hints(root)
    main_line = MODEL.splitlines().index("    print(model(torch.randn(8, 4)))") + 1
    doc_line = MODEL.splitlines().index("    >>> net(torch.zeros(1, 4)).shape") + 1
    assert hints["pkg/model.py::Net"] == [
        ("call-site", "pkg/model.py", main_line, [(8, 4)], {}),
        ("docstring", "pkg/model.py", doc_line, [(1, 4)], {}),
        ("readme", "README.md", 6, [(3, 4)], {}),
    ]
    call_line = TEST.splitlines().index("        self.tagger(ids, mask=mask)") + 1
    forward_line = MODEL.splitlines().index("    def forward(self, ids: \"Int[Tensor, 'b t']\", mask=None):") + 1
    assert hints["pkg/model.py::Tagger"][0] == (
        "call-site", "tests/test_model.py", call_line, [(2, 16)], {"mask": ((2, 16), "bool")})
    assert hints["pkg/model.py::Tagger"][0][3] == [(2, 16)]
    # a string annotation is not read (only jaxtyping/torchtyping subscripts are)
    assert all(h[0] != "annotation" or h[2] == forward_line for h in hints["pkg/model.py::Tagger"])
    documented = hints["pkg/model.py::Documented"]
    assert documented == [("annotation", "pkg/model.py", MODEL.splitlines().index(
        "    def forward(self, img, scale=1.0):") + 1, [], {"img": (("B", 3, "H", "W"), "float32")})]


def test_the_candidates_survive_the_targets_json_and_change_the_build_key(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    before = {t.id: t for t in discover(load_config(root)).targets}
    net = before["pkg/model.py::Net"]
    again = type(net).from_json(json.loads(json.dumps(net.to_json())))
    assert again.input_hints == net.input_hints and again.build_key() == net.build_key()
    (root / "README.md").write_text(README.replace("size=(3, 4)", "size=(6, 4)"))
    after = {t.id: t for t in discover(load_config(root)).targets}
    assert after["pkg/model.py::Net"].build_key() != net.build_key()
    assert after["pkg/model.py::Documented"].build_key() == before["pkg/model.py::Documented"].build_key()


def test_tensor_expressions() -> None:
    sites = forward_sites('''
import torch as th
from m import Net
C = 3
net = Net()
net(th.randn((2, C, 8, 8)))
net(th.zeros([2, C * 2], dtype=th.float16))
net(th.randint(10, (4, 5)).long(), th.arange(6))
net(th.tensor([[1, 2, 3]]), th.full((2, 2), 0.5).double())
shape = (1, 7)
net(x=th.ones(shape).to("cpu"))
Net(depth=2)(th.empty(2, 4))
net(th.randn(2, 3) + 1)
''')
    got = [([(a.shape, a.dtype) for a in s.args], [(k, v.shape, v.dtype) for k, v in s.kwargs]) for s in sites]
    assert got == [
        ([((2, 3, 8, 8), "float32")], []),
        ([((2, 6), "float16")], []),
        ([((4, 5), "int64"), ((6,), "int64")], []),
        ([((1, 3), "int64"), ((2, 2), "float64")], []),
        ([], [("x", (1, 7), "float32")]),
        ([((2, 4), "float32")], []),
    ]
    assert all(s.cls.path == ("Net",) and s.cls.module == "m" for s in sites)


def test_markdown_without_imports() -> None:
    sites = markdown_forward_sites("text\n\n```py\nmodel = ViT(dim=8)\nout = model(torch.randn(1, 3, 32, 32))\n```\n")
    assert [(s.cls.path, s.line, s.args[0].shape, s.kind) for s in sites] == [(("ViT",), 5, (1, 3, 32, 32), "readme")]
