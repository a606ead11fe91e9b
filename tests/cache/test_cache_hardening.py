"""A large file costs its parse once: the AST summaries of file contents persist in the cache, so
a later check (another process) that must rediscover the workspace never parses it again."""

from __future__ import annotations

import json
import subprocess

import pytest

from engine_support import check_command, cli_env, write_tree

from fxscope.cache import FileHasher, ResultCache, claim_directory
from fxscope.engine import workspace_state
from fxscope.engine.workspace_state import WorkspaceState
from fxscope.project.config import load_config

pytestmark = pytest.mark.requires_torch

HEALTHY = """
    from torch import nn


    class Healthy(nn.Module):
        def forward(self, x):
            return x + 1
    """


def test_a_5mb_file_is_parsed_once_across_processes(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    big = root / "big.py"
    big.write_text("DATA = [\n" + "    1234567,\n" * 400_000 + "]\n")
    assert big.stat().st_size > 5_000_000
    first = subprocess.run(check_command(), cwd=root, env=cli_env(), capture_output=True, text=True,
                           timeout=240)
    assert first.returncode == 0, first.stderr
    assert [t["id"] for t in json.loads(first.stdout)["targets"]] == ["healthy.py::Healthy"]

    with open(root / "healthy.py", "a") as fh:  # discovery must run again, for this file only
        fh.write("# edited\n")
    parsed: list[int] = []
    real = workspace_state.summary_of_bytes

    def counting(data: bytes, kind: str = "py"):
        parsed.append(len(data))
        return real(data, kind=kind)

    monkeypatch.setattr(workspace_state, "summary_of_bytes", counting)
    config = load_config(root)
    with ResultCache(claim_directory(root / ".fxscope_cache")) as cache:
        discovery = WorkspaceState(config, cache, FileHasher(root)).discover()
    assert [t.id for t in discovery.targets] == ["healthy.py::Healthy"]
    assert parsed and max(parsed) < 10_000, "only the edited file may be parsed again"
