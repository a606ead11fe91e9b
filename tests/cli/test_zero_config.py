"""Zero-config: fxscope builds a repository's model classes on its own, from what the repository
already says (defaults, config annotations, transformers config classes, argparse defaults, call
sites in tests, scripts, doctests and README code blocks), keeps the smallest build that works,
names where it came from, and never runs a script's other code. Every automatic build agrees with
plain torch.fx on that same build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine_support import cli_env, locate, run_check, write_tree
from fxscope.project.config import load_config
from fxscope.project.discovery import discover

pytestmark = pytest.mark.requires_torch

MARKER = "fxscope-zero-config-script-ran"

WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/config.py": """
        from dataclasses import dataclass


        @dataclass
        class ModelConfig:
            dim: int = 16
            n_layer: int = 2
    """,
    "pkg/models.py": """
        from torch import nn

        from pkg.config import ModelConfig


        class Configured(nn.Module):
            def __init__(self, config: ModelConfig):  # MARK annotation
                super().__init__()
                self.layers = nn.ModuleList(nn.Linear(config.dim, config.dim) for _ in range(config.n_layer))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class Branchy(nn.Module):
            def __init__(self, config: ModelConfig):
                super().__init__()
                self.proj = nn.Linear(config.dim, config.dim)

            def forward(self, x):
                if x.sum() > 0:  # MARK branch
                    return self.proj(x)
                return x


        class Decoder(nn.Module):
            def __init__(self, dim, depth):
                super().__init__()
                self.blocks = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

            def forward(self, x):
                return self.blocks(x)


        class Wrapper(nn.Module):
            def __init__(self, num_tokens, layers):
                super().__init__()
                self.embed = nn.Embedding(num_tokens, layers.blocks[0].in_features)
                self.layers = layers

            def forward(self, ids):
                return self.layers(self.embed(ids))


        class ViT(nn.Module):
            def __init__(self, *, image_size, dim, depth):
                super().__init__()
                if image_size % 16:
                    raise ValueError("image_size must be a multiple of 16")
                self.blocks = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

            def forward(self, x):
                return self.blocks(x)


        class FromScript(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)


        class FromArgs(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.proj = nn.Linear(args.dim, args.dim)

            def forward(self, x):
                return self.proj(x)


        class Documented(nn.Module):
            \"\"\"A documented block.

            >>> block = Documented(width=8)
            \"\"\"

            def __init__(self, width):
                super().__init__()
                self.proj = nn.Linear(width, width)

            def forward(self, x):
                return self.proj(x)


        class Inner(nn.Module):
            def __init__(self, sauce_cfg):  # no int is tried for a configuration
                super().__init__()
                self.proj = nn.Linear(sauce_cfg, sauce_cfg)

            def forward(self, x):
                return self.proj(x)


        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner(len("four"))  # not a literal: no recipe for Inner

            def forward(self, x):
                return self.inner(x)


        class Unknown(nn.Module):
            def __init__(self, secret):  # MARK unknown
                super().__init__()
                self.secret = secret

            def forward(self, x):
                return x * self.secret
    """,
    "pkg/hf.py": """
        from transformers import PretrainedConfig, PreTrainedModel
        from torch import nn


        class TinyConfig(PretrainedConfig):
            model_type = "fxscope-tiny"

            def __init__(self, hidden=8, **kwargs):
                super().__init__(**kwargs)
                self.hidden = hidden


        class TinyModel(PreTrainedModel):
            config_class = TinyConfig

            def __init__(self, config):
                super().__init__(config)
                self.proj = nn.Linear(config.hidden, config.hidden)

            def forward(self, x):
                return self.proj(x)
    """,
    "tests/test_models.py": """
        from pkg.models import Wrapper, Decoder, Configured
        from pkg.config import ModelConfig


        def test_wrapper():
            model = Wrapper(num_tokens=32, layers=Decoder(dim=8, depth=2))  # MARK nested


        def test_big():
            cfg = ModelConfig(dim=16, n_layer=12)
            model = Configured(cfg)  # MARK big
    """,
    "scripts/train.py": f"""
        import argparse
        import pathlib

        from pkg.models import FromArgs, FromScript

        pathlib.Path({MARKER!r}).write_text("this script ran")  # fxscope must never run this

        model = FromScript(dim=8)  # MARK script


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--dim", type=int, default=6)
            parser.add_argument("--lr", type=float, default=1e-3)
            args = parser.parse_args()
            model = FromArgs(args)  # MARK argparse


        if __name__ == "__main__":
            main()
    """,
    "README.md": """
        # pkg

        ```python
        from pkg.models import ViT

        vit = ViT(image_size=250, dim=32, depth=4)   # not a multiple of 16: raises
        vit = ViT(image_size=256, dim=32, depth=4)
        ```
    """,
}


# ---------------------------------------------------------------------- discovery (AST, no torch)
@pytest.fixture(scope="module")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("zc-discovery")
    write_tree(root, WORKSPACE)
    return {t.id.split("::")[-1]: t for t in discover(load_config(root)).targets}


def _texts(target: Any) -> list[tuple[str, str]]:
    return [(r.kind, r.text) for r in target.recipes]


def test_recipes_from_each_source(discovered: dict[str, Any]) -> None:
    assert ("annotation", "Configured(config=ModelConfig())") in _texts(discovered["Configured"])
    assert ("call-site", "Configured(cfg)") in _texts(discovered["Configured"])  # a config built just before
    assert ("call-site", "Decoder(dim=8, depth=2)") in _texts(discovered["Decoder"])  # nested in another call
    assert ("call-site", "Wrapper(num_tokens=32, layers=Decoder(dim=8, depth=2))") in _texts(discovered["Wrapper"])
    assert [r.kind for r in discovered["ViT"].recipes][:2] == ["readme", "readme"]  # what is written out first
    assert ("call-site", "FromScript(dim=8)") in _texts(discovered["FromScript"])
    assert ("docstring", "Documented(width=8)") in _texts(discovered["Documented"])
    assert [r.kind for r in discovered["TinyModel"].recipes] == ["config-class"]
    assert discovered["Unknown"].recipes == () and discovered["Unknown"].needs_args


def test_argparse_defaults_make_a_namespace(discovered: dict[str, Any]) -> None:
    (recipe,) = discovered["FromArgs"].recipes
    (namespace,) = recipe.expr.args
    assert namespace.func.dotted == "argparse.Namespace"
    assert dict((k, v.value) for k, v in namespace.kwargs) == {"dim": 6, "lr": 1e-3}


def test_recipe_names_are_resolved_to_imports(discovered: dict[str, Any]) -> None:
    recipe = next(r for r in discovered["Configured"].recipes if r.kind == "annotation")
    assert recipe.expr.func.dotted == "pkg.models.Configured"
    assert recipe.expr.kwargs[0][1].func.dotted == "pkg.config.ModelConfig"
    readme = discovered["ViT"].recipes[0]
    assert readme.expr.func.dotted == "pkg.models.ViT" and readme.file == "README.md"


# ---------------------------------------------------------------------- the real CLI
@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("zc-check")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def test_classes_are_built_on_their_own(checked: tuple[Path, Any]) -> None:
    root, run = checked
    targets = run.targets
    builds = {tid.split("::")[-1]: t.get("build") for tid, t in targets.items()}
    assert builds["Configured"]["kind"] == "annotation"  # smaller than the 12-layer test config
    assert builds["Wrapper"]["text"] == "Wrapper(num_tokens=32, layers=Decoder(dim=8, depth=2))"
    assert builds["ViT"] == {**builds["ViT"], "kind": "readme", "file": "README.md",
                             "text": "ViT(image_size=256, dim=32, depth=4)"}  # the first one raised
    assert builds["FromScript"]["file"] == "scripts/train.py"
    assert builds["FromArgs"]["kind"] == "call-site"
    assert builds["Documented"]["kind"] == "docstring"
    assert builds["TinyModel"]["kind"] == "config-class"
    assert builds["Outer"]["kind"] == "defaults"
    for name in ("Configured", "Wrapper", "ViT", "FromScript", "FromArgs", "Documented", "TinyModel", "Outer"):
        assert targets[f"pkg/{'hf' if name == 'TinyModel' else 'models'}.py::{name}"]["status"] == "traced", name
    line, _ = locate(root, "tests/test_models.py", "MARK nested")
    assert (builds["Wrapper"]["file"], builds["Wrapper"]["line"]) == ("tests/test_models.py", line)


def test_a_script_is_never_run(checked: tuple[Path, Any]) -> None:
    root, _ = checked
    assert not (root / MARKER).exists() and not (root / "scripts" / MARKER).exists()


def test_only_real_failures_are_errors(checked: tuple[Path, Any]) -> None:
    root, run = checked
    errors = [f for f in run.report["findings"] if f["severity"] == "error"]
    line, _ = locate(root, "pkg/models.py", "MARK branch")
    assert [(f["code"], f["file"], f["line"]) for f in errors] == [("FXS101", "pkg/models.py", line)]


def test_what_could_not_be_built_is_info_with_what_was_tried(checked: tuple[Path, Any]) -> None:
    root, run = checked
    (unknown,) = run.findings("pkg/models.py::Unknown", "FXS405")
    assert unknown["severity"] == "info" and "secret" in unknown["message"]
    # Inner is only ever built inside Outer: reached through its parent, not reported
    assert run.targets["pkg/models.py::Inner"]["status"] == "skipped"
    assert not run.findings("pkg/models.py::Inner")
    assert run.rc == 1  # the FXS101 of Branchy


def test_the_text_output_names_the_provenance_of_nothing_and_one_line_for_the_rest(checked: tuple[Path, Any]) -> None:
    root, _ = checked
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", ".", "--color", "never"], cwd=root,
                          env=cli_env(), capture_output=True, text=True, timeout=300)
    assert "1 class needs constructor arguments: `fxscope init` writes factories for them" in proc.stdout


_PLAIN_FX = """
import json, sys
import torch.fx
from fxscope.job.construct import rebuild
from fxscope.job.failures import user_file_predicate
root, build = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
model = rebuild(build, root)
try:
    torch.fx.symbolic_trace(model)
except Exception as e:
    tb, line, user = e.__traceback__, None, user_file_predicate(root)
    while tb is not None:
        if user(tb.tb_frame.f_code.co_filename):
            line = [tb.tb_frame.f_code.co_filename[len(root) + 1:], tb.tb_lineno]
        tb = tb.tb_next
    print(json.dumps({"failed": True, "at": line}))
else:
    print(json.dumps({"failed": False}))
"""


def test_every_automatic_build_agrees_with_plain_fx(checked: tuple[Path, Any]) -> None:
    """Each build the report names, rebuilt in a fresh process and traced with plain fx: fxscope
    reports an error exactly when plain fx fails, at the line plain fx fails at."""
    root, run = checked
    compared = 0
    for tid, target in run.targets.items():
        if "build" not in target or target["status"] == "skipped":
            continue
        proc = subprocess.run([sys.executable, "-c", _PLAIN_FX, str(root), json.dumps(target["build"])],
                              cwd=root, env=cli_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        plain = json.loads(proc.stdout)
        errors = [(f["file"], f["line"]) for f in run.findings(tid) if f["severity"] == "error"]
        assert plain["failed"] == bool(errors), (tid, plain, errors)
        if plain["failed"]:
            assert tuple(plain["at"]) in errors, (tid, plain, errors)
        compared += 1
    assert compared >= 9


def test_init_pins_the_builds_and_check_uses_them(tmp_path: Path) -> None:
    write_tree(tmp_path, WORKSPACE)
    env = cli_env()
    first = subprocess.run([sys.executable, "-m", "fxscope", "init"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    factories = (tmp_path / "fxscope_targets.py").read_text()
    pyproject = (tmp_path / "pyproject.toml").read_text()
    assert "def build_wrapper():" in factories and "Decoder(dim=8, depth=2)" in factories
    assert "as in tests/test_models.py:" in factories
    assert '[tool.fxscope.targets.wrapper]\nfactory = "fxscope_targets:build_wrapper"' in pyproject
    assert "# [tool.fxscope.targets.unknown]" in pyproject  # a template to fill in, commented out
    assert "def build_unknown():" in factories and "Unknown(secret=...)" in factories
    assert "outer" not in pyproject  # built with its defaults: nothing to pin
    again = subprocess.run([sys.executable, "-m", "fxscope", "init"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing new to write" in again.stdout
    assert (tmp_path / "fxscope_targets.py").read_text() == factories
    assert (tmp_path / "pyproject.toml").read_text() == pyproject
    run = run_check(tmp_path, timeout=300)
    assert run.targets["wrapper"]["kind"] == "factory" and run.targets["wrapper"]["status"] == "traced"
    # the automatic build of a class a factory now builds is the factory's to report
    assert run.targets["pkg/models.py::Branchy"]["status"] == "skipped"
    assert [f["code"] for f in run.findings("branchy")] == ["FXS101"]


def test_graph_names_the_build(checked: tuple[Path, Any]) -> None:
    root, _ = checked
    proc = subprocess.run([sys.executable, "-m", "fxscope", "graph", "ViT"], cwd=root, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line, _ = locate(root, "README.md", "vit = ViT(image_size=256")
    assert proc.stdout.splitlines()[0] == f"built as ViT(image_size=256, dim=32, depth=4) as in README.md:{line}"


def test_guesses_come_last_from_the_workspace_vocabulary_then_placeholders(discovered: dict[str, Any]) -> None:
    """A class no snippet builds: first with the values the workspace passes for its parameters'
    names elsewhere, then with small placeholders its parameter names call for."""
    kinds = [r.kind for r in discovered["ViT"].recipes]
    guesses = kinds[kinds.index("vocabulary"):]
    assert set(guesses) == {"vocabulary", "placeholder"} and guesses == sorted(guesses, key=("vocabulary", "placeholder").index)
    passed = {"image_size": {250, 256}, "dim": {6, 8, 16, 32}, "depth": {2, 4}}  # what the workspace passes
    for recipe in (r for r in discovered["ViT"].recipes if r.kind == "vocabulary"):
        assert all(v.value in passed[k] for k, v in recipe.expr.kwargs), recipe.text
    placeholder = next(r for r in discovered["ViT"].recipes if r.kind == "placeholder")
    assert dict((k, v.value) for k, v in placeholder.expr.kwargs) == {"image_size": 32, "dim": 16, "depth": 2}
    assert discovered["Inner"].recipes == ()  # a configuration `sauce_cfg`: no int is guessed
