"""The OS sandbox around the model code ``fxscope check`` runs, through the real CLI.

Plain model modules (not scripts) that write into the repository, into $HOME and into /tmp and open
a TCP connection to a listener the test holds on 127.0.0.1, at import and while traced: with the
sandbox nothing lands and nothing connects, and each refusal is one FXS408 at the offending line;
a module that swallows the refusal traces; the second check is answered from the cache. With
``--no-sandbox`` the same code does write and connect (so the assertions can fail). Where Landlock is
missing (pretended through the sandbox module's testing variable) the worker falls back to a user
namespace without network, else runs unsandboxed, and the report says so.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from engine_support import cli_env, run_fxscope

from fxscope.worker.sandbox import PRETEND_MISSING_ENV, landlock_abi

pytestmark = pytest.mark.requires_torch

SCHEMA = Path(__file__).resolve().parents[2] / "daemon" / "fxscope" / "schemas" / "report.schema.json"

HEADER = "import os\nimport socket\nfrom pathlib import Path\n\nimport torch\nfrom torch import nn\n"

# Each module writes or connects at one known line (the 7th, after HEADER) when it is imported.
IMPORT_MODULES = {
    "writes_repo.py": HEADER + 'Path(__file__).with_name("written_at_import.txt").write_text("x")\n',
    "writes_home.py": HEADER + 'open(os.path.join(os.environ["HOME"], "written_at_import.txt"), "w").write("x")\n',
    "writes_tmp.py": HEADER + 'Path(os.environ["FXSCOPE_TEST_TMP_FILE"]).write_text("x")\n',
    "connects.py": HEADER + 'socket.create_connection(("127.0.0.1", int(os.environ["FXSCOPE_TEST_PORT"])), timeout=5)\n',
}
IMPORT_LINE = 7
CLASS = """

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)
"""

TRACED = HEADER + """

class WritesWhileTraced(nn.Module):
    def forward(self, x):
        Path(__file__).with_name("written_while_traced.txt").write_text("y")
        return x + 1


class ConnectsWhileTraced(nn.Module):
    def forward(self, x):
        socket.create_connection(("127.0.0.1", int(os.environ["FXSCOPE_TEST_PORT"])), timeout=5)
        return x * 2
"""
TRACED_WRITE_LINE, TRACED_CONNECT_LINE = 11, 17

SWALLOWS = HEADER + """
try:
    Path(__file__).with_name("swallowed.txt").write_text("x")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", int(os.environ["FXSCOPE_TEST_PORT"])), timeout=5).close()
except OSError:
    pass
""" + CLASS


# What plain Python allows and a sandboxed job needs too: temporary files (its own directory), a
# POSIX semaphore (/dev/shm), a library cache written at import (redirected into the job's directory).
ALLOWED = HEADER + """import multiprocessing
import tempfile

LOCK = multiprocessing.Lock()
with tempfile.NamedTemporaryFile("w") as fh:
    fh.write("scratch")
