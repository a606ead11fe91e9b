"""Constructions written in YAML configs, through the real CLI: a mapping that names a workspace class
(``name: VanillaVAE`` with its arguments, Hydra's ``_target_``) builds it when nothing else says how;
a mapping that only shares the class's name, or a file that is not YAML, builds nothing and breaks nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_support import CheckRun, run_check, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    "models/__init__.py": "",
    "models/vae.py": """
        import torch
        from torch import nn


        class VanillaVAE(nn.Module):
            def __init__(self, in_channels, latent_dim, **kwargs):
                super().__init__()
                if latent_dim % 7:  # a made-up size would not build: only the config's does
                    raise ValueError("latent_dim must be a multiple of 7")
                self.encode = nn.Conv2d(in_channels, latent_dim, 3)

            def forward(self, x):
                return self.encode(x).relu()


        class Decoder(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                if width != 24:
                    raise ValueError("width must be 24")
                self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

            def forward(self, x):
                return self.layers(x)
    """,
    "configs/vae.yaml": """
        model_params:
          name: 'VanillaVAE'
          in_channels: 3
          latent_dim: 14

        logging_params:   # shares the model's name, configures something else
          save_dir: "logs/"
          name: "VanillaVAE"
    """,
    "conf/decoder.yml": """
        decoder:
          _target_: models.vae.Decoder
          width: 24
          depth: 2
    """,
    "configs/broken.yaml": "model: [unclosed\n  name: VanillaVAE: :\n",
    "configs/data.yaml": "!!python/object/apply:os.system ['touch never']\n",
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckRun]:
    root = tmp_path_factory.mktemp("yaml_configs")
    write_tree(root, WORKSPACE)
    return root, run_check(root, "--show-info", timeout=300)


def test_a_yaml_mapping_that_names_a_class_builds_it(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    vae = run.targets["models/vae.py::VanillaVAE"]
    assert vae["status"] == "traced", run.findings("models/vae.py::VanillaVAE")
    build = vae["build"]
    assert (build["kind"], build["file"], build["line"]) == ("config-file", "configs/vae.yaml", 2)
    assert build["text"] == "VanillaVAE(in_channels=3, latent_dim=14)"  # not the logging mapping's save_dir


def test_hydra_target_names_a_class_by_its_import_name(checked: tuple[Path, CheckRun]) -> None:
    _, run = checked
    decoder = run.targets["models/vae.py::Decoder"]
    assert decoder["status"] == "traced", run.findings("models/vae.py::Decoder")
    assert (decoder["build"]["kind"], decoder["build"]["file"]) == ("config-file", "conf/decoder.yml")
    assert decoder["build"]["text"] == "models.vae.Decoder(width=24, depth=2)"


def test_files_that_are_not_configs_break_nothing(checked: tuple[Path, CheckRun]) -> None:
    root, run = checked
    assert run.rc == 0, run.stderr
    assert not [f for f in run.report["findings"] if f.get("file", "").endswith((".yaml", ".yml"))]
    assert not (root / "never").exists()
