"""Constructions the repository writes whose arguments are names, through the real CLI: a factory's
parameter defaults (``def resnet_small(num_classes=10): return ResNet(BasicBlock, ...)``), a
script's argparse defaults reached through ``main(opts)``, a dict of defaults the repository
writes for a factory's parameters, a workspace class passed as an argument. Each class here needs
arguments nothing else gives (no placeholder fits), so without reading those names it is "could
not build" (FXS405); read, it is built with the repository's values and traced. An argument that
cannot be read (``len(corpus)``) is filled with an invented value and the build is a hypothesis:
never an error at the user's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_support import CheckRun, locate, run_check, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/resnet.py": """
        from torch import nn


        class BasicBlock(nn.Module):
            expansion = 1

            def __init__(self, planes, mode):
                super().__init__()
                self.conv = nn.Conv2d(planes, planes, 3, padding=1)
                self.act = getattr(nn, mode)()

            def forward(self, x):
                return self.act(self.conv(x)) + x


        class ResNet(nn.Module):
            def __init__(self, block, num_blocks, num_classes, mode):
                super().__init__()
                self.stem = nn.Conv2d(3, 4, 3, padding=1)
                self.layers = nn.Sequential(*[block(4 * block.expansion, mode) for _ in range(num_blocks[0])])
                self.head = nn.Linear(4, num_classes)

            def forward(self, x):
                x = self.layers(self.stem(x))
                return self.head(x.mean((2, 3)))


        def resnet_small(num_classes=10, mode="ReLU"):
            return ResNet(BasicBlock, [2, 2], num_classes=num_classes, mode=mode)
    """,
    "pkg/translate.py": """
        from torch import nn


        class Translator(nn.Module):
            def __init__(self, num_layers, model_dim, vocab_size, activation):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, model_dim)
                self.layers = nn.ModuleList(nn.Linear(model_dim, model_dim) for _ in range(num_layers))
                self.act = getattr(nn, activation)()

            def forward(self, tokens):
                x = self.embed(tokens)
                for layer in self.layers:
                    x = self.act(layer(x))
                return x


        class Tagger(nn.Module):
            def __init__(self, vocab_size, model_dim, activation):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, model_dim)
                self.act = getattr(nn, activation)()

            def forward(self, tokens):
                return self.act(self.embed(tokens))


        class Grid(nn.Module):
            def __init__(self, input_resolution, dim, activation):
                super().__init__()
                self.input_resolution = input_resolution
                self.proj = nn.Linear(dim, dim)
                self.act = getattr(nn, activation)()

            def forward(self, x):
                H, W = self.input_resolution  # MARK unpack
                return self.act(self.proj(x.view(x.size(0), H, W, -1)))


        class Router(nn.Module):
            def __init__(self, vocab_size, model_dim, activation):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, model_dim)
                self.act = getattr(nn, activation)()

            def forward(self, tokens):
                x = self.embed(tokens)
                if x.sum() > 0:  # MARK branch
                    return self.act(x)
                return x
    """,
    "scripts/train.py": """
        import argparse

        from pkg.translate import Grid, Router, Tagger, Translator


        def load_corpus(path):
            return open(path).read().split()


        def main(opts):
            corpus = load_corpus(opts.data)
            model = Translator(num_layers=opts.layers, model_dim=opts.model_dim,  # MARK translator
                               vocab_size=opts.vocab_size, activation=opts.act)
            tagger = Tagger(len(corpus), opts.model_dim, opts.act)  # MARK tagger
            grid = Grid(compute_resolution(corpus), opts.model_dim, opts.act)  # MARK grid
            router = Router(len(corpus), opts.model_dim, opts.act)  # MARK router
            return model, tagger, grid, router


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--data", default="corpus.txt")
            parser.add_argument("--layers", type=int, default=3)
            parser.add_argument("--model-dim", type=int, default=12)
            parser.add_argument("--vocab", dest="vocab_size", type=int, default="24")
            parser.add_argument("--act", default="Tanh")
            opts = parser.parse_args()
            main(opts)
    """,
    "pkg/unet.py": """
        from torch import nn


        class UNetLike(nn.Module):
            def __init__(self, image_size, width, depth, norm):
                super().__init__()
                self.image_size = image_size
                self.blocks = nn.Sequential(*[nn.Conv2d(width if i else 3, width, 3, padding=1)
                                              for i in range(depth)])
                self.norm = getattr(nn, norm)(width)

            def forward(self, x):
                return self.norm(self.blocks(x))


        def model_defaults():
            return dict(image_size=32, width=8, depth=2, norm="BatchNorm2d", learning_rate=0.1)


        def create_model(image_size, width, depth, norm):
            return UNetLike(image_size=image_size, width=width, depth=depth, norm=norm)  # MARK unet
    """,
    # what the workspace passes for `norm` elsewhere does not build UNetLike: only the dict does
    "scripts/sweep.py": """
        def sweep(**settings):
            return settings


        sweep(norm="GroupNorm", width=8)
        sweep(norm="GroupNorm", width=16)
    """,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("named-sites")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def _traced(run: CheckRun, target: str) -> dict:  # type: ignore[type-arg]
    found = run.targets[target]
    assert found["status"] == "traced", (found, run.findings(target))
    assert not [f for f in run.findings(target) if f["severity"] in ("error", "warning")]
    return found


def test_a_factory_s_defaults_and_a_class_argument(run: tuple[Path, CheckRun]) -> None:
    """`ResNet(BasicBlock, [2, 2], num_classes=num_classes, mode=mode)` in `resnet_small(num_classes=10,
    mode="ReLU")`: the defaults, and the workspace class itself as the block."""
    root, check = run
    target = _traced(check, "pkg/resnet.py::ResNet")
    build = target["build"]
    assert (build["kind"], build["file"]) == ("call-site", "pkg/resnet.py")
    assert build["line"] == locate(root, "pkg/resnet.py", "return ResNet(")[0]
    assert build["expr"]["kwargs"] == [["num_classes", {"lit": 10}], ["mode", {"lit": "ReLU"}]]
    assert build["expr"]["args"][0] == {"ref": ["pkg.resnet", ["BasicBlock"]]}
    types = [m["type"] for m in target["modules"]]
    assert types.count("pkg.resnet.BasicBlock") == 2 and "torch.nn.modules.activation.ReLU" in types


def test_a_script_s_argparse_defaults_through_main(run: tuple[Path, CheckRun]) -> None:
    """`main(opts)` with `opts = parser.parse_args()`: `opts.model_dim` is `--model-dim`'s default,
    `opts.vocab_size` the `dest` of `--vocab` (its string default converted by `type=int`)."""
    root, check = run
    target = _traced(check, "pkg/translate.py::Translator")
    build = target["build"]
    assert (build["kind"], build["file"]) == ("call-site", "scripts/train.py")
    assert build["line"] == locate(root, "scripts/train.py", "MARK translator")[0]
    assert build["expr"]["kwargs"] == [["num_layers", {"lit": 3}], ["model_dim", {"lit": 12}],
                                       ["vocab_size", {"lit": 24}], ["activation", {"lit": "Tanh"}]]
    types = [m["type"] for m in target["modules"]]
    assert types.count("torch.nn.modules.linear.Linear") == 3 and "torch.nn.modules.activation.Tanh" in types


def test_a_dict_of_defaults_for_a_factory_s_parameters(run: tuple[Path, CheckRun]) -> None:
    """`create_model(image_size, width, depth, norm)` has no defaults; `model_defaults()` writes a
    dict with those keys: its values."""
    root, check = run
    target = _traced(check, "pkg/unet.py::UNetLike")
    build = target["build"]
    assert build["kind"] == "call-site" and build["line"] == locate(root, "pkg/unet.py", "MARK unet")[0]
    assert build["expr"]["kwargs"] == [["image_size", {"lit": 32}], ["width", {"lit": 8}], ["depth", {"lit": 2}],
                                       ["norm", {"lit": "BatchNorm2d"}]]
    assert [m["type"] for m in target["modules"]].count("torch.nn.modules.conv.Conv2d") == 2


def test_an_argument_that_cannot_be_read_is_filled_and_said(run: tuple[Path, CheckRun]) -> None:
    """`Tagger(len(corpus), opts.model_dim, opts.act)`: the rest is the script's, `vocab_size` is
    invented (the workspace's value for that name, 24, or a placeholder, 16: the smaller build first)
    and the build says so."""
    root, check = run
    target = _traced(check, "pkg/translate.py::Tagger")
    build = target["build"]
    assert (build["kind"], build["file"]) == ("filled-site", "scripts/train.py")
    assert build["line"] == locate(root, "scripts/train.py", "MARK tagger")[0]
    assert build["expr"]["args"] == [{"lit": 16}, {"lit": 12}, {"lit": "Tanh"}]
    assert build["filled"] == [["vocab_size", {"lit": 16}]]


def test_an_invented_value_that_does_not_fit_is_never_an_error_at_the_user_s_line(run: tuple[Path, CheckRun]) -> None:
    """`Grid(compute_resolution(corpus), ...)`: the filled-in `input_resolution` is an int where the
    forward unpacks a pair: that build is the value's fault, rejected (the next one passes a pair),
    and no error is reported at the line that unpacks it."""
    root, check = run
    unpack, _ = locate(root, "pkg/translate.py", "MARK unpack")
    assert not [f for f in check.report["findings"] if f["file"] == "pkg/translate.py" and f["line"] == unpack]
    grid = _traced(check, "pkg/translate.py::Grid")  # the pair, tried next, fits
    assert grid["build"]["kind"] == "filled-site"
    assert grid["build"]["filled"] == [["input_resolution", {"seq": "tuple", "items": [{"lit": 56}, {"lit": 56}]}]]
    assert not check.findings("pkg/translate.py::Grid")


def test_a_real_fx_error_of_a_filled_build_stays_and_says_so(run: tuple[Path, CheckRun]) -> None:
    """`if x.sum() > 0` is fx's own error whatever the sizes: it stays, at the user's line, and says
    which values were invented and where the rest came from. It is the only error."""
    root, check = run
    errors = [f for f in check.report["findings"] if f["severity"] == "error"]
    line, _ = locate(root, "pkg/translate.py", "MARK branch")
    assert [(f["code"], f["file"], f["line"]) for f in errors] == [("FXS101", "pkg/translate.py", line)]
    router = locate(root, "scripts/train.py", "MARK router")[0]
    assert (f"fxscope built `Router` with invented values: vocab_size=16; the rest as in scripts/train.py:{router}"
            in errors[0]["message"])
    assert check.targets["pkg/translate.py::Router"]["build"]["kind"] == "filled-site"