CACHE = Path(os.environ["XDG_CACHE_HOME"]) / "allowed"
CACHE.mkdir(parents=True, exist_ok=True)
(CACHE / "entry").write_text("cached")
""" + CLASS


@dataclass
class Workspace:
    root: Path
    home: Path
    tmp_file: Path
    listener: socket.socket
    env: dict[str, str]

    def written(self) -> list[Path]:
        """Every file the model code managed to write."""
        candidates = [self.root / "written_at_import.txt", self.root / "written_while_traced.txt",
                      self.root / "swallowed.txt", self.home / "written_at_import.txt", self.tmp_file]
        return [p for p in candidates if p.exists()]

    def connections(self) -> int:
        """Connections the listener received (accepted and closed here)."""
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def check(self, *args: str, env: dict[str, str] | None = None) -> tuple[dict, subprocess.CompletedProcess[str]]:
        proc = run_fxscope(self.root, "check", ".", "--format", "json", *args, env={**self.env, **(env or {})},
                           timeout=300)
        assert proc.returncode in (0, 1), proc.stderr[-4000:]
        report = json.loads(proc.stdout)
        jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(report)
        return report, proc


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / "pyproject.toml").write_text("[tool.fxscope]\n")
    for name, text in IMPORT_MODULES.items():
        (root / name).write_text(text + CLASS)
    (root / "traced.py").write_text(TRACED)
    (root / "swallows.py").write_text(SWALLOWS)
    (root / "allowed.py").write_text(ALLOWED)
    tmp_file = Path("/tmp") / f"fxscope-sandbox-test-{uuid.uuid4().hex}.txt"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    env = {**cli_env(), "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "FXSCOPE_TEST_TMP_FILE": str(tmp_file),
           "FXSCOPE_TEST_PORT": str(listener.getsockname()[1])}
    env.pop(PRETEND_MISSING_ENV, None)
    try:
        yield Workspace(root, home, tmp_file, listener, env)
    finally:
        listener.close()
        tmp_file.unlink(missing_ok=True)


def by_file(report: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in report["findings"]:
        out.setdefault(f["file"], []).append(f)
    return out


def statuses(report: dict) -> dict[str, str]:
    return {t["id"]: t["status"] for t in report["targets"]}


needs_landlock = pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock with TCP rules (ABI 4, Linux 6.7)")


@needs_landlock
def test_model_code_neither_writes_nor_connects_and_each_refusal_is_explained(workspace: Workspace) -> None:
    report, proc = workspace.check()
    assert workspace.written() == [], "no write of the model code may land"
    assert not (workspace.home / ".cache").exists(), "library caches go to the job's directory"
    assert workspace.connections() == 0, "no connection may arrive"
    assert report["sandbox"]["on"] is True and report["sandbox"]["kind"] == "landlock"

    findings = by_file(report)
    for name in IMPORT_MODULES:  # one finding per blocked import, at the offending line
        [finding] = findings[name]
        assert finding["code"] == "FXS408" and finding["line"] == IMPORT_LINE, finding
        assert "fxscope's sandbox blocked" in finding["message"] and "--no-sandbox" in finding["message"]
        assert "sandbox = false" in finding["message"]
        assert "PermissionError" not in finding["message"]
    assert str(workspace.root / "written_at_import.txt") in findings["writes_repo.py"][0]["message"]
    assert str(workspace.home / "written_at_import.txt") in findings["writes_home.py"][0]["message"]
    assert str(workspace.tmp_file) in findings["writes_tmp.py"][0]["message"]
    assert f"127.0.0.1:{workspace.listener.getsockname()[1]}" in findings["connects.py"][0]["message"]

    traced = {f["line"]: f for f in findings["traced.py"]}  # blocked while traced: FXS408 in forward
    assert {line: f["code"] for line, f in traced.items()} == {TRACED_WRITE_LINE: "FXS408",
                                                               TRACED_CONNECT_LINE: "FXS408"}
    assert "swallows.py" not in findings, "a module that swallows the refusal traces as in plain Python"
    assert statuses(report)["swallows.py::Model"] == "traced"
    assert statuses(report)["allowed.py::Model"] == "traced" and "allowed.py" not in findings
    assert "sandbox on (Landlock)" not in proc.stdout  # JSON: the header carries it

    text = run_fxscope(workspace.root, "check", ".", env=workspace.env, timeout=300)
    assert text.stdout.rstrip().splitlines()[-1].endswith("; sandbox on (Landlock)"), text.stdout[-500:]
    again, _ = workspace.check()
    assert again["summary"]["cached"] == again["summary"]["targets"] == report["summary"]["targets"]
    assert [(f["file"], f["line"], f["code"]) for f in again["findings"]] == \
        [(f["file"], f["line"], f["code"]) for f in report["findings"]]
    assert workspace.written() == [] and workspace.connections() == 0


def test_no_sandbox_lets_the_same_code_write_and_connect(workspace: Workspace) -> None:
    report, _ = workspace.check("--no-sandbox")
    assert report["sandbox"] == {"on": False, "kind": "none",
                                 "detail": "off by request (sandbox = false in [tool.fxscope], or --no-sandbox)"}
    assert set(workspace.written()) == {workspace.root / "written_at_import.txt",
                                        workspace.root / "written_while_traced.txt", workspace.root / "swallowed.txt",
                                        workspace.home / "written_at_import.txt", workspace.tmp_file}
    assert workspace.connections() >= 2  # at import (connects.py, swallows.py) and while traced
    assert not any(f["code"] == "FXS408" for f in report["findings"])
    assert statuses(report)["writes_repo.py::Model"] == "traced"


def test_sandbox_false_in_the_configuration_turns_it_off(workspace: Workspace) -> None:
    (workspace.root / "pyproject.toml").write_text("[tool.fxscope]\nsandbox = false\n")
    report, _ = workspace.check()
    assert report["sandbox"]["on"] is False and "off by request" in report["sandbox"]["detail"]
    assert workspace.root / "written_at_import.txt" in workspace.written()


def user_namespaces_work() -> bool:
    probe = ("import os, ctypes; libc = ctypes.CDLL(None, use_errno=True); "
             "raise SystemExit(0 if libc.unshare(0x10000000 | 0x40000000) == 0 else 1)")
    return subprocess.run([sys.executable, "-c", probe], timeout=30).returncode == 0


@pytest.mark.skipif(not user_namespaces_work(), reason="this system allows no user namespace")
def test_without_landlock_a_user_namespace_blocks_the_network_and_says_writes_are_not_contained(
        workspace: Workspace) -> None:
    report, _ = workspace.check(env={PRETEND_MISSING_ENV: "landlock"})
    sandbox = report["sandbox"]
    assert sandbox["on"] is True and sandbox["kind"] == "user-namespace"
    assert "writes are NOT contained" in sandbox["detail"]
    assert workspace.connections() == 0, "no connection may arrive"
    [finding] = by_file(report)["connects.py"]
    assert finding["code"] == "FXS408" and finding["line"] == IMPORT_LINE
    assert "user namespace without network" in finding["message"]
    assert statuses(report)["swallows.py::Model"] == "traced"
    assert workspace.root / "written_at_import.txt" in workspace.written()  # as the header says
    text = run_fxscope(workspace.root, "check", ".", env={**workspace.env, PRETEND_MISSING_ENV: "landlock"})
    assert "sandbox on (network only: user namespace; writes not contained)" in text.stdout.splitlines()[-1]


def test_without_landlock_or_user_namespaces_the_header_says_the_sandbox_is_off(workspace: Workspace) -> None:
    missing = {PRETEND_MISSING_ENV: "landlock,user-namespace"}
    report, _ = workspace.check(env=missing)
    assert report["sandbox"]["on"] is False and report["sandbox"]["kind"] == "none"
    assert "unsandboxed" in report["sandbox"]["detail"]
    assert workspace.connections() >= 1
    text = run_fxscope(workspace.root, "check", ".", env={**workspace.env, **missing})
    assert "; sandbox OFF (" in text.stdout.splitlines()[-1]
    github = run_fxscope(workspace.root, "check", ".", "--format", "github", env={**workspace.env, **missing})
    assert github.stdout.splitlines()[-1].startswith("::warning title=fxscope sandbox::sandbox OFF (")
    sarif = json.loads(run_fxscope(workspace.root, "check", ".", "--format", "sarif",
                                   env={**workspace.env, **missing}).stdout)
    assert {k: sarif["runs"][0]["properties"]["sandbox"][k] for k in ("on", "kind")} == {"on": False, "kind": "none"}


@needs_landlock
def test_a_preload_runs_sandboxed_in_the_worker_and_its_refusal_is_named(workspace: Workspace) -> None:
    (workspace.root / "pyproject.toml").write_text('[tool.fxscope]\npreload = ["writes_repo"]\n')
    for name in ("writes_home.py", "writes_tmp.py", "connects.py", "traced.py", "swallows.py", "allowed.py"):
        (workspace.root / name).unlink()
    proc = run_fxscope(workspace.root, "check", ".", env=workspace.env, timeout=300)
    assert workspace.written() == []
    assert "preload 'writes_repo' failed: fxscope's sandbox blocked writing" in proc.stderr, proc.stderr[-2000:]
    assert str(workspace.root / "written_at_import.txt") in proc.stderr


@needs_landlock
@pytest.mark.slow
def test_the_compile_analysis_runs_sandboxed_and_its_refusal_is_fxs408(workspace: Workspace) -> None:
    for name in [*IMPORT_MODULES, "traced.py", "swallows.py", "allowed.py"]:
        (workspace.root / name).unlink()
    (workspace.root / "compiled.py").write_text(HEADER + """

