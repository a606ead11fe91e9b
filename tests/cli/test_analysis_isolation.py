"""Every analysis runs on a model of its own: what torch.compile's runs of a model change in it
(lazy initialisation, a lazily copied target network) never reaches the export analysis after it.

Through the real CLI, for the models of tests/models/pt2/lazy_state.py: the export verdict with
``analyses = ["fx", "compile", "export"]`` is the one with ``analyses = ["export"]`` alone, and
both are what ``torch.export.export`` says of a freshly built model in a fresh process."""

from __future__ import annotations

from pathlib import Path

import pytest

from pt2_support import check, model_names, truth, workspace

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODULE = "lazy_state"


def test_export_after_compile_agrees_with_export_alone_and_with_torch(tmp_path: Path) -> None:
    together = check(workspace(tmp_path / "all", MODULE, ["fx", "compile", "export"]))
    alone = check(workspace(tmp_path / "export", MODULE, ["export"]))
    answer, _ = truth(tmp_path / "export", "export", MODULE)
    torch_says = answer["models"]
    names = model_names(MODULE)
    assert names == ["LazyHead", "LazyTargetNetwork"]
    for name in names:
        assert "compile" in together.targets[name]["analyses"], together.targets[name]  # compile did run first
        verdict = together.targets[name]["analyses"]["export"]["ok"]
        assert verdict == alone.targets[name]["analyses"]["export"]["ok"], name
        assert verdict is torch_says[name]["exported"], (name, torch_says[name])
    # the corpus is one that tells: freshly built, torch.export fails on each model
    assert not any(torch_says[name]["exported"] for name in names)
