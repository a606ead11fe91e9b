"""fxscope.project.discovery: targets from the AST, needs-args detection, import graph, overlays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine_support import write_tree
from fxscope.project import INHERITED, Discovery, FileError, Target, discover, load_config
from fxscope.project import _summary


def write(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files, lstrip=False)  # line numbers count the sources' first, empty line


def run(root: Path, **kwargs) -> Discovery:  # type: ignore[no-untyped-def]
    return discover(load_config(root), **kwargs)


def by_id(discovery: Discovery) -> dict[str, Target]:
    return {t.id: t for t in discovery.targets}


FORWARD = "    def forward(self, x):\n        return x\n"


def test_module_detection_through_import_aliases(tmp_path: Path) -> None:
    cases = {
        "a.py": "import torch\nclass A(torch.nn.Module):\n",
        "b.py": "import torch.nn as nn\nclass B(nn.Module):\n",
        "c.py": "from torch import nn\nclass C(nn.Module):\n",
        "d.py": "from torch.nn import Module\nclass D(Module):\n",
        "e.py": "from torch.nn import Module as M\nclass E(M):\n",
        "f.py": "import torch.nn\nclass F(torch.nn.Module):\n",
        "g.py": "import torch.nn.modules.module as mm\nclass G(mm.Module):\n",
        "h.py": "from torch.nn import *\nclass H(Module):\n",
        "i.py": "from torch import nn\nBase = nn.Module\nclass I(Base):\n",
        "j.py": "try:\n    from torch import nn\nexcept ImportError:\n    nn = None\nclass J(nn.Sequential):\n",
        "k.py": "from torch import nn\nclass K(nn.Identity):\n",
        "l.py": "from torch import nn\nclass L(nn.ParameterList):\n",
        # not modules
        "n1.py": "from torch import nn\nclass P(nn.Parameter):\n",
        "n2.py": "import torch\nclass Q(torch.nn.UninitializedBuffer):\n",
        "n3.py": "class R(object):\n",
        "n4.py": "from mylib import nn\nclass S(nn.Module):\n",
        "n5.py": "import torch.nn.functional as F\nclass T(F.Something):\n",
    }
    write(tmp_path, {name: text + FORWARD for name, text in cases.items()})
    discovery = run(tmp_path)
    assert [t.id for t in discovery.targets] == [
        "a.py::A", "b.py::B", "c.py::C", "d.py::D", "e.py::E", "f.py::F", "g.py::G",
        "h.py::H", "i.py::I", "j.py::J", "k.py::K", "l.py::L",
    ]
    assert all(not t.needs_args for t in discovery.targets)
    a = discovery.targets[0]
    assert (a.kind, a.file, a.line, a.module, a.qualname, a.factory) == ("class", "a.py", 2, "a", "A", None)
    assert discovery.file_errors == []


def test_cross_file_inheritance(tmp_path: Path) -> None:
    write(tmp_path, {
        "src/pkg/__init__.py": "from .blocks import Block as PublicBlock\n",
        "src/pkg/base.py": """
            from torch import nn
            class BaseBlock(nn.Module):
                def __init__(self, dim=8):
                    super().__init__()
                def forward(self, x):
                    return x
            class Plain:
                pass
        """,
        "src/pkg/blocks.py": """
            from .base import BaseBlock
            class Block(BaseBlock):
                pass
        """,
        "src/pkg/sub/model.py": """
            from .. import blocks
            import pkg.base
            from pkg import PublicBlock
            from ..base import Plain
            class Deep(blocks.Block):
                pass
            class Deeper(pkg.base.BaseBlock):
                pass
            class Exported(PublicBlock):
                pass
            class NotAModule(Plain):
                def forward(self, x):
                    return x
        """,
    })
    targets = by_id(run(tmp_path))
    assert sorted(targets) == [
        "src/pkg/base.py::BaseBlock", "src/pkg/blocks.py::Block", "src/pkg/sub/model.py::Deep",
        "src/pkg/sub/model.py::Deeper", "src/pkg/sub/model.py::Exported",
    ]
    assert targets["src/pkg/sub/model.py::Deep"].module == "pkg.sub.model"
    assert targets["src/pkg/blocks.py::Block"].module == "pkg.blocks"
    assert not any(t.needs_args for t in targets.values())


def test_needs_args(tmp_path: Path) -> None:
    write(tmp_path, {
        "base.py": """
            from torch import nn
            class NeedsDim(nn.Module):
                def __init__(self, dim, *, heads, bias=True, **kwargs):
                    super().__init__()
        """,
        "m.py": """
            import torch.nn as nn
            from transformers import PreTrainedModel
            from transformers.models.gpt2.modeling_gpt2 import GPT2PreTrainedModel
            from base import NeedsDim
            from somewhere import Mixin

            class Defaults(nn.Module):
                def __init__(self, a=1, *args, b=2, **kwargs):
                    super().__init__()
                def forward(self, x): return x

            class Own(nn.Module):
                def __init__(self, cfg, /, size, opt=None):
                    super().__init__()
                def forward(self, x): return x

            class Inherits(NeedsDim):
                def forward(self, x): return x

            class Overrides(NeedsDim):
                def __init__(self):
                    super().__init__(4, heads=2)
                def forward(self, x): return x

            class MyLinear(nn.Linear):
                pass

            class MySeq(nn.Sequential):
                pass

            class MyReLU(nn.ReLU):
                pass

            class HF(PreTrainedModel):
                def forward(self, x): return x

            class GPT(GPT2PreTrainedModel):
                def forward(self, x): return x

            class Mixed(Mixin, nn.Module):
                def forward(self, x): return x

            class MixedAfter(nn.Module, Mixin):
                def forward(self, x): return x
        """,
    })
    targets = by_id(run(tmp_path))
    expected = {
        "m.py::Defaults": (),
        "m.py::Own": ("cfg", "size"),
        "m.py::Inherits": ("dim", "heads"),
        "m.py::Overrides": (),
        "m.py::MyLinear": ("in_features", "out_features"),  # nn.Linear's
        "m.py::MySeq": (),
        "m.py::MyReLU": (),
        "m.py::HF": ("config",),
        "m.py::GPT": ("config",),
        "m.py::Mixed": (INHERITED,),
        "m.py::MixedAfter": (),
    }
    for target_id, required in expected.items():
        target = targets[target_id]
        assert target.required_args == required, target_id
        assert target.needs_args == bool(required), target_id
    assert "base.py::NeedsDim" not in targets  # no forward anywhere in its chain


def test_non_targets(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": """
        import abc
        from abc import abstractmethod
        from torch import nn

        class _Private(nn.Module):
            def forward(self, x): return x

        class AbstractBase(nn.Module):
            @abstractmethod
            def forward(self, x): ...

        class StillAbstract(AbstractBase):
            pass

        class Concrete(AbstractBase):
            def forward(self, x): return x

        class OtherAbstract(nn.Module):
            @abc.abstractmethod
            def head(self): ...
            def forward(self, x): return x

        class NoForward(nn.Module):
            pass

        class Holder(nn.ModuleList):
            pass

        class Outer(nn.Module):
            class Nested(nn.Module):
                def forward(self, x): return x
            def forward(self, x): return x

        def factory():
            class InFunction(nn.Module):
                def forward(self, x): return x
            return InFunction()

        class Redefined(nn.Module):
            def forward(self, x): return x
        Redefined = None
    """})
    assert [t.id for t in run(tmp_path).targets] == ["m.py::Concrete", "m.py::Outer"]


def test_syntax_error_is_a_file_error(tmp_path: Path) -> None:
    write(tmp_path, {
        "ok.py": "from torch import nn\nclass Ok(nn.Module):\n" + FORWARD,
        "bad.py": "import torch\n\ndef broken(:\n    pass\n",
    })
    discovery = run(tmp_path)
    assert discovery.file_errors == [FileError("bad.py", 3, 12, "invalid syntax")]
    assert discovery.files == ["bad.py", "ok.py"]
    assert [t.id for t in discovery.targets] == ["ok.py::Ok"]
    assert discovery.imports["bad.py"] == set()


def test_import_graph_and_dependents(tmp_path: Path) -> None:
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": "X = 1\n",
        "pkg/layers/__init__.py": "from .attn import Attn\n",
        "pkg/layers/attn.py": "from ..util import X\n",
        "pkg/layers/mlp.py": "from . import attn\n",
        "pkg/models/__init__.py": "",
        "pkg/models/gpt.py": "from ..layers import mlp\n",
        "pkg/models/lazy.py": "def f():\n    import pkg.util\n",
        "app.py": "import pkg.models.gpt\nimport torch\nfrom os import path\n",
        "solo.py": "",
    })
    discovery = run(tmp_path)
    imports = discovery.imports
    assert imports["pkg/layers/attn.py"] == {"pkg/__init__.py", "pkg/layers/__init__.py", "pkg/util.py"}
    assert imports["pkg/layers/mlp.py"] == {"pkg/__init__.py", "pkg/layers/__init__.py", "pkg/layers/attn.py"}
    assert imports["pkg/layers/__init__.py"] == {"pkg/__init__.py", "pkg/layers/attn.py"}
    assert imports["pkg/models/gpt.py"] == {
        "pkg/__init__.py", "pkg/models/__init__.py", "pkg/layers/__init__.py", "pkg/layers/mlp.py",
    }
    assert imports["pkg/models/lazy.py"] == {"pkg/__init__.py", "pkg/models/__init__.py", "pkg/util.py"}
    assert imports["app.py"] == {"pkg/__init__.py", "pkg/models/__init__.py", "pkg/models/gpt.py"}
    assert imports["solo.py"] == set()

    assert discovery.dependents("pkg/layers/attn.py") == {
        "pkg/layers/attn.py", "pkg/layers/__init__.py", "pkg/layers/mlp.py", "pkg/models/gpt.py", "app.py",
    }
    assert discovery.dependents("solo.py") == {"solo.py"}
    assert "pkg/models/lazy.py" in discovery.dependents("pkg/util.py")


def test_affected_targets(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": "from torch import nn\nclass Attn(nn.Module):\n" + FORWARD,
        "model.py": "from layers import Attn\nclass Net(Attn):\n    pass\n",
        "other.py": "from torch import nn\nclass Other(nn.Module):\n" + FORWARD,
    })
    discovery = run(tmp_path)
    assert [t.id for t in discovery.affected_targets("layers.py")] == ["layers.py::Attn", "model.py::Net"]
    assert [t.id for t in discovery.affected_targets("other.py")] == ["other.py::Other"]


def test_overlays_replace_disk_and_add_unsaved_files(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": "from torch import nn\nclass Old(nn.Module):\n" + FORWARD})
    overlays = {
        tmp_path / "m.py": "from torch import nn\nclass New(nn.Module):\n" + FORWARD,
        tmp_path / "fresh.py": "from m import New\nclass Fresh(New):\n    pass\n",
        tmp_path / ".venv" / "x.py": "from torch import nn\nclass Hidden(nn.Module):\n" + FORWARD,
    }
    discovery = run(tmp_path, overlays=overlays)
    assert [t.id for t in discovery.targets] == ["fresh.py::Fresh", "m.py::New"]
    assert discovery.files == ["fresh.py", "m.py"]
    assert discovery.imports["fresh.py"] == {"m.py"}

    broken = run(tmp_path, overlays={Path("m.py"): "class (:\n"})
    assert [e.file for e in broken.file_errors] == ["m.py"]
    assert broken.targets == []
    assert [t.id for t in run(tmp_path).targets] == ["m.py::Old"]


def test_explicit_file_list(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.py": "from torch import nn\nclass A(nn.Module):\n" + FORWARD,
        "b.py": "from torch import nn\nclass B(nn.Module):\n" + FORWARD,
    })
    discovery = run(tmp_path, files=[tmp_path / "b.py"])
    assert discovery.files == ["b.py"]
    assert [t.id for t in discovery.targets] == ["b.py::B"]


def test_rediscovery_parses_only_changed_files(tmp_path: Path) -> None:
    files = {f"m{i}.py": f"from torch import nn\nclass M{i}(nn.Module):\n" + FORWARD for i in range(5)}
    write(tmp_path, files)
    config = load_config(tmp_path)
    _summary.clear_cache()
    before = _summary.cache_stats()["parses"]
    discover(config)
    assert _summary.cache_stats()["parses"] - before == 5
    discover(config)
    assert _summary.cache_stats()["parses"] - before == 5

    path = tmp_path / "m2.py"
    path.write_text(files["m2.py"] + "\nclass Extra(nn.Module):\n" + FORWARD)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    discovery = discover(config)
    assert _summary.cache_stats()["parses"] - before == 6
    assert "m2.py::Extra" in by_id(discovery)

    overlay = {path: files["m2.py"]}  # same text as before the edit: already cached by content
    assert "m2.py::Extra" not in by_id(discover(config, overlays=overlay))
    assert _summary.cache_stats()["parses"] - before == 6


def test_a_file_saved_twice_in_one_timestamp_tick_is_parsed_again(tmp_path: Path) -> None:
    """A just-written file's (mtime, size, inode) may survive its next save: not trusted yet."""
    write(tmp_path, {"m.py": "from torch import nn\nclass A(nn.Module):\n" + FORWARD})
    config = load_config(tmp_path)
    path = tmp_path / "m.py"
    stamp = time.time_ns() + 60 * 10**9  # "just now" however slowly the test runs
    os.utime(path, ns=(stamp, stamp))
    assert [t.id for t in discover(config).targets] == ["m.py::A"]
    path.write_text(path.read_text().replace("class A(", "class B("))  # same size
    os.utime(path, ns=(stamp, stamp))  # and the same mtime
    assert [t.id for t in discover(config).targets] == ["m.py::B"]