class Compiled(nn.Module):
    def forward(self, x):
        Path(__file__).with_name("written_while_compiled.txt").write_text("c")
        return x * 2


def build():
    return Compiled(), {}, {"x": torch.randn(2, 3)}
""")
    (workspace.root / "pyproject.toml").write_text(
        '[tool.fxscope]\nauto-targets = false\n\n[tool.fxscope.targets.compiled]\nfactory = "compiled:build"\n'
        'analyses = ["compile"]\n')
    report, _ = workspace.check()
    assert not (workspace.root / "written_while_compiled.txt").exists()
    refused = [f for f in report["findings"] if f["code"] == "FXS408"]
    assert [(f["file"], f["line"]) for f in refused] == [("compiled.py", 11)], report["findings"]
    assert not any(f["code"] == "FXS603" for f in report["findings"])


@needs_landlock
@pytest.mark.slow
def test_the_export_analysis_runs_sandboxed_and_its_refusal_is_fxs408(workspace: Workspace) -> None:
    for name in [*IMPORT_MODULES, "traced.py", "swallows.py", "allowed.py"]:
        (workspace.root / name).unlink()
    (workspace.root / "exported.py").write_text(HEADER + """

class Exported(nn.Module):
    def forward(self, x):
        Path(__file__).with_name("written_while_exported.txt").write_text("e")
        return x * 2


