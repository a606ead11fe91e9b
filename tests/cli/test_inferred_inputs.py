"""Inferred example inputs through the real CLI: with the compile and export analyses on at the
workspace level (or ``--analyses``), every class fxscope builds gets inputs from the repository
(a test's forward call, a README block), a library convention or its first layer; the report says
which and where they came from; a class without inputs gets one FXS409 that says what was tried;
an input the eager forward rejects is never used, and fx keeps its meaning (no inputs)."""

from __future__ import annotations

import json
import tomllib
import textwrap
from pathlib import Path

import jsonschema
import pytest

from engine_support import SCHEMA, locate, run_check, run_fxscope, write_tree
from pt2_support import ENCODER_MODULE

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODELS = ENCODER_MODULE + textwrap.dedent("""

    class GPT(nn.Module):
        def __init__(self, vocab=50, block_size=12, dim=8):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.zeros(block_size, dim))
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx):
            return self.head(self.tok(idx) + self.pos)  # needs exactly block_size tokens


    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, a, b):
            return self.fc(a) @ b.T  # ONLY


    class Lit(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 2)
            self.example_input_array = torch.zeros(3, 6)

        def forward(self, x):
            return self.fc(x)
    """)

TESTS = """
    import torch
    from models import Encoder, Pair


    def test_encoder():
        enc = Encoder(3, 4)
        x = torch.randn(2, 3, 8, 8)
        assert enc(x).shape == (2, 4, 8, 8)  # CALL


    def test_pair_wrong_shapes():
        pair = Pair()
        pair(torch.randn(2, 5), torch.randn(2, 5))  # WRONG
    """

README = """
    # models

    ```python
    from models import Encoder
    enc = Encoder(3, 4)
    enc(torch.randn(1, 3, 1000, 1000, 1000))
    ```
    """


def _workspace(root: Path, analyses: str | None) -> Path:
    line = f"analyses = {analyses}\n" if analyses else ""
    write_tree(root, {"pyproject.toml": f"[tool.fxscope]\ntimeout = 240\n{line}", "models.py": MODELS,
                      "tests/test_models.py": TESTS, "README.md": README})
    return root


def test_classes_get_inferred_inputs_and_their_provenance(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", '["fx", "compile", "export"]')
    run = run_check(root, timeout=900)
    jsonschema.validate(run.report, json.loads(SCHEMA.read_text()))
    targets = run.targets
    call, _ = locate(root, "tests/test_models.py", "# CALL")
    encoder = targets["models.py::Encoder"]
    # the test's call, not the README's (too large to try): inputs as in the test
    assert encoder["inputs"] == {"specs": {"x": {"shape": [2, 3, 8, 8], "dtype": "float32"}}, "kind": "call-site",
                                 "file": "tests/test_models.py", "line": call,
                                 "text": "enc(x)"}
    assert encoder["build"]["text"] == "Encoder(3, 4)"
    branch, _ = locate(root, "models.py", "# BRANCH")
    # fx keeps its meaning: the data-dependent branch is its error; compile breaks there, export fails
    assert {(f["code"], f["line"]) for f in run.findings("models.py::Encoder") if f["severity"] != "info"} == {
        ("FXS101", branch), ("FXS601", branch), ("FXS701", branch)}
    summaries = encoder["analyses"]
    assert encoder["status"] == "failed" and summaries["compile"]["counts"]["breaks"] == 1
    assert summaries["export"]["ok"] is False
    # the model's structure: token ids exactly as long as block_size (the search tries it first)
    gpt = targets["models.py::GPT"]
    assert gpt["inputs"]["specs"] == {"idx": {"shape": [2, 12], "dtype": "int64"}}
    assert gpt["inputs"]["kind"] == "structure" and "Embedding" in gpt["inputs"]["text"]
    compiled = gpt["analyses"]["compile"]["counts"]
    assert compiled == {**compiled, "graphs": 1, "breaks": 0} and gpt["analyses"]["export"]["ok"] is True
    # a library convention: Lightning's example_input_array
    lit = targets["models.py::Lit"]
    assert lit["inputs"] == {"specs": {"x": {"shape": [3, 6], "dtype": "float32"}}, "kind": "convention",
                             "text": "its example_input_array"}
    # no input runs: the test's shapes fail eagerly, and two inputs leave the first layer silent
    pair = targets["models.py::Pair"]
    assert "inputs" not in pair and "analyses" not in pair
    assert pair["status"] == "traced"
    [info] = run.findings("models.py::Pair", "FXS409")
    assert info["severity"] == "info" and info["line"] == locate(root, "models.py", "class Pair")[0]
    wrong, _ = locate(root, "tests/test_models.py", "# WRONG")
    assert f"as in tests/test_models.py:{wrong}" in info["message"] and "RuntimeError" in info["message"]
    assert "forward(a, b)" in info["message"]
    assert not [f for f in run.findings("models.py::Pair") if f["code"][3] in "67"]  # nothing from a made-up input
    # cached: the same answers without a worker
    again = run_check(root, timeout=300)
    assert again.targets["models.py::Encoder"]["cached"] is True
    assert again.targets["models.py::Encoder"]["inputs"] == encoder["inputs"]
    assert again.findings("models.py::Pair", "FXS409") == run.findings("models.py::Pair", "FXS409")


def test_analyses_flag_and_init_writes_the_inputs(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", None)
    fx_only = run_check(root, timeout=600)
    assert all("inputs" not in t and "analyses" not in t for t in fx_only.targets.values())
    assert not fx_only.findings(code="FXS409")
    run = run_check(root, "--analyses", "fx,compile,export", timeout=900)
    assert run.targets["models.py::Encoder"]["inputs"]["kind"] == "call-site"
    assert run.targets["models.py::Encoder"]["analyses"]["export"]["ok"] is False
    bad = run_fxscope(root, "check", "--analyses", "fx,jit")
    assert bad.returncode == 2 and "fx, compile, export" in bad.stderr
    (root / "pyproject.toml").write_text('[tool.fxscope]\ntimeout = 240\nanalyses = ["fx", "compile", "export"]\n')
    init = run_fxscope(root, "init", timeout=900)
    assert init.returncode == 0, init.stderr
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["fxscope"]["targets"]
    assert config["encoder"]["inputs"] == {"x": {"shape": [2, 3, 8, 8], "dtype": "float32"}}
    call, _ = locate(root, "tests/test_models.py", "# CALL")
    assert f"# example inputs as in tests/test_models.py:{call}" in (root / "pyproject.toml").read_text()
