"""A workspace of scripts whose work must never start, and of library modules that must keep their
definitions, through the real CLI (``fxscope check`` in a subprocess).

Every piece of work calls ``harm.work``: it writes a marker file, connects to a real listener this
test holds open, and kills the process that ran it (``os._exit``), so work that started shows as a
marker, a connection, or a dead worker (FXS404) for that file's classes, whichever of them an OS
sandbox lets through. Scripts hide their work in every shape a top level allows (an assignment, an
``if``, a ``with``, a ``try``, a conditional expression, a comprehension, a thread target, a
method of a class of the file, a lambda, a class body, an imported function); the safe evaluator
is handed user code in every way a statement can (a builtin's ``key``, a ``defaultdict`` factory, a
function named ``wrap``, a rebound ``__name__``, properties and ``__len__``, argparse subclasses,
formatters and converters); two statements would take hours of integer and list work. The library
modules call their own setup function and compute constants at import: their classes trace.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine_support import CheckRun, run_check, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

NET = """
class Net(nn.Module):
    def forward(self, x):
        return x.relu()
"""

HEADER = """
import argparse
import contextlib
import threading
from collections import defaultdict
from dataclasses import dataclass

import torch
from torch import nn

from harm import work


def main():
    work("{name}")
    return 0
"""

#: file -> the statement(s) that would start the work; each file also defines `Net`, which traces.
SCRIPTS = {
    "s_assign.py": "status = main()",
    "s_if.py": "if torch.__version__:\n    main()\n    SCALE = 2",
    "s_with.py": "with contextlib.nullcontext():\n    main()",
    "s_try.py": "try:\n    main()\nexcept ImportError:\n    pass",
    "s_ifexp.py": "result = main() if torch.__version__ else None",
    "s_comp.py": "results = [main() for _ in range(1)]",
    "s_thread.py": "thread = threading.Thread(target=main)\nthread.start()\nthread.join()",
    "s_method.py": "class Trainer:\n    def fit(self):\n        work('fit')\n\n\nTrainer().fit()",
    "s_map.py": "done = list(map(lambda _: main(), [1]))",
    "s_lambda.py": "(lambda: main())()",
    "s_classbody.py": "class Cached(nn.Module):\n    result = main()\n\n    def forward(self, x):\n        return x",
    "s_imported.py": "work('imported')",
    "s_wrap.py": "def wrap(name):\n    work('wrap')\n\n\nwrap('helper')",
}

#: file -> (statements, the class that reads what they would set, what the FXS407 says).
EVALUATED = {
    "e_key.py": ("def score(x):\n    work('key')\n    return x\n\n\nORDER = sorted([2, 1], key=score)",
                 "ORDER", "hands a callable to a builtin"),
    "e_system.py": ("import os\nBEST = max(['touch {markers}/system'], key=os.system)", "BEST",
                    "hands a callable to a builtin"),
    "e_defaultdict.py": ("def make():\n    work('missing')\n\n\nTABLE = defaultdict(make)\nWIDTH = TABLE['w']",
                         "WIDTH", "`TABLE`"),
    "e_name.py": ("__name__ = 'math'\n\n\ndef sqrt(x):\n    work('name')\n    return 4.0\n\n\nSCALE = sqrt(16.0)",
                  "SCALE", "a call of `sqrt`"),
    "e_property.py": ("@dataclass\nclass Cfg:\n    dim: int = 4\n\n    @property\n    def width(self):\n"
                      "        work('property')\n        return 8\n\n\ncfg = Cfg()\nWIDTH = cfg.width",
                      "WIDTH", "property"),
    "e_len.py": ("class LenConfig:\n    def __len__(self):\n        work('len')\n        return 4\n\n\n"
                 "N = len(LenConfig())", "N", "`LenConfig`'s own code"),
    "e_subclass.py": ("class TrainOptions(argparse.ArgumentParser):\n    def parse_args(self, *a, **k):\n"
                      "        work('parse_args')\n\n\nopt = TrainOptions().parse_args()", "opt", "opt"),
    "e_formatter.py": ("class Fmt(argparse.HelpFormatter):\n    def __init__(self, *a, **k):\n        work('formatter')\n\n\n"
                       "parser = argparse.ArgumentParser(formatter_class=Fmt)\n"
                       "parser.add_argument('--x', type=int, default=1)",
                       "parser", "`formatter_class`"),
    "e_set_defaults.py": ("def size(s):\n    work('type')\n    return 1\n\n\nparser = argparse.ArgumentParser()\n"
                          "parser.add_argument('--size', type=size)\nparser.set_defaults(size='3')\n"
                          "opt = parser.parse_args()", "opt", "converts with `size`"),
    "e_argument_default.py": ("def size(s):\n    work('type')\n    return 1\n\n\n"
                              "parser = argparse.ArgumentParser(argument_default='5')\n"
                              "parser.add_argument('--n', type=size)\nopt = parser.parse_args()",
                              "opt", "converts with `size`"),
    "e_power.py": ("BIG = 10 ** 4000\nBIG = BIG ** 4000\nBIG = BIG ** 4000", "BIG", "too large"),
    "e_nested.py": ("row = [0] * 1000\ngrid = [row] * 1000\ncube = [grid] * 1000\nPEAK = max(cube)", "PEAK",
                    "too large"),
}

HARM = """
import os
import pathlib
import socket

MARKERS = {markers!r}
PORT = {port}


def work(tag):
    pathlib.Path(MARKERS, tag).write_text("ran")
    for _ in range(1):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        except OSError:
            pass
    os._exit(86)
"""

GPT_CONFIG = """
import logging

import torch

LOGGER = logging.getLogger("gpt")