def build():
    return Exported(), {}, {"x": torch.randn(2, 3)}
""")
    (workspace.root / "pyproject.toml").write_text(
        '[tool.fxscope]\nauto-targets = false\n\n[tool.fxscope.targets.exported]\nfactory = "exported:build"\n'
        'analyses = ["export"]\n')
    report, _ = workspace.check()
    assert not (workspace.root / "written_while_exported.txt").exists()
    refused = [f for f in report["findings"] if f["code"] == "FXS408"]
    assert [(f["file"], f["line"]) for f in refused] == [("exported.py", 11)], report["findings"]
    assert "fxscope's sandbox blocked" in refused[0]["message"]
    assert not any(f["code"] == "FXS704" for f in report["findings"]), report["findings"]
    # without the sandbox the same export writes (so the assertions above can fail)
    report, _ = workspace.check("--no-sandbox", "--no-cache")
    assert (workspace.root / "written_while_exported.txt").exists()
    assert not any(f["code"] == "FXS408" for f in report["findings"]), report["findings"]


def _watch_until_report(workspace: Workspace, *args: str) -> str:
    """Run ``fxscope watch ARGS`` until it printed its first report; its output."""
    proc = subprocess.Popen([sys.executable, "-m", "fxscope", "watch", "--color", "never", *args],
                            cwd=workspace.root, env=workspace.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if line.startswith(("Found ", "All checks passed")):
                break
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert out, proc.stderr.read() if proc.stderr else ""
    return "".join(out)


@needs_landlock
def test_watch_and_the_daemon_take_no_sandbox_too(workspace: Workspace) -> None:
    for name in [*IMPORT_MODULES, "traced.py", "swallows.py", "allowed.py"]:
        if name != "writes_repo.py":
            (workspace.root / name).unlink()
    written = workspace.root / "written_at_import.txt"
    # watch: sandboxed by default (the write is refused and explained), written with --no-sandbox
    printed = _watch_until_report(workspace)
    assert not written.exists() and "FXS408" in printed, printed
    printed = _watch_until_report(workspace, "--no-sandbox", "--no-cache")
    assert written.exists() and "FXS408" not in printed, printed
    written.unlink()

    # the daemon: `daemon start --no-sandbox` runs the workspace's code unsandboxed for check --daemon
    def fxscope(*args: str) -> subprocess.CompletedProcess[str]:
        return run_fxscope(workspace.root, *args, env=workspace.env, timeout=300)

    try:
        started = fxscope("daemon", "start", "--no-sandbox")
        assert started.returncode == 0, started.stderr
        assert "sandbox off" in fxscope("daemon", "status").stdout
        via = fxscope("check", "--daemon", "--no-cache", "--format", "json")
        assert via.returncode in (0, 1), via.stderr
        assert written.exists()
        assert not any(f["code"] == "FXS408" for f in json.loads(via.stdout)["findings"])
        assert fxscope("daemon", "stop").returncode == 0
        written.unlink()
        # a daemon started sandboxed is not silently reused by a request for one without it
        assert fxscope("daemon", "start").returncode == 0
        assert "sandbox on" in fxscope("daemon", "status").stdout
        again = fxscope("daemon", "start", "--no-sandbox")
        assert again.returncode == 2 and "keeps the OS sandbox on" in again.stderr, again.stderr
        via = fxscope("check", "--daemon", "--no-cache", "--format", "json")
        assert not written.exists()
        assert any(f["code"] == "FXS408" for f in json.loads(via.stdout)["findings"]), via.stdout
    finally:
        fxscope("daemon", "stop")
