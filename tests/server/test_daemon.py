"""No false green through the daemon: stopping or losing it in the middle of a check (``daemon
stop``, SIGTERM, its socket or its cache directory removed) never gives a shorter report with exit
0, Ctrl-C on ``check --daemon`` cancels the check, a regular file at the socket path is handled,
and no process of the check remains."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine_support import DAEMON, cli_env, new_marker, processes_with_marker, run_fxscope, write_tree

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "faults"))
from procs import wait_gone  # noqa: E402

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

HEALTHY = """
    from torch import nn


    class Healthy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
    """


def slow_model(started: Path) -> str:
    """A model whose forward records its process id in ``started`` and then sleeps (not a fault:
    it finishes within the timeout when left alone)."""
    return f"""
        import os
        import time

        from torch import nn


        class Slow(nn.Module):
            def forward(self, x):
                with open({str(started)!r}, "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(100)
                return x
        """


def fxscope(root: Path, *args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return run_fxscope(root, *args, env=env, timeout=timeout)


def _as_in_a_terminal() -> None:
    """Ctrl-C reaches the check as it does in a terminal: a shell that runs the tests in the
    background (``make test &``) starts them with SIGINT ignored, which a child inherits."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_check(root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "fxscope", "check", ".", "--daemon", "--format", "json"],
                            cwd=root, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_as_in_a_terminal)


def wait_file(path: Path, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return int(path.read_text())


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    started = tmp_path / "slow.pid"
    # slow.py tells the test it started through a file outside the workspace, which the OS sandbox
    # refuses: this workspace runs unsandboxed (what it tests is the daemon's, not the sandbox's)
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\ntimeout = 120\nsandbox = false\n", "healthy.py": HEALTHY,
                      "slow.py": slow_model(started)})
    marker = new_marker()
    env = cli_env(marker)
    env["PYTHONPATH"] = str(DAEMON) + os.pathsep + env.get("PYTHONPATH", "")
    proc = fxscope(root, "daemon", "start", env=env)
    assert proc.returncode == 0, proc.stderr
    yield root, started, env, marker
    fxscope(root, "daemon", "stop", env=env)
    left = processes_with_marker(marker)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert left == [], f"processes of the check remain: {left}"


def daemon_pid(root: Path) -> int:
    return int((root / ".fxscope_cache" / "daemon.pid").read_text().split()[0])


def assert_interrupted_or_complete(proc: subprocess.Popen[str]) -> None:
    out, err = proc.communicate(timeout=180)
    if proc.returncode == 2:
        assert out.strip() == "" and err.strip(), (out, err)
        assert len(err.strip().splitlines()) == 1, err
        return
    report = json.loads(out)
    ids = {t["id"] for t in report["targets"]}
    assert ids == {"healthy.py::Healthy", "slow.py::Slow"}, report["summary"]
    assert proc.returncode in (0, 1)


def _stop(root, env):
    assert fxscope(root, "daemon", "stop", env=env).returncode == 0


def _term(root, env):
    os.kill(daemon_pid(root), signal.SIGTERM)


def _remove_socket(root, env):
    (root / ".fxscope_cache" / "daemon.sock").unlink()


def _remove_cache(root, env):
    shutil.rmtree(root / ".fxscope_cache")


@pytest.mark.parametrize("lose", [_stop, _term, _remove_socket, _remove_cache],
                         ids=["daemon-stop", "sigterm", "socket-removed", "cache-removed"])
def test_losing_the_daemon_mid_check_is_never_a_shorter_green_report(workspace, lose):
    root, started, env, marker = workspace
    pid = daemon_pid(root)
    check = start_check(root, env)
    slow = wait_file(started)
    lose(root, env)
    assert_interrupted_or_complete(check)
    assert wait_gone([pid, slow], timeout=30) == []


def test_ctrl_c_on_check_daemon_cancels_the_check(workspace):
    root, started, env, marker = workspace
    check = start_check(root, env)
    slow = wait_file(started)
    check.send_signal(signal.SIGINT)
    check.communicate(timeout=60)
    assert check.returncode != 0
    assert wait_gone([slow], timeout=30) == [], "the trace of a cancelled check must be killed"
    started.unlink()
    healthy_only = fxscope(root, "check", "healthy.py", "--daemon", "--format", "json", env=env)
    assert healthy_only.returncode == 0, healthy_only.stderr
    assert [t["id"] for t in json.loads(healthy_only.stdout)["targets"]] == ["healthy.py::Healthy"]


def test_regular_file_at_the_socket_path_is_replaced(tmp_path):
    root = tmp_path / "ws"
    write_tree(root, {"pyproject.toml": "[tool.fxscope]\n", "healthy.py": HEALTHY})
    marker = new_marker()
    env = cli_env(marker)
    cache = root / ".fxscope_cache"
    cache.mkdir()
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (cache / "daemon.sock").write_text("not a socket\n")
    try:
        proc = fxscope(root, "check", ".", "--daemon", "--format", "json", env=env)
        assert proc.returncode == 0, proc.stderr
        assert [t["id"] for t in json.loads(proc.stdout)["targets"]] == ["healthy.py::Healthy"]
    finally:
        fxscope(root, "daemon", "stop", env=env)
    assert wait_gone([p for p, _ in processes_with_marker(marker)], timeout=30) == []