def test_factory_targets(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": """
            [tool.fxscope]
            auto-targets = false

            [tool.fxscope.targets.gpt2-small]
            factory = "pkg.models:build_gpt2"
            concrete-args = { use_cache = false }

            [tool.fxscope.targets.reexported]
            factory = "pkg:build_gpt2"

            [tool.fxscope.targets.method]
            factory = "pkg.models:Zoo.tiny"

            [tool.fxscope.targets.external]
            factory = "torchvision.models:resnet18"
        """,
        "src/pkg/__init__.py": "from .models import build_gpt2\n",
        "src/pkg/models.py": """
            from torch import nn

            class Net(nn.Module):
                def forward(self, x):
                    return x

            class Zoo:
                @staticmethod
                def tiny():
                    return Net()

            def build_gpt2():
                return Net()
        """,
    })
    discovery = run(tmp_path)
    targets = by_id(discovery)
    assert sorted(targets) == ["external", "gpt2-small", "method", "reexported"]
    gpt = targets["gpt2-small"]
    assert (gpt.kind, gpt.file, gpt.line, gpt.module, gpt.factory) == (
        "factory", "src/pkg/models.py", 13, "pkg.models", "pkg.models:build_gpt2",
    )
    assert gpt.concrete_args == {"use_cache": False}
    assert not gpt.needs_args and gpt.required_args == ()
    assert (targets["reexported"].file, targets["reexported"].line) == ("src/pkg/models.py", 13)
    assert (targets["method"].file, targets["method"].line) == ("src/pkg/models.py", 10)
    assert (targets["external"].file, targets["external"].line, targets["external"].module) == (
        "", 1, "torchvision.models",
    )
    data = [t.to_json() for t in discovery.targets]
    assert json.loads(json.dumps(data)) == data
    assert data[1]["id"] == "gpt2-small" and data[1]["concrete_args"] == {"use_cache": False}


def test_auto_and_factory_targets_together_sorted(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": '[tool.fxscope.targets.zeta]\nfactory = "b:make"\n',
        "b.py": "from torch import nn\nclass B(nn.Module):\n" + FORWARD + "def make():\n    return B()\n",
        "a.py": "from torch import nn\nclass A(nn.Module):\n" + FORWARD,
    })
    first = run(tmp_path)
    assert [t.id for t in first.targets] == ["a.py::A", "b.py::B", "zeta"]
    assert first.targets == run(tmp_path).targets
    assert first.targets[2].line == 5


def test_no_torch_import(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": "import torch\nfrom torch import nn\nclass M(nn.Module):\n" + FORWARD})
    code = (
        "import sys; from pathlib import Path\n"
        "from fxscope.project import discover, load_config\n"
        f"d = discover(load_config(Path({str(tmp_path)!r})))\n"
        "assert [t.id for t in d.targets] == ['m.py::M'], d.targets\n"
        "assert 'torch' not in sys.modules\n"
    )
    daemon = Path(__file__).resolve().parents[2] / "daemon"
    env = {**os.environ, "PYTHONPATH": str(daemon)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


@pytest.mark.parametrize("name", ["my-dir/m.py", "outside_path/m.py"])
def test_files_without_module_name_still_give_targets(tmp_path: Path, name: str) -> None:
    write(tmp_path, {
        "pyproject.toml": '[tool.fxscope]\npython-path = ["lib"]\n',
        name: "from torch import nn\nclass M(nn.Module):\n" + FORWARD,
    })
    (target,) = run(tmp_path).targets
    assert target.module is None and target.file == name


def test_files_under_a_directory_that_is_no_import_name_are_modules_of_their_script_directory(tmp_path: Path) -> None:
    write(tmp_path, {
        "model.py": "from torch import nn\nclass Net(nn.Module):\n" + FORWARD,
        "wrap.py": "from torch import nn\nclass Wrapper(nn.Module):\n    def __init__(self, inner):\n"
                   "        super().__init__()\n" + FORWARD,
        "moe-x/model.py": "from torch import nn\nclass Net(nn.Module):\n" + FORWARD
                          + "class Expert(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n" + FORWARD,
        "moe-x/quantize.py": "from model import Net\nclass Quant(Net):\n    pass\n",
        "runs-2/pkg/__init__.py": "",
        "runs-2/pkg/net.py": "from .layers import L\nclass N(L):\n    pass\n",
        "runs-2/pkg/layers.py": "from torch import nn\nclass L(nn.Module):\n" + FORWARD,
        "runs-2/train.py": "from pkg.net import N\n",
        "other-dir/solo.py": "import model\n",
        "README.md": "```python\nWrapper(inner=Expert(dim=4))\n```\n",  # Expert: the one class of that name
    })
    discovery = run(tmp_path)
    targets = by_id(discovery)
    named = {tid: (t.module, t.import_root) for tid, t in targets.items()}
    assert named["moe-x/model.py::Net"] == ("model", "moe-x") and named["model.py::Net"] == ("model", "")
    assert named["moe-x/quantize.py::Quant"] == ("quantize", "moe-x")
    assert named["runs-2/pkg/net.py::N"] == ("pkg.net", "runs-2")  # a package there: named from above it
    assert discovery.imports["moe-x/quantize.py"] == {"moe-x/model.py"}  # the sibling, not the top-level module
    assert discovery.imports["runs-2/pkg/net.py"] == {"runs-2/pkg/__init__.py", "runs-2/pkg/layers.py"}
    assert discovery.imports["runs-2/train.py"] == {"runs-2/pkg/__init__.py", "runs-2/pkg/net.py"}
    assert discovery.imports["other-dir/solo.py"] == {"model.py"}  # its root has no `model`: the python path's
    assert "moe-x/quantize.py" not in discovery.dependents("model.py")
    assert [r.expr.func.dotted for r in targets["moe-x/quantize.py::Quant"].recipes] == ["quantize.Quant"]
    expert = [r for r in targets["moe-x/model.py::Expert"].recipes if r.kind == "readme"]
    assert [r.expr.func.dotted for r in expert] == ["model.Expert"]
    # a top-level class cannot import moe-x's Expert: no construction of it passes one
    assert not [r for r in targets["wrap.py::Wrapper"].recipes if r.kind == "readme"]

    fresh = tmp_path / "moe-x" / "fresh.py"  # a file opened in the editor, not saved yet: a module of its own
    unsaved = run(tmp_path, overlays={fresh: "from model import Net\nclass Fresh(Net):\n    pass\n"})
    target = by_id(unsaved)["moe-x/fresh.py::Fresh"]
    assert (target.module, target.import_root) == ("fresh", "moe-x")
    assert unsaved.imports["moe-x/fresh.py"] == {"moe-x/model.py"}
    assert Target.from_json(target.to_json()) == target and target.to_json()["import_root"] == "moe-x"


def test_forwarding_constructors_and_mixins_need_arguments(tmp_path: Path) -> None:
    """A constructor taking only *args/**kwargs forwards them (to a base such as nn.Linear): the
    class needs arguments (FXS405), it is not built with none (a false FXS401)."""
    write(tmp_path, {"m.py": """
        from torch import nn

        class LogMixin:
            def log(self): return 1

        class CoopMixin:
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)

        class Plain(LogMixin, nn.Linear):
            pass

        class Cooperative(CoopMixin, nn.Linear):
            pass

        class Wrapper(nn.Module):
            def __init__(self, *args, **kw):
                super().__init__()
                self.inner = nn.Linear(*args, **kw)
            def forward(self, x): return self.inner(x)

        class KwOnly(nn.Module):
            def __init__(self, **options):
                super().__init__()
            def forward(self, x): return x

        class WithDefaults(nn.Module):
            def __init__(self, dim=8, **kwargs):
                super().__init__()
            def forward(self, x): return x
    """})
    targets = by_id(run(tmp_path))
    # nn.Linear's own parameters, past a mixin without a constructor
    assert targets["m.py::Plain"].required_args == ("in_features", "out_features")
    assert targets["m.py::Cooperative"].required_args == ("*args", "**kwargs")
    assert targets["m.py::Wrapper"].required_args == ("*args", "**kw")
    assert targets["m.py::KwOnly"].required_args == ("**options",)
    assert all(targets[t].needs_args for t in ("m.py::Plain", "m.py::Cooperative", "m.py::Wrapper",
                                                "m.py::KwOnly"))
    assert not targets["m.py::WithDefaults"].needs_args  # timm's style: every option has a default


def test_classes_under_the_main_guard_are_not_targets(tmp_path: Path) -> None:
    write(tmp_path, {"m.py": """
        from torch import nn

        class Net(nn.Module):
            def forward(self, x): return x

        if __name__ == "__main__":
            class Demo(nn.Module):
                def forward(self, x): return x
        elif "__main__" == __name__:
            class Never(nn.Module):
                def forward(self, x): return x
        else:
            class Imported(nn.Module):
                def forward(self, x): return x

        if "__main__" == __name__:
            class Other(nn.Module):
                def forward(self, x): return x
    """})
    assert [t.id for t in run(tmp_path).targets] == ["m.py::Imported", "m.py::Net"]