def setup_default_logging(level=logging.WARNING):
    LOGGER.setLevel(level)


def _detect_compute_dtype():
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def _hidden_size():
    return 8


setup_default_logging()
COMPUTE_DTYPE = _detect_compute_dtype()
HIDDEN = _hidden_size()
"""

GPT_MODEL = """
import torch
from torch import nn

from gpt.config import COMPUTE_DTYPE, HIDDEN


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, dtype=COMPUTE_DTYPE)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(HIDDEN, HIDDEN, dtype=COMPUTE_DTYPE)

    def forward(self, x):
        return self.fc(x).relu()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.mlp = MLP()

    def forward(self, x):
        return x + self.mlp(x + self.attn(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)
"""


USES_SCRIPT = """
from torch import nn

from s_assign import status


class UsesStatus(nn.Module):
    def forward(self, x):
        return x + status
"""

USES_SCRIPT_MODULE = """
from torch import nn

import s_if


class UsesModule(nn.Module):
    def forward(self, x):
        return x * s_if.SCALE
"""


def _script(name: str, body: str) -> str:
    return HEADER.format(name=name) + NET + "\n\n" + body + "\n"


def _evaluated(name: str, body: str, reads: str, markers: Path) -> str:
    user = (f"\n\nclass Reads(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.value = {reads}\n\n    def forward(self, x):\n        return x + 1\n")
    return HEADER.format(name=name) + "\n\n" + body.format(markers=markers) + user + "\n\nmain()\n"


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, listener: socket.socket) -> tuple[Path, Path, CheckRun]:
    root = tmp_path_factory.mktemp("containment")
    markers = tmp_path_factory.mktemp("markers")
    files = {"pyproject.toml": "[tool.fxscope]\ntimeout = 120\n",
             "harm.py": HARM.format(markers=str(markers), port=listener.getsockname()[1]),
             "gpt/__init__.py": "", "gpt/config.py": GPT_CONFIG, "gpt/model.py": GPT_MODEL,
             "uses_script.py": USES_SCRIPT, "uses_script_module.py": USES_SCRIPT_MODULE}
    files.update({name: _script(name, body) for name, body in SCRIPTS.items()})
    files.update({name: _evaluated(name, body, reads, markers) for name, (body, reads, _) in EVALUATED.items()})
    write_tree(root, files)
    return root, markers, run_check(root, "--show-info", timeout=900)


def _faults(run: CheckRun, file: str) -> list[dict[str, Any]]:
    return [f for f in run.report["findings"] if f["code"] in ("FXS402", "FXS403", "FXS404") and
            (f.get("file") == file or str(f.get("target", "")).startswith(f"{file}::"))]


def test_no_work_ran(corpus: tuple[Path, Path, CheckRun], listener: socket.socket) -> None:
    _, markers, run = corpus
    assert sorted(p.name for p in markers.iterdir()) == []
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected
    assert not [f for f in run.report["findings"] if f["code"] in ("FXS402", "FXS403", "FXS404")], run.stdout[-3000:]


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_scripts_classes_trace_without_its_work(corpus: tuple[Path, Path, CheckRun], name: str) -> None:
    _, _, run = corpus
    assert not _faults(run, name)
    assert run.targets[f"{name}::Net"]["status"] == "traced"


def test_a_library_module_keeps_its_definitions(corpus: tuple[Path, Path, CheckRun]) -> None:
    """Its own setup call and computed constants run as Python runs them: every class importing
    them traces (no FXS402 'cannot import name', no FXS407)."""
    _, _, run = corpus
    for cls in ("Attention", "MLP", "Block", "GPT"):
        assert run.targets[f"gpt/model.py::{cls}"]["status"] == "traced", cls
    assert not [f for f in run.report["findings"] if f.get("file", "").startswith("gpt/")]


@pytest.mark.parametrize("name", sorted(EVALUATED))
def test_what_the_evaluator_refuses_is_fxs407(corpus: tuple[Path, Path, CheckRun], name: str) -> None:
    """The class that reads the refused value is not built (FXS407, with the reason); nothing ran,
    and the statements that would take hours were refused, not run until the timeout."""
    _, _, run = corpus
    _, reads, why = EVALUATED[name]
    assert not _faults(run, name)
    assert run.targets[f"{name}::Reads"]["status"] == "skipped"
    messages = [f["message"] for f in run.findings(code="FXS407") if f["file"] == name]
    assert any(f"`{reads}`" in m or f"`{reads}," in m for m in messages), messages
    assert any(why in m for m in messages), messages


def test_importing_what_a_script_did_not_set_is_fxs407(corpus: tuple[Path, Path, CheckRun]) -> None:
    """`from s_assign import status`: plain Python, running the script, would have set `status`;
    fxscope did not, so the class is FXS407 at that statement, never an ImportError of fxscope's."""
    _, _, run = corpus
    assert run.targets["uses_script.py::UsesStatus"]["status"] == "skipped"
    (info,) = [f for f in run.findings(code="FXS407") if "UsesStatus" in f["message"]]
    assert info["file"] == "s_assign.py" and "`status`" in info["message"]


def test_reading_what_a_script_did_not_set_is_fxs407(corpus: tuple[Path, Path, CheckRun]) -> None:
    """`s_if.SCALE` read in forward: set inside the script's skipped `if` block, so FXS407 there
    (not the FXS107 AttributeError plain Python, running the script, would not have)."""
    _, _, run = corpus
    assert run.targets["uses_script_module.py::UsesModule"]["status"] == "skipped"
    (info,) = [f for f in run.findings(code="FXS407") if "UsesModule" in f["message"]]
    assert info["file"] == "s_if.py" and "`SCALE`" in info["message"]
