"""Hardening through the real CLI: escapes out of the workspace, file names that are not UTF-8, a
preload that never finishes, cache payloads of the wrong shape, control characters in messages."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from engine_support import check_command, cli_env, new_marker, processes_with_marker, write_tree

pytestmark = pytest.mark.requires_torch

HEALTHY = """
    import torch
    from torch import nn


    class Healthy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.fc(x))
    """


def cli(root: Path, *args: str, env: dict[str, str] | None = None, fmt: str = "json",
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    command = [*check_command(*args)]
    command[command.index("--format") + 1] = fmt
    return subprocess.run(command, cwd=root, env=env or cli_env(), capture_output=True, text=True,
                          timeout=timeout)


def report(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode in (0, 1), f"rc={proc.returncode}\nstderr: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def evil_module(marker: Path) -> str:
    """Source of a module whose import leaves ``marker`` behind."""
    return (f"open({str(marker)!r}, 'w').write('imported')\n"
            "from torch import nn\n\n\n"
            "class Evil(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return x\n")


def test_symlinked_file_out_of_the_workspace_is_never_discovered_nor_imported(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    outside.mkdir()
    marker = tmp_path / "imported.txt"
    (outside / "evil.py").write_text(evil_module(marker))
    (root / "evil.py").symlink_to(outside / "evil.py")
    (root / "inside_link.py").symlink_to(root / "healthy.py")  # a link inside stays a file
    result = report(cli(root))
    ids = {t["id"] for t in result["targets"]}
    assert "healthy.py::Healthy" in ids and "inside_link.py::Healthy" in ids
    assert not any(i.startswith("evil.py") for i in ids)
    assert not marker.exists()


def test_import_through_a_symlinked_directory_is_refused(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    marker = tmp_path / "imported.txt"
    write_tree(root, {
        "pyproject.toml": "[tool.fxscope]\n",
        "healthy.py": HEALTHY,
        "uses_lib.py": """
            from torch import nn

            import lib.evil  # MARK import


            class UsesLib(nn.Module):
                def forward(self, x):
                    return x
            """,
    })
    (outside / "lib").mkdir(parents=True)
    (outside / "lib" / "__init__.py").write_text("")
    (outside / "lib" / "evil.py").write_text(evil_module(marker))
    (root / "lib").symlink_to(outside / "lib", target_is_directory=True)
    result = report(cli(root))
    targets = {t["id"]: t for t in result["targets"]}
    assert targets["healthy.py::Healthy"]["status"] == "traced"
    assert targets["uses_lib.py::UsesLib"]["status"] == "error"
    (finding,) = [f for f in result["findings"] if f["target"] == "uses_lib.py::UsesLib"]
    assert finding["code"] == "FXS402" and "outside the workspace" in finding["message"]
    assert finding["file"] == "uses_lib.py" and finding["line"] == 3
    assert not marker.exists()


def test_file_names_that_are_not_utf8_do_not_break_a_check(tmp_path):
    root = tmp_path / "ws"
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    raw_root = os.fsencode(root)
    with open(raw_root + b"/bad\xff.py", "w") as fh:
        fh.write("from torch import nn\n\nclass Bad(nn.Module):\n    def forward(self, x):\n        return x\n")
    os.mkdir(raw_root + b"/dir\xfe")
    with open(raw_root + b"/dir\xfe/m.py", "w") as fh:
        fh.write("x = 1\n")
    for fmt in ("json", "text", "sarif", "github"):
        proc = cli(root, fmt=fmt)
        assert proc.returncode == 0, f"{fmt}: rc={proc.returncode}\n{proc.stderr[-3000:]}"
    assert [t["id"] for t in report(cli(root))["targets"]] == ["healthy.py::Healthy"]


def test_blocking_preload_is_one_config_error_and_leaves_no_process(tmp_path):
    root = tmp_path / "ws"
    write_tree(root, {
        "pyproject.toml": '[tool.fxscope]\npreload = ["slow_start"]\n',
        "slow_start.py": "import time\ntime.sleep(3600)\n",  # a top-level loop would make it a script, skipped
        "healthy.py": HEALTHY,
        "other.py": HEALTHY.replace("Healthy", "Other"),
    })
    marker = new_marker()
    env = {**cli_env(marker), "FXSCOPE_WORKER_STARTUP_TIMEOUT": "20"}
    proc = cli(root, env=env)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "importing preload 'slow_start'" in lines[0], proc.stderr
    assert "FXS404" not in proc.stdout + proc.stderr
    assert processes_with_marker(marker) == []


def _rewrite_payloads(root: Path, change) -> int:
    db = sqlite3.connect(root / ".fxscope_cache" / "results.sqlite3")
    rows = db.execute("SELECT rowid, payload FROM entries").fetchall()
    for rowid, payload in rows:
        db.execute("UPDATE entries SET payload = ? WHERE rowid = ?", (change(json.loads(payload)), rowid))
    db.commit()
    db.close()
    return len(rows)


@pytest.mark.parametrize("change", [
    lambda p: json.dumps([1, 2]),
    lambda p: json.dumps({**p, "findings": "oops"}),
    lambda p: json.dumps({**p, "findings": [{"code": "FXS101", "severity": "error", "message": 3,
                                             "file": "healthy.py", "line": 1}]}),
    lambda p: json.dumps({**p, "status": "bogus"}),
    lambda p: json.dumps({**p, "modules": [{"path": "", "type": None, "status": "traced", "params": 0}]}),
    lambda p: json.dumps({**p, "status": {"nested": 1}}),
    lambda p: json.dumps({**p, "nodes": "many"}),
    lambda p: json.dumps({**p, "nodes": None}),
    lambda p: json.dumps({**p, "modules": [{"path": "", "type": "m.M", "status": ["traced"], "params": 0}]}),
    lambda p: json.dumps({**p, "findings": [{"code": "FXS101", "severity": {"e": 1}, "message": "m",
                                             "file": "healthy.py", "line": 1}]}),
    lambda p: json.dumps({**p, "findings": None}),
], ids=["list", "findings-string", "message-int", "status", "module-type", "status-object", "nodes-string",
        "nodes-null", "module-status-list", "severity-object", "findings-null"])
def test_cache_payload_of_the_wrong_shape_is_a_miss(tmp_path, change):
    root = tmp_path / "ws"
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    first = report(cli(root))
    assert _rewrite_payloads(root, change) >= 1
    for fmt in ("text", "sarif", "github"):
        proc = cli(root, fmt=fmt)
        assert proc.returncode == 0, f"{fmt}: rc={proc.returncode}\n{proc.stderr[-3000:]}"
    again = report(cli(root))
    assert again["targets"][0]["status"] == first["targets"][0]["status"] == "traced"
    assert again["findings"] == first["findings"]


def test_cached_finding_naming_a_file_outside_the_workspace_shows_no_snippet(tmp_path):
    root = tmp_path / "ws"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    report(cli(root))

    def forge(payload: dict) -> str:
        finding = {"code": "FXS101", "severity": "error", "message": "forged", "file": str(secret),
                   "line": 1, "column": 1, "anchor": {"file": str(secret), "line": 1}}
        return json.dumps({**payload, "status": "failed", "findings": [finding]})

    _rewrite_payloads(root, forge)
    proc = cli(root, fmt="text")
    assert proc.returncode == 1, proc.stderr
    assert "forged" in proc.stdout and "TOP-SECRET-LINE" not in proc.stdout


def test_control_characters_from_model_messages_are_escaped(tmp_path):
    root = tmp_path / "ws"
    payload = "\\x1b]0;pwned\\x07\\x1b[2J\\n::error file=a.py,line=1::forged\\u2028tail"
    write_tree(root, {
        "pyproject.toml": "[tool.fxscope]\n",
        "healthy.py": HEALTHY,
        "loud.py": f"""
            from torch import nn


            class Loud(nn.Module):
                def __init__(self):
                    super().__init__()
                    raise RuntimeError("{payload}")

                def forward(self, x):
                    return x
            """,
    })
    text = cli(root, fmt="text")
    assert text.returncode == 1, text.stderr
    assert "\x1b" not in text.stdout and "\x07" not in text.stdout and "\u2028" not in text.stdout
    assert not any(line.startswith("::") for line in text.stdout.splitlines())
    assert "\\x1b]0;pwned\\x07" in text.stdout and "::error file=a.py" in text.stdout
    github = cli(root, fmt="github")
    lines = github.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("::error file=loud.py")
    assert "\x1b" not in github.stdout and "\u2028" not in github.stdout
    data = report(cli(root))
    (finding,) = [f for f in data["findings"] if f["target"] == "loud.py::Loud"]
    assert "\x1b]0;pwned\x07" in finding["message"]  # JSON keeps the message exact


def test_cache_dir_that_exists_is_never_rewritten_and_results_are_private(tmp_path):
    root = tmp_path / "ws"
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / ".gitignore").write_text("keep-me\n")
    shared.chmod(0o775)
    write_tree(root, {"pyproject.toml": f"[tool.fxscope]\ncache-dir = {str(shared)!r}\n",
                      "healthy.py": HEALTHY})
    first = report(cli(root))
    assert first["targets"][0]["status"] == "traced"
    assert (shared / ".gitignore").read_text() == "keep-me\n"
    assert shared.stat().st_mode & 0o777 == 0o775
    owned = shared / "fxscope"
    assert (owned / "results.sqlite3").is_file() and (owned / "CACHEDIR.TAG").is_file()
    for name in ("results.sqlite3", "worker.log"):
        assert (owned / name).stat().st_mode & 0o077 == 0, name
    assert report(cli(root))["targets"][0]["cached"] is True

    default = tmp_path / "ws2"
    write_tree(default, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    report(cli(default))
    cache = default / ".fxscope_cache"
    assert (cache / "results.sqlite3").is_file() and (cache / ".gitignore").read_text() == "*\n"
    assert (cache / "results.sqlite3").stat().st_mode & 0o077 == 0


def test_pseudo_files_are_never_finding_locations_and_factories_fall_back_to_pyproject(tmp_path):
    root = tmp_path / "ws"
    write_tree(root, {
        "pyproject.toml": """
            [tool.fxscope]
            memory-limit-mb = 2048

            [tool.fxscope.targets.first]
            factory = "json:loads"

            [tool.fxscope.targets.second]
            factory = "json:dumps"
            """,
        "evals.py": """
            from torch import nn


            class Evals(nn.Module):
                def forward(self, x):
                    return eval("int(x.sum())", {"x": x})  # MARK eval
            """,
    })
    data = report(cli(root))
    (evals,) = [f for f in data["findings"] if f["target"] == "evals.py::Evals"]
    assert evals["file"] == "evals.py" and evals["line"] == 6, evals
    assert not any("<" in f["file"] for f in data["findings"])
    factory = {t: [f for f in data["findings"] if t in (f.get("targets") or [f["target"]])]
               for t in ("first", "second")}
    assert [f["line"] for f in factory["first"]] == [4] and [f["line"] for f in factory["second"]] == [7]
    assert all(f["file"] == "pyproject.toml" for fs in factory.values() for f in fs)
    assert "loads" in factory["first"][0]["message"] and "dumps" in factory["second"][0]["message"]


@pytest.mark.parametrize("value", ["0", "100", "99999999999", '"lots"'])
def test_memory_limit_out_of_range_is_one_config_error(tmp_path, value):
    root = tmp_path / "ws"
    write_tree(root, {"pyproject.toml": f"[tool.fxscope]\nmemory-limit-mb = {value}\n",
                      "healthy.py": HEALTHY})
    proc = cli(root)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "memory-limit-mb" in line and "pyproject.toml" in line
