"""The real ``fxscope`` command line, run as a subprocess over small workspaces written to tmp.

One module-scoped workspace (7 targets) is checked cold once; most tests then read it from the
cache. Tests that edit files or need another configuration get their own small workspace.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pty
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from engine_support import assert_schema_describes

from engine_support import cli_env, run_fxscope

pytestmark = pytest.mark.requires_torch

REPO = Path(__file__).resolve().parents[2]
PACKAGE_PARENT = REPO / "daemon"
SCHEMAS = PACKAGE_PARENT / "fxscope" / "schemas"

HEADER = "import torch\nfrom torch import nn\n\n\n"

CLEAN = HEADER + """\
class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).relu()
"""
CLEAN_RETURN_LINE = 11

BRANCHY = HEADER + """\
class Branch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x
"""
BRANCH_LINE, BRANCH_COL = 7, 12

SPARE = HEADER + """\
class Spare(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.spare = nn.Linear(4, 4)

    def forward(self, x):
        return self.used(x)
"""

DEAD = HEADER + """\
class DeadInplace(nn.Module):
    def forward(self, x):
        y = x * 2
        y.relu_()
        return y
"""

QUIET = HEADER + """\
class Quiet(nn.Module):
    def forward(self, x):
        if x.mean() > 0:  # fxscope: ignore[FXS101]
            return x
        return x + 1
"""

EXTRA = HEADER + """\
class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


class Scale(nn.Module):
    def forward(self, x):
        return x * 3
"""

NEW_PROBLEM = HEADER + """\
class Loop(nn.Module):
    def forward(self, x):
        while x.abs().max() > 1:
            x = x / 2
        return x
"""

MAIN_FILES = {
    "clean.py": CLEAN, "branchy.py": BRANCHY, "spare.py": SPARE, "dead.py": DEAD,
    "quiet.py": QUIET, "extra.py": EXTRA,
}
MAIN_TARGETS = {
    "branchy.py::Branch", "clean.py::Clean", "dead.py::DeadInplace", "extra.py::Mlp",
    "extra.py::Scale", "quiet.py::Quiet", "spare.py::Spare",
}


def _env(**extra: str) -> dict[str, str]:
    return {**cli_env(), **extra}


def fxscope(cwd: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m fxscope ARGS`` in ``cwd`` with stdout and stderr captured (not TTYs)."""
    return run_fxscope(cwd, *args, env=env, timeout=timeout)


def _write(root: Path, files: dict[str, str], pyproject: str = "[tool.fxscope]\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _json(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def _validate(doc: dict, schema_file: str) -> None:
    """``doc`` is valid against the shipped schema; a report is also fully described by it."""
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    cls(schema).validate(doc)
    if schema_file == "report.schema.json":
        assert_schema_describes(doc, schema)


def _key(finding: dict) -> tuple:
    return (finding["code"], finding["file"], finding["line"], finding.get("column"), finding["target"])


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared workspace, checked once (cold) so that later checks come from the cache."""
    return _write(tmp_path_factory.mktemp("cli") / "ws", MAIN_FILES)


@pytest.fixture(scope="module")
def ws_report(ws: Path) -> dict:
    """The json report of the shared workspace; its cold run also checks that the progress bar
    stays silent when stderr is not a terminal."""
    proc = fxscope(ws, "check", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""  # no progress bar, no warnings
    return json.loads(proc.stdout)


# ------------------------------------------------------------------------------------ formats


def test_json_format_is_valid_and_complete(ws: Path, ws_report: dict) -> None:
    _validate(ws_report, "report.schema.json")
    assert {t["id"] for t in ws_report["targets"]} == MAIN_TARGETS
    codes = sorted(f["code"] for f in ws_report["findings"])
    assert codes == ["FXS101", "FXS201", "FXS301"]  # quiet.py's FXS101 is suppressed
    assert ws_report["summary"]["suppressed"] == 1
    branch = next(f for f in ws_report["findings"] if f["code"] == "FXS101")
    assert (branch["file"], branch["line"], branch["column"]) == ("branchy.py", BRANCH_LINE, BRANCH_COL)
    severities = {f["code"]: f["severity"] for f in ws_report["findings"]}
    assert severities == {"FXS101": "error", "FXS201": "warning", "FXS301": "hint"}
    assert all("graphs" not in t for t in ws_report["targets"])


def test_sarif_format_is_valid(ws: Path, ws_report: dict) -> None:
    proc = fxscope(ws, "check", "--format", "sarif")
    assert proc.returncode == 1, proc.stderr
    doc = _json(proc)
    _validate(doc, "sarif-schema-2.1.0.json")
    results = doc["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["FXS101", "FXS201", "FXS301"]
    branch = next(r for r in results if r["ruleId"] == "FXS101")
    loc = branch["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "branchy.py", "uriBaseId": "%SRCROOT%"}
    assert (loc["region"]["startLine"], loc["region"]["startColumn"]) == (BRANCH_LINE, BRANCH_COL)


def test_text_format_shows_location_and_caret(ws: Path, ws_report: dict) -> None:
    proc = fxscope(ws, "check")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith(f"branchy.py:{BRANCH_LINE}:{BRANCH_COL}: FXS101 "))
    assert lines[head + 1].strip() == f"{BRANCH_LINE} |         if x.sum() > 0:"
    caret = lines[head + 2]
    assert caret.strip().startswith("|") and caret.rstrip().endswith("^" * len("x.sum() > 0"))
    assert caret.index("^") == lines[head + 1].index("x.sum()")
    assert "spare.py:9:9: FXS301" in proc.stdout and "dead.py:8:9: FXS201" in proc.stdout
    assert lines[-1].startswith("Found 1 error, 1 warning, 1 hint in 3 of 7 targets")
    assert "\x1b[" not in proc.stdout  # --color auto and stdout is a pipe


def test_github_format_prints_workflow_commands(ws: Path, ws_report: dict) -> None:
    proc = fxscope(ws, "check", "--format", "github")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"::error file=branchy.py,line={BRANCH_LINE},col={BRANCH_COL},")
    assert any(ln.startswith("::warning file=dead.py,line=8,") for ln in lines)
    assert any(ln.startswith("::notice file=spare.py,line=9,") for ln in lines)


def test_graphs_in_json(ws: Path, ws_report: dict) -> None:
    doc = _json(fxscope(ws, "check", "--format", "json", "--graphs", "clean.py", "extra.py"))
    _validate(doc, "report.schema.json")
    assert {t["id"] for t in doc["targets"]} == {"clean.py::Clean", "extra.py::Mlp", "extra.py::Scale"}
    clean = next(t for t in doc["targets"] if t["id"] == "clean.py::Clean")
    nodes = clean["graphs"][0]["nodes"]
    proj = next(n for n in nodes if n["op"] == "call_module")
    assert (proj["scope"], proj["file"], proj["line"]) == ("proj", "clean.py", CLEAN_RETURN_LINE)


# ------------------------------------------------------------------------------------ exit codes


def test_exit_codes_fail_on(ws: Path, ws_report: dict) -> None:
    assert fxscope(ws, "check", "--fail-on", "never").returncode == 0
    assert fxscope(ws, "check", "--select", "FXS2,FXS3").returncode == 0  # below --fail-on error
    assert fxscope(ws, "check", "--select", "FXS2,FXS3", "--fail-on", "warning").returncode == 1
    hint_only = fxscope(ws, "check", "spare.py", "--format", "json")
    assert hint_only.returncode == 0
    assert [f["code"] for f in _json(hint_only)["findings"]] == ["FXS301"]
    assert fxscope(ws, "check", "spare.py", "--fail-on", "info").returncode == 0
    assert fxscope(ws, "check", "spare.py", "--fail-on", "hint").returncode == 1


def test_clean_workspace_exits_zero(tmp_path: Path) -> None:
    root = _write(tmp_path / "clean", {"clean.py": CLEAN, "extra.py": EXTRA})
    proc = fxscope(root, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("All checks passed: 3 targets traced")
    assert fxscope(root, "check", "--format", "github").stdout == ""


@pytest.mark.parametrize("args", [
    ["--format", "xml"], ["--shard", "4/3"], ["--shard", "x"], ["--fail-on", "fatal"], ["--bogus"],
])
def test_bad_option_exits_2(ws: Path, args: list[str]) -> None:
    proc = fxscope(ws, "check", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "usage: fxscope" in proc.stderr


def test_bad_selector_exits_2_before_checking(tmp_path: Path) -> None:
    root = _write(tmp_path / "w", {"branchy.py": BRANCHY})
    proc = fxscope(root, "check", "--select", "FXS9")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "fxscope: error: unknown code or prefix: 'FXS9' (expected e.g. FXS101, FXS1 or ALL)"
    assert not (root / ".fxscope_cache" / "worker.log").exists()  # no worker was started
    assert fxscope(root, "check", "--update-baseline").returncode == 2


@pytest.mark.parametrize("pyproject", [
    "[tool.fxscope\ninclude = [\n",                        # invalid TOML
    "[tool.fxscope]\ntimout = 3\n",                         # unknown key
    "[tool.fxscope]\ntimeout = 'soon'\n",                   # wrong type
], ids=["syntax", "unknown-key", "type"])
@pytest.mark.parametrize("command", [["check"], ["graph", "Branch"], ["daemon", "start"]])
def test_bad_config_exits_2_with_one_line(tmp_path: Path, pyproject: str, command: list[str]) -> None:
    root = _write(tmp_path / "w", {"branchy.py": BRANCHY}, pyproject)
    proc = fxscope(root, *command)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fxscope: error: ") and "pyproject.toml" in lines[0]
    if "timout" in pyproject:
        assert "timout" in lines[0] and "did you mean 'timeout'" in lines[0]
    assert not (root / ".fxscope_cache" / "daemon.sock").exists()
    if command == ["check"]:  # stopping or asking about the daemon still works
        assert fxscope(root, "daemon", "status").returncode == 1
        assert fxscope(root, "daemon", "stop").returncode == 0


# ------------------------------------------------------------------------------------ filters


def test_select_and_ignore(ws: Path, ws_report: dict) -> None:
    def codes(*args: str) -> list[str]:
        return sorted(f["code"] for f in _json(fxscope(ws, "check", "--format", "json", *args))["findings"])

    assert codes("--select", "FXS2") == ["FXS201"]
    assert codes("--select", "FXS1", "--select", "FXS3") == ["FXS101", "FXS301"]
    assert codes("--ignore", "FXS2,FXS301") == ["FXS101"]
    assert codes("--select", "FXS1", "--ignore", "FXS101") == []
    assert codes("--select", "fxs201") == ["FXS201"]  # case-insensitive


def test_inline_suppression(tmp_path: Path, ws: Path, ws_report: dict) -> None:
    quiet = next(t for t in ws_report["targets"] if t["id"] == "quiet.py::Quiet")
    assert quiet["status"] != "traced"  # the suppressed problem is real
    assert not any(f["file"] == "quiet.py" for f in ws_report["findings"])
    # Without the comment, the finding is reported (in a copy: the shared workspace stays as is).
    root = _write(tmp_path / "w", {"quiet.py": QUIET.replace("  # fxscope: ignore[FXS101]", "")})
    doc = _json(fxscope(root, "check", "--format", "json"))
    assert [(f["code"], f["line"]) for f in doc["findings"]] == [("FXS101", 7)]
    # A comment for another code does not suppress it.
    (root / "quiet.py").write_text(QUIET.replace("ignore[FXS101]", "ignore[FXS104]"))
    assert fxscope(root, "check").returncode == 1


# ------------------------------------------------------------------------------------ baseline


def test_baseline(tmp_path: Path) -> None:
    root = _write(tmp_path / "w", {"branchy.py": BRANCHY, "spare.py": SPARE, "dead.py": DEAD})
    update = fxscope(root, "check", "--baseline", "b.json", "--update-baseline")
    assert update.returncode == 0, update.stderr
    assert update.stdout == ""
    assert "wrote 3 findings to b.json" in update.stderr
    doc = json.loads((root / "b.json").read_text())
    assert doc["version"] == 1 and len(doc["findings"]) == 3

    again = fxscope(root, "check", "--baseline", "b.json")
    assert again.returncode == 0, again.stdout
    assert "(3 in baseline)" in again.stdout

    # Lines inserted above the baselined finding: still baselined.
    (root / "branchy.py").write_text("# a comment\n\n\n" + BRANCHY)
    moved = fxscope(root, "check", "--baseline", "b.json", "--format", "json", "--fail-on", "hint")
    assert moved.returncode == 0, moved.stdout
    assert _json(moved)["summary"]["baselined"] == 3
    lines = [f["line"] for f in _json(fxscope(root, "check", "--format", "json"))["findings"]
             if f["file"] == "branchy.py"]
    assert lines == [BRANCH_LINE + 3]  # it did move

    # A new problem fails, and is the only finding reported.
    (root / "loop.py").write_text(NEW_PROBLEM)
    new = fxscope(root, "check", "--baseline", "b.json", "--format", "json")
    assert new.returncode == 1
    assert [(f["code"], f["file"]) for f in _json(new)["findings"]] == [("FXS101", "loop.py")]

    broken = root / "broken.json"
    broken.write_text("{not json")
    proc = fxscope(root, "check", "--baseline", "broken.json")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


SHARED_BLOCK = HEADER + """\
class Block(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) + 1
"""


def test_baseline_holds_in_every_shard(tmp_path: Path) -> None:
    """A problem in a block used by two targets is one finding in a full run, and is reported by
    each shard under the target that shard checked: the baseline must match it either way."""
    root = _write(tmp_path / "w", {"m.py": SHARED_BLOCK})
    assert fxscope(root, "check", "--baseline", "b.json", "--update-baseline").returncode == 0
    for shard in ("1/2", "2/2"):
        proc = fxscope(root, "check", "--shard", shard, "--baseline", "b.json", "--format", "json")
        assert proc.returncode == 0, proc.stdout
        assert _json(proc)["summary"]["baselined"] == 1
    sarif = [_json(fxscope(root, "check", "--shard", s, "--format", "sarif"))["runs"][0]["results"]
             for s in ("1/2", "2/2")]
    assert sarif[0][0]["partialFingerprints"] == sarif[1][0]["partialFingerprints"]


# ------------------------------------------------------------------------------------ shards


def test_shards_partition_the_targets(ws: Path, ws_report: dict) -> None:
    shards = []
    for i in (1, 2, 3):
        doc = _json(fxscope(ws, "check", "--format", "json", "--shard", f"{i}/3", "--fail-on", "never"))
        _validate(doc, "report.schema.json")
        shards.append({t["id"] for t in doc["targets"]})
    assert set().union(*shards) == MAIN_TARGETS
    assert sum(len(s) for s in shards) == len(MAIN_TARGETS)  # no overlap
    assert all(shards)


# ------------------------------------------------------------------------------------ graph


def test_graph_command(ws: Path, ws_report: dict) -> None:
    text = fxscope(ws, "graph", "clean.py::Clean")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == "graph clean.py::Clean (root)"
    assert any("call_module" in ln and "[proj torch.nn.modules.linear.Linear]" in ln
               and ln.endswith(f"clean.py:{CLEAN_RETURN_LINE}") for ln in text.stdout.splitlines())

    dot = fxscope(ws, "graph", "Clean", "--format", "dot")  # a unique class name is enough
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout.startswith("digraph fxscope {") and '"g0_x" -> "g0_proj";' in dot.stdout

    doc = _json(fxscope(ws, "graph", "Mlp", "--format", "json"))
    assert doc["target"] == "extra.py::Mlp"
    nodes = doc["graphs"][0]["nodes"]
    assert [n["scope"] for n in nodes if n["op"] == "call_module"] == ["fc1", "fc2"]
    assert all(n["line"] == 12 and n["file"] == "extra.py" for n in nodes if n["op"] == "call_module")


def test_graph_unknown_target_exits_2(ws: Path, ws_report: dict) -> None:
    proc = fxscope(ws, "graph", "NoSuchModel")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "fxscope: error: no target 'NoSuchModel' (see `fxscope check --format json` for target ids)"
    ]


# ------------------------------------------------------------------------------------ terminals


def _run_in_pty(cwd: Path, args: list[str], env: dict[str, str], *, stream: str) -> tuple[int, str, str]:
    """Run the CLI with ``stream`` ("stdout" or "stderr") attached to a pseudo-terminal."""
    master, slave = pty.openpty()
    kwargs = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: slave}
    proc = subprocess.Popen([sys.executable, "-m", "fxscope", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, **kwargs)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError as exc:  # EIO: the child closed the terminal
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out, err = proc.communicate(timeout=120)
    tty = b"".join(chunks).decode("utf-8", "replace")
    other = (out if stream == "stderr" else err).decode("utf-8", "replace")
    return proc.returncode, tty, other


def test_colour_follows_tty_and_no_color(ws: Path, ws_report: dict) -> None:
    args = ["check", "--color", "auto"]
    assert "\x1b[" not in fxscope(ws, *args).stdout  # not a TTY
    assert "\x1b[" in fxscope(ws, "check", "--color", "always").stdout
    rc, tty, _ = _run_in_pty(ws, args, _env(), stream="stdout")
    assert rc == 1 and "\x1b[" in tty  # a TTY: coloured
    rc, tty, _ = _run_in_pty(ws, args, _env(NO_COLOR="1"), stream="stdout")
    assert rc == 1 and "\x1b[" not in tty and "FXS101" in tty
    assert "\x1b[" not in fxscope(ws, "check", "--color", "never").stdout


def test_progress_bar_only_on_a_tty(ws: Path, ws_report: dict) -> None:
    piped = fxscope(ws, "check", "--format", "json", "--no-cache")
    assert piped.returncode == 1 and piped.stderr == ""
    rc, tty, out = _run_in_pty(ws, ["check", "--format", "json"], _env(COLUMNS="80"), stream="stderr")
    assert rc == 1 and json.loads(out)["summary"]["targets"] == 7
    assert "7/7" in tty and "\r" in tty  # drawn, then erased


# ------------------------------------------------------------------------------------ daemon


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b") ", 1)[1][:1] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _wait_exit(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _daemon_pid(root: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int((root / ".fxscope_cache" / "daemon.pid").read_text().strip())
    return None


@contextlib.contextmanager
def _stopping_daemon(root: Path) -> Iterator[None]:
    """Make sure no daemon of ``root`` outlives the block."""
    try:
        yield
    finally:
        pid = _daemon_pid(root)
        fxscope(root, "daemon", "stop", timeout=30)
        if pid is not None and not _wait_exit(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_daemon_lifecycle(tmp_path: Path) -> None:
    root = _write(tmp_path / "d", {"branchy.py": BRANCHY, "spare.py": SPARE, "clean.py": CLEAN})
    sock = root / ".fxscope_cache" / "daemon.sock"
    with _stopping_daemon(root):
        status = fxscope(root, "daemon", "status")
        assert status.returncode == 1 and status.stdout.strip() == "fxscope daemon is not running"

        start = fxscope(root, "daemon", "start")
        assert start.returncode == 0, start.stderr
        assert start.stdout.startswith("fxscope daemon started (pid ")
        pid = _daemon_pid(root)
        assert pid is not None and f"(pid {pid}," in start.stdout

        again = fxscope(root, "daemon", "start")
        assert again.returncode == 0
        assert again.stdout.strip() == f"fxscope daemon already running (pid {pid})"

        status = fxscope(root, "daemon", "status")
        assert status.returncode == 0, status.stdout
        assert status.stdout.startswith(f"fxscope daemon running (pid {pid}, root {root}")
        assert "worker ready" in status.stdout and "torch 2." in status.stdout

        assert stat.S_ISSOCK(os.lstat(sock).st_mode)
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert not os.stat(sock.parent).st_mode & 0o022

        via = fxscope(root, "check", "--daemon", "--format", "json")
        assert via.returncode == 1, via.stderr
        assert via.stderr == ""
        direct = fxscope(root, "check", "--format", "json")
        assert direct.returncode == 1
        via_doc, direct_doc = _json(via), _json(direct)
        _validate(via_doc, "report.schema.json")
        assert [_key(f) for f in via_doc["findings"]] == [_key(f) for f in direct_doc["findings"]]
        assert sorted(f["code"] for f in via_doc["findings"]) == ["FXS101", "FXS301"]
        # text and filters work the same through the daemon
        text = fxscope(root, "check", "--daemon", "--select", "FXS3", "spare.py")
        assert text.returncode == 0 and "spare.py:9:9: FXS301" in text.stdout
        assert "2 checks served" in fxscope(root, "daemon", "status").stdout
        for i in (1, 2):
            shard = ["check", "--format", "json", "--shard", f"{i}/2"]
            assert ([t["id"] for t in _json(fxscope(root, *shard, "--daemon"))["targets"]]
                    == [t["id"] for t in _json(fxscope(root, *shard))["targets"]])

        stop = fxscope(root, "daemon", "stop")
        assert stop.returncode == 0 and stop.stdout.strip() == f"fxscope daemon stopped (pid {pid})"
        assert not sock.exists() and _daemon_pid(root) is None
        assert not _alive(pid)
        assert fxscope(root, "daemon", "status").returncode == 1
        again = fxscope(root, "daemon", "stop")
        assert again.returncode == 0 and again.stdout.strip() == "fxscope daemon is not running"


def test_check_daemon_starts_it_and_replaces_a_stale_socket(tmp_path: Path) -> None:
    import socket

    root = _write(tmp_path / "d", {"branchy.py": BRANCHY})
    sock = root / ".fxscope_cache" / "daemon.sock"
    sock.parent.mkdir()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock))  # bound, never listening: a daemon that died without cleaning up
    stale.close()
    with _stopping_daemon(root):
        proc = fxscope(root, "check", "--daemon", "--format", "github")
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout.startswith(f"::error file=branchy.py,line={BRANCH_LINE},")
        status = fxscope(root, "daemon", "status")
        assert status.returncode == 0 and "1 check served" in status.stdout

        # The daemon re-reads pyproject.toml: a broken one is reported (exit 2, one line) ...
        (root / "pyproject.toml").write_text("[tool.fxscope]\ntimout = 3\n")
        bad = fxscope(root, "check", "--daemon")
        assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "pyproject.toml" in bad.stderr
        # ... and a fixed one is used.
        (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 20\n")
        assert fxscope(root, "check", "--daemon").returncode == 1
        assert fxscope(root, "daemon", "status").returncode == 0


def test_daemon_exits_on_sigterm(tmp_path: Path) -> None:
    root = _write(tmp_path / "d", {"clean.py": CLEAN})
    with _stopping_daemon(root):
        assert fxscope(root, "daemon", "start").returncode == 0
        pid = _daemon_pid(root)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while (root / ".fxscope_cache" / "daemon.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (root / ".fxscope_cache" / "daemon.sock").exists()
        assert _wait_exit(pid)
        assert fxscope(root, "daemon", "status").returncode == 1
