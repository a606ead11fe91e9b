"""What makes a ``.py`` file a script: its top level would call workspace code that does work,
however the call is nested; a library module's own setup calls and computed constants do not."""

from __future__ import annotations

import ast
import textwrap

import pytest
from fxscope.project.toplevel import is_script, plan
from fxscope.project.work import Modules, TopLevel, script_reason

TRAIN = """
import threading
import torch
from torch import nn

def main():
    for epoch in range(3):
        print(epoch)
    return 0

class Trainer:
    def __init__(self, epochs=3):
        self.epochs = epochs

    def fit(self):
        for _ in range(self.epochs):
            pass
"""


def reason(source: str) -> str | None:
    found = script_reason(ast.parse(textwrap.dedent(source)))
    return None if found is None else f"{found.line}: {found.reason}"


@pytest.mark.parametrize(("work", "why"), [
    ("status = main()", "a call of `main`"),
    ("if torch.cuda.is_available():\n    main()", "a call of `main`"),
    ("with torch.no_grad():\n    main()", "a call of `main`"),
    ("try:\n    main()\nexcept Exception:\n    pass", "a call of `main`"),
    ("finally_done = main() if __name__ != 'lib' else None", "a call of `main`"),
    ("results = [main() for _ in range(1)]", "a call of `main`"),
    ("threading.Thread(target=main).start()", "it hands `main`"),
    ("Trainer().fit()", "a call of `Trainer().fit`"),
    ("trainer = Trainer(epochs=1)\ntrainer.fit()", "a call of `trainer.fit`"),
    ("done = list(map(main, [1]))", "it hands `main`"),
    ("(lambda: main())()", "a lambda that calls `main`"),
    ("run = main\nrun()", "a call of `run`"),
    ("jobs = {'train': main}\njobs['train']()", "a call of `jobs['train']`"),
    ("order = sorted([2, 1], key=lambda n: main())", "a lambda that calls `main`"),
    ("class Cached(nn.Module):\n    result = main()", "a call of `main`"),
    ("def go(code=main()):\n    return code", "a call of `main`"),
    ("for step in range(2):\n    pass", "a loop"),
    ("import asyncio\nasync def serve():\n    pass\nasyncio.run(serve())", "a call of `serve`"),
    ("def count(n):\n    return count(n - 1) if n else 0\nDEPTH = count(3)", "a call of `count`"),
    ("def build():\n    return nn.Linear(2, 2)\nlayer = build()", "a call of `build`"),
    ("def spawn():\n    import subprocess\n    subprocess.run(['true'])\nspawn()", "a call of `spawn`"),
])
def test_a_call_of_workspace_work_however_nested_makes_a_script(work: str, why: str) -> None:
    found = reason(TRAIN + work + "\n")
    assert found is not None and why in found, found


@pytest.mark.parametrize("library", [
    # the GPT-repository case: setup functions and computed constants of the module itself
    "import logging\ndef setup_default_logging(level=logging.INFO):\n    logging.basicConfig(level=level)\n"
    "setup_default_logging()",
    "def _detect_compute_dtype():\n    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():\n"
    "        return torch.bfloat16\n    return torch.float32\nCOMPUTE_DTYPE = _detect_compute_dtype()",
    "from dataclasses import dataclass\n@dataclass\nclass GPTConfig:\n    n_layer: int = 2\nDEFAULT = GPTConfig(n_layer=4)",
    "class Settings:\n    def __init__(self, dim=8):\n        self.dim = dim\nSETTINGS = Settings()\nWIDTH = SETTINGS.dim * 2",
    "REGISTRY = {}\ndef register(cls):\n    REGISTRY[cls.__name__] = cls\n    return cls\n"
    "@register\nclass Net(nn.Module):\n    pass\nMODELS = {'net': Net}\nregister(Trainer)",
    "if __name__ == '__main__':\n    main()",
    "from functools import partial\nclass Norm(nn.Module):\n    pass\nmake_norm = partial(Norm, eps=1e-6)",
    "def helper(x):\n    return x + 1\ntorch.fx.wrap('helper')\nfast = torch.jit.script(helper)",
    "import functools\nslow = functools.lru_cache(maxsize=8)(main)",
    "def scale(x):\n    return x * 2\nSIZES = sorted([3, 1], key=scale)",
])
def test_a_library_module_setup_is_not_work(library: str) -> None:
    assert reason(TRAIN + library + "\n") is None


def test_functions_imported_from_the_workspace_are_judged_by_their_body() -> None:
    files = {
        "pkg.utils": "import logging\ndef get_logger(name):\n    return logging.getLogger(name)\n"
                     "def train():\n    while True:\n        pass\n",
        "pkg.reexport": "from .utils import get_logger, train\n",
    }
    modules = Modules(lambda name: name if name in files else None, files.get)

    def judged(source: str, name: str = "pkg.model") -> str | None:
        tree = ast.parse(source)
        found = script_reason(tree, top=modules.toplevel(tree, name, is_package=False))
        return None if found is None else found.reason

    assert judged("from .utils import get_logger\nlogger = get_logger(__name__)\n") is None
    assert judged("from . import utils\nlogger = utils.get_logger(__name__)\n") is None
    assert judged("from .reexport import get_logger\nlogger = get_logger(__name__)\n") is None
    assert judged("from .utils import train\ntrain()\n") == "a call of `train`"
    assert judged("from . import reexport\nreexport.train()\n") == "a call of `reexport.train`"
    # without reading them, a workspace function is work; discovery's per-file view takes it for inert
    assert reason("from .utils import get_logger\nlogger = get_logger(__name__)\n") is not None
    tree = ast.parse("from .utils import get_logger\nlogger = get_logger(__name__)\n")
    assert script_reason(tree, top=TopLevel(tree, unread_inert=True)) is None
    # a module that is not the workspace's is a library
    assert reason("from logging import getLogger\nlogger = getLogger(__name__)\n") is None


def test_the_plan_of_a_script_skips_definitions_that_run_work() -> None:
    tree = ast.parse(textwrap.dedent(TRAIN) + "class Cached(nn.Module):\n    result = main()\n"
                     "__name__ = 'torch.nn'\nmain()\n")
    steps = {tree.body[s.index].lineno: (s.kind, s.reason) for s in plan(tree, top=TopLevel(tree))}
    kinds = list(steps.values())
    assert ("skip", "its definition runs work (a call of `main`)") in kinds
    assert ("skip", "it rebinds `__name__`, which the import set") in kinds
    assert is_script(tree)


def test_availability_probes_are_not_work() -> None:
    """``HAS_FLASH = _has_flash()`` (``importlib.util.find_spec``) and ``try``/``except`` probes
    configure a library module: they run as written."""
    assert reason("import importlib.util\nimport os\n"
                  "def _has_flash():\n    return importlib.util.find_spec('flash_attn') is not None\n"
                  "def _env_flag(name, default=False):\n    try:\n        return bool(int(os.environ[name]))\n"
                  "    except (KeyError, ValueError):\n        return default\n"
                  "HAS_FLASH = _has_flash()\nDEBUG = _env_flag('DEBUG')\n") is None
