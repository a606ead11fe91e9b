"""The truth rules through the real CLI: no target fails silently (a module without a forward is
an error at its class), classes fxscope built on its own are FXS405 when their constructor wants
arguments, a finding seen by several targets keeps every target's call chain and names the targets
once, and the whole model corpus checked as a workspace keeps the report's invariants."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from engine_support import (
    SCHEMA,
    assert_failures_explained,
    assert_schema_describes,
    cli_env,
    locate,
    run_check,
    write_tree,
)

pytestmark = pytest.mark.requires_torch

MODELS = Path(__file__).resolve().parents[1] / "models"


def _text(root: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    """``fxscope check PATHS --format text`` (the whole root without paths)."""
    command = [sys.executable, "-m", "fxscope", "check", *(paths or (".",)), "--format", "text"]
    return subprocess.run(command, cwd=root, env=cli_env(), capture_output=True, text=True, timeout=300,
                          check=False)


def _valid(report: dict) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    assert_schema_describes(report, schema)
    assert_failures_explained(report)


def test_a_factory_returning_a_module_without_forward_is_an_error(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": """
            [tool.fxscope]

            [tool.fxscope.targets.cache]
            factory = "cache:make_cache"
            """,
        "cache.py": """
            import torch
            from torch import nn


            class KVCache(nn.Module):  # MARK class
                def __init__(self, size):
                    super().__init__()
                    self.register_buffer("k", torch.zeros(size, 4))


            def make_cache():
                return KVCache(8)
            """,
    })
    run = run_check(tmp_path)
    assert run.rc == 1
    _valid(run.report)
    assert run.targets["cache"]["status"] == "failed"
    (finding,) = run.findings("cache")
    line, column = locate(tmp_path, "cache.py", "MARK class", "KVCache")
    assert (finding["code"], finding["file"], finding["line"], finding["column"]) == ("FXS107", "cache.py", line, column)
    assert "`KVCache` has no `forward`" in finding["message"]
    text = _text(tmp_path)
    assert text.returncode == 1 and "All checks passed" not in text.stdout
    assert text.stdout.splitlines()[-1].startswith("Found 1 error in 1 of 1 target (1 failed")


def test_classes_built_without_the_arguments_they_take_are_fxs405(tmp_path: Path) -> None:
    """Zero-config: a constructor with only optional parameters that asserts one of them, and a
    constructor inherited past a mixin, are FXS405 info (exit 0); the same constructor called by a
    configured factory that raises stays FXS401. The skip is cached like any result."""
    write_tree(tmp_path, {
        "pyproject.toml": """
            [tool.fxscope]

            [tool.fxscope.targets.configured]
            factory = "optional_args:Quantizer"
            """,
    })
    shutil.copy(MODELS / "optional_args.py", tmp_path / "optional_args.py")
    run = run_check(tmp_path, "--fail-on", "error")
    _valid(run.report)
    for tid, text in (("optional_args.py::Quantizer", "give dim or codebook_size"),
                      ("optional_args.py::MixedLinear", "in_features")):
        assert run.targets[tid]["status"] == "skipped", run.targets[tid]
        (finding,) = run.findings(tid)
        assert finding["code"] == "FXS405" and finding["severity"] == "info"
        assert "needs constructor arguments" in finding["message"] and text in finding["message"]
        assert (finding["file"], finding["line"]) == ("optional_args.py", run.targets[tid]["line"])
    (configured,) = run.findings("configured")
    assert configured["code"] == "FXS401" and run.targets["configured"]["status"] == "error"
    assert run.rc == 1  # the configured factory's error
    assert not [f for f in run.report["findings"] if f["code"] == "FXS401" and f["target"] != "configured"]
    again = run_check(tmp_path, "--fail-on", "error")
    assert all(t["cached"] for t in again.report["targets"])
    assert again.report["findings"] == run.report["findings"]
    zero = tmp_path / "zero-config"  # the same file, no configuration: nothing fails
    write_tree(zero, {"pyproject.toml": "[tool.fxscope]\n"})
    shutil.copy(MODELS / "optional_args.py", zero / "optional_args.py")
    text = _text(zero)
    assert text.returncode == 0, text.stdout
    assert "2 classes need constructor arguments" in text.stdout and "FXS401" not in text.stdout


MERGED = {
    "pyproject.toml": """
        [tool.fxscope]

        [tool.fxscope.targets.small]
        factory = "factories:build_small"

        [tool.fxscope.targets.tiny]
        factory = "factories:build_tiny"

        [tool.fxscope.targets.wide]
        factory = "factories:build_wide"
        """,
    "models.py": """
        from torch import nn


        class Net(nn.Module):
            def __init__(self, width=4):
                super().__init__()
                assert width > 0, "width must be positive"  # MARK assert
                self.fc = nn.Linear(width, width)

            def forward(self, x):
                if x.sum() > 0:  # MARK if
                    return self.fc(x)
                return x
        """,
    "factories.py": """
        from models import Net


        def build_small():
            return Net(-1)  # MARK small


        def build_tiny():
            return Net(-2)  # MARK tiny


        def build_wide():
            return Net(8)
        """,
}


def test_a_finding_of_several_targets_keeps_each_call_chain_and_names_them_once(tmp_path: Path) -> None:
    write_tree(tmp_path, MERGED)
    run = run_check(tmp_path)
    _valid(run.report)
    (build,) = run.findings(code="FXS401")
    assert build["targets"] == ["small", "tiny"]
    assert (build["file"], build["line"]) == ("models.py", locate(tmp_path, "models.py", "MARK assert")[0])
    chain = [(r["file"], r["line"], r.get("message"), r.get("target")) for r in build["related"]]
    assert chain == [
        ("factories.py", locate(tmp_path, "factories.py", "MARK small")[0], "in build_small", "small"),
        ("factories.py", locate(tmp_path, "factories.py", "MARK tiny")[0], "in build_tiny", "tiny"),
    ]
    (branch,) = run.findings(code="FXS101")
    assert sorted(branch["targets"]) == ["models.py::Net", "wide"]
    assert [(s["path"], s["target"]) for s in branch["scopes"]] == [("", branch["targets"][0]),
                                                                  ("", branch["targets"][1])]
    text = _text(tmp_path).stdout
    in_lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("in:")]
    assert in_lines == [f"in: <root> (models.Net) [{', '.join(branch['targets'])}]"]
    assert f"via: factories.py:{chain[0][1]}:12 (in build_small) [small]" in text
    assert f"via: factories.py:{chain[1][1]}:12 (in build_tiny) [tiny]" in text
    assert "imported from here" not in text


@pytest.mark.slow
def test_the_model_corpus_as_a_workspace_keeps_the_report_invariants(tmp_path: Path) -> None:
    """Every corpus file, checked zero-config as a workspace (plus factories returning modules
    without a forward): a valid, fully described report in which no target failed silently; the
    classes that need arguments are FXS405, never FXS401."""
    root = tmp_path / "corpus"
    root.mkdir()
    for path in MODELS.glob("*.py"):
        if path.stem != "hf_wrappers":  # transformers' import in every job: covered elsewhere
            shutil.copy(path, root / path.name)
    (root / "pyproject.toml").write_text(
        "[tool.fxscope]\n\n"
        "[tool.fxscope.targets.kv-cache]\nfactory = \"cache_writes:KVCache\"\n\n"
        "[tool.fxscope.targets.layer-stack]\nfactory = \"no_forward:LayerStack\"\n")
    run = run_check(root, timeout=900)
    assert run.rc == 1
    _valid(run.report)
    targets = run.targets
    assert len(targets) > 100
    for tid in ("kv-cache", "layer-stack"):
        assert targets[tid]["status"] == "failed"
        assert [f["code"] for f in run.findings(tid)] == ["FXS107"]
    for tid in ("optional_args.py::Quantizer", "optional_args.py::MixedLinear"):
        assert [f["code"] for f in run.findings(tid)] == ["FXS405"], run.findings(tid)
    assert not run.findings(code="FXS401")
    for tid, target in targets.items():
        errors = [f for f in run.findings(tid) if f["severity"] == "error"]
        assert (target["status"] == "traced") == (not errors) or target["status"] == "skipped", (tid, target["status"])
