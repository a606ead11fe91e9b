"""Emacs: clients/emacs/fxscope.el byte-compiles cleanly, and the README's two init snippets in a
real ``emacs --batch`` show fxscope's findings on a copy of examples/: through eglot and the real
``fxscope serve``, and through the flymake backend and the real ``fxscope check --daemon``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from editor_support import (CLIENTS, copy_examples, editor_env, fxscope_executable,
                            readme_blocks, require_server, user_snippet)

EMACS = shutil.which("emacs")
DRIVER = Path(__file__).with_name("emacs_driver.el")
FXSCOPE_EL = CLIENTS / "emacs" / "fxscope.el"
WAIT_S = 180
# What Emacs does at start-up before the user's init file: activate installed packages (eglot
# from ELPA or the distribution on Emacs 28; built in from Emacs 29).
STARTUP = ["--batch", "-q", "--eval", "(when (fboundp 'package-activate-all) (package-activate-all))"]

pytestmark = [pytest.mark.requires_torch, pytest.mark.editor,
              pytest.mark.skipif(EMACS is None, reason="emacs not installed (apt-get install emacs-nox elpa-eglot)")]


def _emacs(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EMACS, *STARTUP, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _has_eglot(tmp_path: Path) -> bool:
    proc = _emacs(["--eval", "(kill-emacs (if (require 'eglot nil t) 0 3))"],
                  editor_env(tmp_path / "home"), tmp_path, timeout=120)
    return proc.returncode == 0


def _run_snippet(tmp_path: Path, init: str, model: Path, backends: str = "", wait_for: str = "") -> dict:
    init_file = tmp_path / "init.el"
    init_file.write_text(init, encoding="utf-8")
    out = tmp_path / "result.json"
    env = editor_env(tmp_path / "home", FXSCOPE_TEST_OUT=str(out), FXSCOPE_TEST_FILE=str(model),
                     FXSCOPE_TEST_TIMEOUT=str(WAIT_S), FXSCOPE_TEST_BACKENDS=backends,
                     FXSCOPE_TEST_WAIT_FOR=wait_for)
    proc = _emacs(["-l", str(init_file), "-l", str(DRIVER)], env, tmp_path)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0 and "error" not in result, (result, proc.stderr[-3000:])
    return result


def _fxs101(model: Path) -> tuple[int, int, int]:
    """1-based line and 0-based column range of `mask.any()` in untraceable.py."""
    lines = model.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if "mask.any()" in text)
    col = lines[line].index("mask.any()")
    return line + 1, col, col + len("mask.any()")


def test_fxscope_el_byte_compiles_without_warnings(tmp_path: Path) -> None:
    copy = tmp_path / "fxscope.el"
    shutil.copy(FXSCOPE_EL, copy)
    proc = _emacs(["--eval", "(setq byte-compile-error-on-warn t)", "-f", "batch-byte-compile",
                   str(copy)], editor_env(tmp_path / "home"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "fxscope.elc").exists()
    assert "Warning" not in proc.stderr, proc.stderr
    doc = _emacs(["-l", str(copy), "--eval", f'(checkdoc-file "{copy}")'],
                 editor_env(tmp_path / "home"), tmp_path)
    assert doc.returncode == 0 and "Warning" not in doc.stderr, doc.stderr


def test_eglot_snippet_shows_diagnostics_from_the_server(tmp_path: Path) -> None:
    if not _has_eglot(tmp_path):
        pytest.skip("eglot not installed (apt-get install elpa-eglot, or Emacs 29+)")
    require_server()
    ws = copy_examples(tmp_path)
    model = ws / "zoo" / "untraceable.py"
    eglot_setup, _flymake_setup = readme_blocks("Emacs", "elisp")
    line, col, end_col = _fxs101(model)
    # the file's other targets publish their own findings: wait for this one, not the first
    result = _run_snippet(tmp_path, user_snippet(eglot_setup), model, wait_for=f"FXS101:{line}")

    assert result["major_mode"] == "python-mode"
    assert result["eglot_command"][:2] == ["fxscope", "serve"]
    # The project root is the directory with pyproject.toml (the copy is not a git checkout).
    assert result["eglot_server"].startswith("EGLOT (ws/"), result["eglot_server"]
    found = [d for d in result["diagnostics"]
             if d["line"] == line and "FXS101" in d["text"] and d["backend"] == "eglot-flymake-backend"]
    assert found, result["diagnostics"]
    assert (found[0]["column"], found[0]["end_column"]) == (col, end_col)
    assert found[0]["type"] == "eglot-error"


def test_flymake_snippet_reports_check_findings(tmp_path: Path) -> None:
    ws = copy_examples(tmp_path)
    model = ws / "zoo" / "untraceable.py"
    _eglot_setup, flymake_setup = readme_blocks("Emacs", "elisp")
    try:
        result = _run_snippet(tmp_path, user_snippet(flymake_setup), model)
    finally:
        subprocess.run([fxscope_executable(), "daemon", "stop", "--root", str(ws)],
                       capture_output=True, timeout=60)
    assert "fxscope-flymake" in result["running_backends"]
    line, col, end_col = _fxs101(model)
    ours = [d for d in result["diagnostics"] if d["backend"] == "fxscope-flymake"]
    # Exactly the findings `fxscope check` locates in this file: FXS101 (twice) and FXS104.
    report = json.loads(subprocess.run(
        [fxscope_executable(), "check", "--format", "json", "--fail-on", "never", "--root", str(ws)],
        capture_output=True, text=True, timeout=300, cwd=ws).stdout)
    expected = sorted((f["line"], f["column"] - 1, f["code"]) for f in report["findings"]
                      if f["file"] == "zoo/untraceable.py")
    assert sorted((d["line"], d["column"], d["text"].split()[0]) for d in ours) == expected
    first = next(d for d in ours if d["line"] == line)
    assert (first["column"], first["end_column"], first["type"]) == (col, end_col, ":error")
    assert "[hint: " in first["text"]


# A user's own eglot set-up for some Python server (here `fxscope serve` itself, registered by
# hand, the one Python server this environment has): eglot 1.9 replaces the buffer's flymake
# backends with its own, and fxscope-flymake-mode must survive that.
OTHER_SERVER_IN_EGLOT = """
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '((python-mode python-ts-mode) "fxscope" "serve")))
(add-hook 'python-mode-hook #'eglot-ensure)
"""


def test_flymake_backend_runs_next_to_another_eglot_server(tmp_path: Path) -> None:
    if not _has_eglot(tmp_path):
        pytest.skip("eglot not installed (apt-get install elpa-eglot, or Emacs 29+)")
    require_server()
    ws = copy_examples(tmp_path)
    # A repository, as such projects are: project.el (hence eglot) roots it at its top.
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=60)
    model = ws / "zoo" / "untraceable.py"
    _eglot_setup, flymake_setup = readme_blocks("Emacs", "elisp")
    line, _col, _end_col = _fxs101(model)
    try:
        result = _run_snippet(tmp_path, user_snippet(flymake_setup) + OTHER_SERVER_IN_EGLOT, model,
                              backends="eglot-flymake-backend,fxscope-flymake", wait_for=f"FXS101:{line}")
    finally:
        subprocess.run([fxscope_executable(), "daemon", "stop", "--root", str(ws)],
                       capture_output=True, timeout=60)
    assert result["eglot_command"][:2] == ["fxscope", "serve"]
    assert {"eglot-flymake-backend", "fxscope-flymake"} <= set(result["running_backends"])
    for backend in ("eglot-flymake-backend", "fxscope-flymake"):
        assert any(d["backend"] == backend and d["line"] == line and "FXS101" in d["text"]
                   for d in result["diagnostics"]), (backend, result["diagnostics"])
