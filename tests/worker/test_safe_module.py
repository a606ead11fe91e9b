"""The safe executor: what a notebook (or script) import runs and what it skips, in this process."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import pytest
import torch
from fxscope.project.notebooks import make_notebook
from fxscope.job.overlay import served_digest
from fxscope.job.safe_module import Evaluator, NotAllowed, load_notebook, notebook_of, run_safely, skipped_of

pytestmark = pytest.mark.requires_torch


def run(source: str, **names: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    namespace: dict[str, Any] = {"__name__": "mod", **names}
    skipped = run_safely(ast.parse(source), namespace, "<test>")
    return namespace, {name: s.reason for name, s in skipped.items()}


def value(expr: str, **names: Any) -> Any:
    return Evaluator(names).value(ast.parse(expr, mode="eval").body)


def test_configuration_values_are_evaluated() -> None:
    ns, skipped = run(
        "import math\nfrom dataclasses import dataclass\nfrom types import SimpleNamespace\n"
        "from functools import partial\nimport torch\nfrom torch import nn\n"
        "@dataclass\nclass Cfg:\n    dim: int = 4\n    act: object = None\n"
        "cfg = Cfg(dim=2 ** 5, act=nn.GELU)\ncfg.dim += 0\ncfg.dim = cfg.dim // 2\n"
        "ns = SimpleNamespace(heads=4, scale=math.sqrt(16))\nnorm = partial(nn.LayerNorm, eps=1e-6)\n"
        "table = {'a': [1, 2]}\ntable['b'] = (3,)\nwho = f'{cfg.dim}-x'\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "a, b = 1, -2\nb += a\n")
    assert not skipped
    assert (ns["cfg"].dim, ns["cfg"].act, ns["ns"].scale, ns["table"], ns["who"], ns["b"]) == (
        16, torch.nn.GELU, 4.0, {"a": [1, 2], "b": (3,)}, "16-x", -1)
    assert isinstance(ns["norm"], functools.partial) and ns["device"] == torch.device("cpu")


@pytest.mark.parametrize(("expr", "why"), [
    ("nn.Linear(2, 2)", "builds a model"),
    ("torch.zeros(3)", "a call of `torch.zeros`"),
    ("open('x')", "a call of `open`"),
    ("Loader('data', download=True)", "not a constructor fxscope calls"),
    ("'x' * 10 ** 9", "too large"),
    ("list(range(10 ** 9))", "too large"),
    ("bytes(10 ** 9)", "too large"),
    ("torch.Tensor(10 ** 5, 10 ** 5)", "not a constructor fxscope calls"),
    ("[i for i in range(3)]", "code fxscope does not run"),
    ("lambda: 1", "code fxscope does not run"),
    ("cfg.__class__", "private attribute"),
])
def test_what_an_assignment_may_not_compute(expr: str, why: str) -> None:
    class Loader:
        def __init__(self, *a: Any, **k: Any) -> None:
            raise AssertionError("never called")

    with pytest.raises(NotAllowed, match=why):
        value(expr, nn=torch.nn, torch=torch, Loader=Loader, cfg=types.SimpleNamespace())


def test_skipped_names_are_unset_from_there_on() -> None:
    ns, skipped = run(
        "import torch\nx = 1\nx = torch.randn(2)\ny = x\ntorch.manual_seed(0)\n"
        "def uses(d=x):\n    return d\n"
        "for epoch in range(2):\n    loss = epoch\n"
        "n = 3\nn.bit_length()\n")
    assert "x" not in ns and "y" not in ns and "uses" not in ns and "n" not in ns
    assert ns["torch"] is torch  # a module is not unset by a call on it
    assert skipped["x"] == "a call of `torch.randn`"
    assert skipped["y"] == "it uses `x`, which fxscope did not set (a call of `torch.randn`)"
    assert skipped["uses"] == "it uses `x`, which fxscope did not set either (a call of `torch.randn`)"
    assert skipped["epoch"] == skipped["loss"] == "a loop"
    assert skipped["n"] == "a call of `n.bit_length`"


def test_imports_that_fail_fail_the_module() -> None:
    with pytest.raises(ModuleNotFoundError):
        run("import fxscope_no_such_module\n")
    ns, skipped = run("try:\n    import fxscope_no_such_module as m\nexcept ImportError:\n    m = None\n")
    assert ns["m"] is None and not skipped


def test_fx_wrap_and_methods_from_later_cells_run() -> None:
    ns, _ = run("import torch\nimport torch.fx\ndef helper(x):\n    return x + 1\ntorch.fx.wrap('helper')\n"
                "class M(torch.nn.Module):\n    pass\n"
                "def forward(self, x):\n    return helper(x)\nM.forward = forward\n")
    graph = torch.fx.symbolic_trace(ns["M"]()).graph
    calls = [n.target for n in graph.nodes if n.op == "call_function"]
    assert calls == [ns["helper"]]  # one node: fx.wrap ran, and forward came from a later statement


def test_a_notebook_loads_without_its_work(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "sub" / "nb.ipynb"
    path.parent.mkdir()
    (path.parent / "helper_mod_for_nb.py").write_text("VALUE = 7\n")
    path.write_text(make_notebook([
        "# Title",
        ("code", "import helper_mod_for_nb\nimport torch\nfrom torch import nn\n%matplotlib inline"),
        ("code", f"class Net(nn.Module):\n    def forward(self, x):\n        return x * helper_mod_for_nb.VALUE\n"
                 f"model = Net()\nfor i in range(2):\n    open({str(marker)!r}, 'w').write('ran')"),
    ]))
    name = f"nb-{uuid.uuid4().hex}.ipynb"
    try:
        module = load_notebook(str(path), name)
        assert not marker.exists()
        assert set(skipped_of(module)) == {"model", "i"}
        nb = notebook_of(module)
        assert nb is not None and nb.locate(inspect.getsourcelines(module.Net)[1]) == (3, 1)
        assert inspect.getsourcefile(module.Net) == str(path)
        # the hash of what ran is the file's bytes: the cache's hash of the file
        assert served_digest(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
        assert module.Net()(torch.ones(1)).item() == 7  # the notebook's directory is importable, as in Jupyter
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop("helper_mod_for_nb", None)
        if str(path.parent) in sys.path:
            sys.path.remove(str(path.parent))


PARSER = ("import argparse\n"
          "parser = argparse.ArgumentParser(description='train')\n"
          "parser.add_argument('--latent_dim', type=int, default=100)\n"
          "parser.add_argument('--img_size', type=int, default='28')\n"
          "group = parser.add_argument_group('data')\n"
          "group.add_argument('--data-root', default='data/')\n"
          "parser.add_argument('--cuda', action='store_true')\n")


def test_a_command_line_parser_gives_its_defaults() -> None:
    """A training script's `opt = parser.parse_args()` is what it sees run with no arguments,
    whatever the command line of the process importing it."""
    ns, skipped = run(PARSER + "opt = parser.parse_args()\nopt.n_cpu = 2\n"
                      "img_shape = (1, opt.img_size, opt.img_size)\n")
    assert not skipped
    opt = ns["opt"]
    assert (opt.latent_dim, opt.img_size, opt.data_root, opt.cuda, opt.n_cpu) == (100, 28, "data/", False, 2)
    assert ns["img_shape"] == (1, 28, 28)


@pytest.mark.parametrize(("extra", "why"), [
    ("parser.add_argument('--data', required=True)\n", "needs command-line arguments"),
    ("parser.add_argument('--size', type=lambda s: open(s), default='x')\n", "code fxscope does not run"),
    ("def size(s):\n    return open(s)\nparser.add_argument('--size', type=size, default='x')\n",
     "converts with `size`"),
    ("class Act(argparse.Action):\n    pass\nparser.add_argument('--x', action=Act)\n", "`action` class"),
])
def test_a_parser_that_would_run_code_or_exit_is_skipped(extra: str, why: str) -> None:
    """What argparse would run of the script's own, or a parser that would exit, leaves `opt`
    unset (the classes that read it are FXS407), with the reason."""
    ns, skipped = run(PARSER + extra + "opt = parser.parse_args()\n")
    assert "opt" not in ns
    assert why in skipped.get("parser", "") + skipped["opt"]


def test_parsing_an_explicit_command_line_is_not_run() -> None:
    _, skipped = run(PARSER + "opt = parser.parse_args(['--cuda'])\n")
    assert "explicit command line" in skipped["opt"]


# ---------------------------------------------------------------------------------------------
# the evaluator runs only what it can prove harmless: the script's own code never runs

CALLED: list[str] = []


def _calls(tag: str) -> None:
    CALLED.append(tag)


HARMLESS_HEADER = ("import argparse\nimport math\nimport os\nfrom collections import defaultdict\n"
                   "from dataclasses import dataclass, field\n")


@pytest.mark.parametrize(("source", "name", "why"), [
    ("def score(x):\n    _calls('key')\n    return x\nORDER = sorted([2, 1], key=score)", "ORDER",
     "hands a callable to a builtin"),
    ("def score(x):\n    _calls('max')\n    return x\nTOP = max([2, 1], key=score)", "TOP", "hands a callable"),
    ("RAN = max(['true'], key=os.system)", "RAN", "hands a callable"),
    ("def make():\n    _calls('factory')\n    return 1\nTABLE = defaultdict(make)", "TABLE", "hands a callable"),
    ("def wrap(name):\n    _calls('wrap')\nwrap('helper')\nLEVEL = 1\nLEVEL = LEVEL + wrap('x')", "LEVEL",
     "a call of `wrap`"),
    ("__name__ = 'math'\ndef sqrt(x):\n    _calls('name')\n    return 2.0\nROOT = sqrt(4.0)", "ROOT",
     "a call of `sqrt`"),
    ("@dataclass\nclass Cfg:\n    dim: int = 4\n    @property\n    def width(self):\n        _calls('property')\n"
     "        return 8\ncfg = Cfg()\nWIDTH = cfg.width", "WIDTH", "property"),
    ("class LenConfig:\n    def __len__(self):\n        _calls('len')\n        return 4\nN = len(LenConfig())", "N",
     "`LenConfig`'s own code"),
    ("class LazyConfig:\n    def __getattr__(self, name):\n        _calls('getattr')\n        return 4\n"
     "DIM = LazyConfig().dim", "DIM", "computes its attributes"),
    ("class EqConfig:\n    def __eq__(self, other):\n        _calls('eq')\n        return True\n"
     "SAME = EqConfig() == 3", "SAME", "own code"),
    ("class TruthConfig:\n    def __bool__(self):\n        _calls('bool')\n        return True\n"
     "PICK = 1 if TruthConfig() else 2", "PICK", "own code"),
    ("@dataclass\nclass PostConfig:\n    dim: int = 4\n    def __post_init__(self):\n        _calls('post')\n"
     "cfg = PostConfig()", "cfg", "runs its own `__post_init__`"),
    ("class InitConfig:\n    def __init__(self):\n        _calls('init')\ncfg = InitConfig()", "cfg",
     "runs its own `__init__`"),
    ("def default_layers():\n    _calls('default_factory')\n    return [1]\n@dataclass\nclass FactoryConfig:\n"
     "    layers: list = field(default_factory=default_layers)\ncfg = FactoryConfig()", "cfg", "default_factory"),
    ("class Options(argparse.ArgumentParser):\n    def add_argument(self, *a, **k):\n        _calls('subclass')\n"
     "opts = Options()", "opts", "constructor on a class of the workspace's"),
    ("@dataclass\nclass Cfg:\n    dim: int = 4\n    def scaled(self):\n        _calls('method')\n        return 8\n"
     "cfg = Cfg()\nBIG = cfg.scaled()", "BIG", "a call of `cfg.scaled`"),
    ("@dataclass\nclass Cfg:\n    dim: int = 4\n    @classmethod\n    def small(cls):\n        _calls('classmethod')\n"
     "        return cls()\ncfg = Cfg.small()", "cfg", "a call of `Cfg.small`"),
])
def test_the_scripts_own_code_never_runs(source: str, name: str, why: str) -> None:
    CALLED.clear()
    ns, skipped = run(HARMLESS_HEADER + source + "\n", _calls=_calls)
    assert CALLED == []
    assert name not in ns and why in skipped[name], skipped


PARSER_HEAD = "import argparse\ndef size(s):\n    _calls('type')\n    return 1\n"


@pytest.mark.parametrize(("source", "name", "why"), [
    ("class Fmt(argparse.HelpFormatter):\n    def __init__(self, *a, **k):\n        _calls('formatter')\n"
     "parser = argparse.ArgumentParser(formatter_class=Fmt)", "parser", "`formatter_class`"),
    ("parser = argparse.ArgumentParser()\nparser.add_argument('--size', type=size)\n"
     "parser.set_defaults(size='3')\nopt = parser.parse_args()", "opt", "converts with `size`"),
    ("parser = argparse.ArgumentParser()\nparser.set_defaults(size='3')\nparser.add_argument('--size', type=size)\n"
     "opt = parser.parse_args()", "opt", "converts with `size`"),
    ("parser = argparse.ArgumentParser(argument_default='5')\nparser.add_argument('--n', type=size)\n"
     "opt = parser.parse_args()", "opt", "converts with `size`"),
    ("base = argparse.ArgumentParser(add_help=False)\nbase.add_argument('--n', type=size, default='4')\n"
     "parser = argparse.ArgumentParser(parents=[base])\nopt = parser.parse_args()", "opt", "converts with `size`"),
    ("class Act(argparse._StoreAction):\n    def __init__(self, *a, **k):\n        _calls('action')\n"
     "        super().__init__(*a, **k)\nparser = argparse.ArgumentParser()\nparser.add_argument('--x', action=Act)",
     "parser", "`action` class"),
    ("class Choices(list):\n    def __iter__(self):\n        _calls('choices')\n        return iter([1])\n"
     "parser = argparse.ArgumentParser()\nparser.add_argument('--x', choices=Choices([1]))", "parser",
     "not a constructor fxscope calls"),
])
def test_argparse_runs_only_argparse(source: str, name: str, why: str) -> None:
    CALLED.clear()
    ns, skipped = run(PARSER_HEAD + source + "\n", _calls=_calls)
    assert CALLED == []
    assert name not in ns and why in skipped[name], skipped


@pytest.mark.parametrize(("source", "name"), [
    ("x = 10 ** 4000\nx = x ** 4000", "x"),
    ("x = 3\nx = x ** 40000\n", "x"),
    ("x = 1 << 10000\nx = x << 100000\n", "x"),
    ("x = 7 ** 9000\nx = x * x\nx = x * x\nx = x * x\n", "x"),
    ("s = 'ab' * 400000\ns = s + s\n", "s"),
    ("row = [0] * 1000\ngrid = [row] * 1000\ncube = [grid] * 1000\nPEAK = max(cube)", "PEAK"),
    ("row = [0] * 1000\ngrid = [row] * 1000\nSAME = grid == [row] * 1000", "SAME"),
    ("TOTAL = sum(range(10 ** 12))", "TOTAL"),
    ("N = len(range(10 ** 20))", "N"),
    ("import math\nF = math.factorial(10 ** 6)", "F"),
    ("X = pow(10, 10 ** 6)", "X"),
])
def test_work_is_bounded_by_its_result(source: str, name: str) -> None:
    """Each of these would run for minutes or hours: refused before computing."""
    ns, skipped = run(source + "\n")
    assert name not in ns and "too large" in skipped[name], skipped


def test_what_stays_allowed() -> None:
    # The wrapped names exist: torch.fx.wrap records them for every later trace of this process.
    ns, skipped = run("import math\nimport torch\nfrom collections import defaultdict\n"
                      "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Cfg:\n    dim: int = 4\n"
                      "cfg = Cfg(dim=2 ** 6)\nORDER = sorted(['b', 'a'], key=str.lower)\nTOP = max([3, 1], key=abs)\n"
                      "TABLE = defaultdict(list)\nROOT = math.sqrt(cfg.dim)\nBIG = 10 ** 300\nshape = (1, 28, 28)\n"
                      "N = math.prod(shape)\nrow = [0] * 1000\ngrid = [row] * 1000\nDIM = cfg.dim\n"
                      "def helper(x):\n    return x\ndef other(x):\n    return x\n"
                      "torch.fx.wrap('helper')\nfrom torch.fx import wrap as leaf\nleaf('other')\n"
                      "import enum\nclass Mode(enum.Enum):\n    TRAIN = 'train'\nMODE = Mode.TRAIN.value\n")
    assert not skipped
    assert (ns["ORDER"], ns["TOP"], ns["ROOT"], ns["N"], ns["DIM"], ns["MODE"]) == (["a", "b"], 3, 8.0, 784, 64,
                                                                                   "train")


def test_objects_imported_from_the_workspace_are_told_by_their_code_not_their_names() -> None:
    """An object of a workspace class reaches a script by import: whatever its class claims to be
    (a faked ``__module__``, a ``__class__`` property, a metaclass), none of its code runs."""
    CALLED.clear()
    namespace = {"__name__": "other_module"}
    exec(compile("class Meta(type):\n    def __call__(cls, *a, **k):\n        _calls('meta')\n"  # noqa: S102
                 "class MetaConfig(metaclass=Meta):\n    pass\n"
                 "class Disguised:\n    __module__ = 'math'\n    @property\n    def __class__(self):\n"
                 "        _calls('class')\n        return dict\n    def __len__(self):\n        _calls('len')\n"
                 "        return 1\n    def __getattr__(self, name):\n        _calls('getattr')\n        return 1\n"
                 "obj = Disguised()\n", "<workspace>", "exec"), {**namespace, "_calls": _calls}, namespace)
    ns, skipped = run("cfg = MetaConfig()\nN = len(obj)\nX = obj.x\nORDER = sorted([obj])\nSAME = obj == 1\n"
                      "PICK = 1 if obj else 2\nT = {obj: 1}\n", MetaConfig=namespace["MetaConfig"], obj=namespace["obj"])
    assert CALLED == []
    assert set(skipped) == {"cfg", "N", "X", "ORDER", "SAME", "PICK", "T"}
    assert "metaclass" in skipped["cfg"] and "computes its attributes" in skipped["X"]
