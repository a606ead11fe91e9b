"""Helpers shared by the engine tests: write workspaces, run the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
DAEMON = TESTS.parent / "daemon"
SCHEMA = DAEMON / "fxscope" / "schemas" / "report.schema.json"

if str(DAEMON) not in sys.path:  # in-process Engine tests; the CLI tests set PYTHONPATH instead
    sys.path.insert(0, str(DAEMON))


def write_tree(root: Path, files: dict[str, str], *, lstrip: bool = True) -> None:
    """Write ``{relative path: source}`` (dedented; without its leading newlines when ``lstrip``)
    under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text)
        path.write_text(text.lstrip("\n") if lstrip else text)


def cli_env(marker: str | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout's ``daemon/`` first on PYTHONPATH, and an
    optional marker variable that every process it starts inherits (to find leaked processes)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(DAEMON) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as for most users: __pycache__ gets written
    if marker:
        env["FXSCOPE_TEST_MARKER"] = marker
    return env


class CheckRun:
    """One finished ``fxscope check --format json``: ``report`` (parsed stdout), ``stderr``, ``rc``."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        try:
            self.report: dict[str, Any] = json.loads(proc.stdout)
        except ValueError as exc:
            raise AssertionError(
                f"stdout is not JSON ({exc}); rc={proc.returncode}\nstdout head: {proc.stdout[:2000]!r}"
                f"\nstderr: {proc.stderr[-4000:]}"
            ) from None

    @property
    def targets(self) -> dict[str, dict[str, Any]]:
        return {t["id"]: t for t in self.report["targets"]}

    def findings(self, target: str | None = None, code: str | None = None) -> list[dict[str, Any]]:
        """Findings, optionally of one target (also via merged scopes) and one code; the sites of a
        finding grouped by library cause count as findings of their own."""
        out = []
        for f in flat_findings(self.report["findings"]):
            if code is not None and f["code"] != code:
                continue
            if target is not None and f.get("target") != target and not any(
                    s.get("target") == target for s in f.get("scopes", [])):
                continue
            out.append(f)
        return out

    def uncached(self) -> set[str]:
        return {t["id"] for t in self.report["targets"] if not t["cached"]}


def run_fxscope(cwd: Path, *args: str, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``python -m fxscope ARGS`` in ``cwd``: stdout and stderr captured (not terminals), no
    stdin, this checkout first on PYTHONPATH (``env`` defaults to :func:`cli_env`)."""
    return subprocess.run([sys.executable, "-m", "fxscope", *args], cwd=cwd, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def check_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "fxscope", "check", ".", "--format", "json", *args]


def run_check(root: Path, *args: str, marker: str | None = None, timeout: float = 180) -> CheckRun:
    """Run the real CLI on ``root`` (as its working directory) and parse its JSON report."""
    proc = subprocess.run(check_command(*args), cwd=root, env=cli_env(marker), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode in (0, 1), f"rc={proc.returncode}\nstderr: {proc.stderr[-4000:]}"
    return CheckRun(proc)


_PLAIN_FX = """
import json, sys
import torch.fx
from fxscope.job.construct import rebuild
root, build = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
model = rebuild(build, root)
try:
    torch.fx.symbolic_trace(model)
except Exception as e:
    print(json.dumps({"failed": True, "error": f"{type(e).__name__}: {e}"}))
else:
    print(json.dumps({"failed": False}))
"""


def plain_fx_of(root: Path, build: dict[str, Any]) -> dict[str, Any]:
    """Plain ``torch.fx.symbolic_trace`` of a report's ``build`` rebuilt in a fresh process (the
    workspace ``root`` first on its path): ``{"failed": False}``, or ``{"failed": True, "error": ...}``."""
    proc = subprocess.run([sys.executable, "-c", _PLAIN_FX, str(root), json.dumps(build)], cwd=root, env=cli_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def start_check(root: Path, *args: str, marker: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(check_command(*args), cwd=root, env=cli_env(marker), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish_check(proc: subprocess.Popen[str], timeout: float = 180) -> CheckRun:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode in (0, 1), f"rc={proc.returncode}\nstderr: {err[-4000:]}"
    return CheckRun(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))


def new_marker() -> str:
    return uuid.uuid4().hex


def processes_with_marker(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of live processes whose environment holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
            if f"FXSCOPE_TEST_MARKER={marker}".encode() not in environ.split(b"\0"):
                continue
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(entry), cmdline))
    return found


def locate(root: Path, rel: str, marker: str, text: str | None = None) -> tuple[int, int | None]:
    """1-based (line, column) of the line of ``rel`` holding ``marker``; the column is where
    ``text`` starts on it (None without ``text``)."""
    for number, line in enumerate((root / rel).read_text().splitlines(), 1):
        if marker in line:
            if text is None:
                return number, None
            col = line.find(text)
            assert col >= 0, f"{text!r} not on line {number} of {rel}"
            return number, col + 1
    raise AssertionError(f"{marker!r} not in {rel}")


def flat_findings(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every finding of a report's list, the ``sites`` of those grouped by library cause included."""
    return [g for f in findings for g in (f, *flat_findings(f.get("sites") or []))]


def assert_failures_explained(report: dict[str, Any]) -> None:
    """The report invariant: no target ends ``failed``, ``partial`` or ``error`` without an error
    finding that names it (as its target, among its ``targets`` or its scopes' targets), listed
    or as one of the ``sites`` of a finding grouped by its library cause."""
    named: dict[str, list[str]] = {}
    for f in flat_findings(report["findings"]):
        if f["severity"] != "error":
            continue
        ids = {f.get("target"), *(f.get("targets") or ()), *(s.get("target") for s in f.get("scopes") or ())}
        for tid in ids - {None}:
            named.setdefault(tid, []).append(f["code"])
    unexplained = [(t["id"], t["status"]) for t in report["targets"]
                   if t["status"] in ("failed", "partial", "error") and not named.get(t["id"])]
    assert unexplained == [], f"targets that failed without an error finding: {unexplained}"


def assert_schema_describes(doc: Any, schema: dict[str, Any], where: str = "report") -> None:
    """Every key of ``doc`` is a property the (report) ``schema`` describes at that place, so the
    shipped schema documents everything the CLI prints (it allows unknown keys, so validation
    alone would not notice an undocumented one)."""

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        return node

    def properties(node: dict[str, Any]) -> dict[str, Any]:
        node = resolve(node)
        props = dict(node.get("properties", {}))
        for part in node.get("allOf", []):
            props.update(properties(part))
        return props

    def walk(value: Any, node: dict[str, Any], path: str) -> None:
        node = resolve(node)
        if isinstance(value, dict):
            props = properties(node)
            extra = node.get("additionalProperties")
            for key, item in value.items():
                if key in props:
                    walk(item, props[key], f"{path}.{key}")
                elif isinstance(extra, dict):
                    walk(item, extra, f"{path}.{key}")
                else:
                    raise AssertionError(f"{path}.{key} is not described by the report schema")
        elif isinstance(value, list):
            items = node.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(value):
                    walk(item, items, f"{path}[{i}]")

    walk(doc, schema, where)
