"""The sandbox module in a forked process of its own: the Landlock layers (what they allow and
refuse, stacked) and the attribution of a refusal (only a recorded write the sandbox refused)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fxscope.worker import sandbox

pytestmark = pytest.mark.skipif(sandbox.landlock_abi() < 4, reason="needs Landlock with TCP rules (ABI 4)")


def in_fork(body: Callable[[], Any]) -> Any:
    """Run ``body`` in a forked child (whose restrictions die with it); return what it returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.write(w, json.dumps({"ok": body()}).encode())
        except BaseException as exc:  # noqa: BLE001
            os.write(w, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while data := os.read(r, 65536):
        chunks.append(data)
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(b"".join(chunks))
    assert "error" not in out, out["error"]
    return out["ok"]


def attempt(action: Callable[[], Any]) -> dict[str, Any]:
    try:
        action()
    except OSError as exc:
        denial = sandbox.denial_of(exc)
        return {"errno": exc.errno, "denial": None if denial is None else [denial.action, denial.what]}
    return {"errno": None, "denial": None}


def test_layers_stack_and_each_refusal_is_attributed(tmp_path: Path) -> None:
    zygote_dir, job_dir, other_job = tmp_path / "scratch", tmp_path / "scratch" / "job1", tmp_path / "scratch" / "job2"
    for d in (zygote_dir, job_dir, other_job):
        d.mkdir()
    outside = tmp_path / "outside.txt"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]

    def body() -> dict[str, Any]:
        assert sandbox.begin().kind == "landlock"
        sandbox.restrict_writes([str(zygote_dir)])
        in_scratch = attempt(lambda: (zygote_dir / "zygote.txt").write_text("z"))
        sandbox.enter_job(str(job_dir))
        return {
            "scratch": in_scratch,
            "own": attempt(lambda: (job_dir / "a" / "b").parent.mkdir() or (job_dir / "a" / "b").write_text("x")),
            "rename_in_own": attempt(lambda: os.rename(job_dir / "a" / "b", job_dir / "c")),
            "other_job": attempt(lambda: (other_job / "x").write_text("x")),
            "zygote_after": attempt(lambda: (zygote_dir / "late.txt").write_text("z")),
            "outside": attempt(lambda: outside.write_text("x")),
            "mkdir": attempt(lambda: os.mkdir(tmp_path / "newdir")),
            "shm": attempt(lambda: os.close(os.open("/dev/shm/fxscope-test-" + str(os.getpid()),
                                                     os.O_CREAT | os.O_WRONLY)) or
                           os.unlink("/dev/shm/fxscope-test-" + str(os.getpid()))),
            "read": attempt(lambda: Path(__file__).read_text()),
            "connect": attempt(lambda: socket.create_connection(("127.0.0.1", port), timeout=5)),
            "swallowed_then_other": attempt(lambda: (_ for _ in ()).throw(PermissionError(13, "not a sandbox"))),
            "status": sandbox.status().to_json(),
        }

    try:
        got = in_fork(body)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert got["scratch"]["errno"] is None  # the zygote writes in its scratch directory
    assert got["own"]["errno"] is None and got["rename_in_own"]["errno"] is None
    assert got["shm"]["errno"] is None and got["read"]["errno"] is None
    for key, path in (("other_job", other_job / "x"), ("zygote_after", zygote_dir / "late.txt"),
                      ("outside", outside), ("mkdir", tmp_path / "newdir")):
        assert got[key] == {"errno": 13, "denial": ["write", str(path)]}, key
        assert not path.exists()
    assert got["connect"] == {"errno": 13, "denial": ["connect", f"127.0.0.1:{port}"]}
    assert got["swallowed_then_other"] == {"errno": 13, "denial": None}, "an EACCES nothing recorded is the code's own"
    assert got["status"]["on"] is True and got["status"]["kind"] == "landlock"


def test_off_by_request_restricts_nothing(tmp_path: Path) -> None:
    def body() -> dict[str, Any]:
        sandbox.off("off by request")
        sandbox.restrict_writes([str(tmp_path / "nowhere")])
        sandbox.enter_job(str(tmp_path / "nowhere"))
        return attempt(lambda: (tmp_path / "free.txt").write_text("x"))

    assert in_fork(body) == {"errno": None, "denial": None}
    assert (tmp_path / "free.txt").exists()
