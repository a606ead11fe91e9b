"""The worker layer with real processes: zygote, forked children, faults, overlays."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from fxscope.worker import WorkerPool
from fxscope.worker import pool as pool_module
from fxscope.worker.protocol import FrameDecoder, ProtocolError, encode, encode_attached, read_message
from fxscope.job.touched import touched_files

pytestmark = pytest.mark.requires_torch

TESTS = Path(__file__).resolve().parents[1]
DAEMON = TESTS.parent / "daemon"
RUNNERS = TESTS / "worker_runners.py"


def runner(name: str) -> str:
    return f"worker_runners:{name}"


def line_of(marker: str) -> int:
    for number, line in enumerate(RUNNERS.read_text().splitlines(), 1):
        if marker in line:
            return number
    raise AssertionError(marker)


def wait_for_pid(handle, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while handle.pid is None:
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.01)
    return handle.pid


def process_gone(pid: int, timeout: float = 30.0) -> bool:
    """True once ``pid`` no longer exists (a zombie awaiting an absent reaper counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(max_workers=2, sys_path=[str(TESTS)]) as p:
        p.ensure_started(timeout=60)
        yield p


def test_framing_roundtrip():
    frames = encode({"op": "a", "n": 1}) + encode({"op": "b", "s": "é" * 70000})
    decoder = FrameDecoder()
    got = decoder.feed(frames[:3]) + decoder.feed(frames[3:100]) + decoder.feed(frames[100:])
    assert [m["op"] for m in got] == ["a", "b"]
    assert got[1]["s"] == "é" * 70000 and decoder.pending == 0


def read_back(data: bytes) -> dict | None:
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        return read_message(fh.fileno())


def test_an_attached_result_is_parsed_and_checked_by_the_reader():
    fallback = {"fault": "crash", "exit_code": 0, "message": "ended but ", "output": "out"}
    header = {"op": "done", "job_id": "1", "pid": 7, "duration_ms": 1.0}

    def reply(payload: bytes) -> dict:
        message = read_back(encode_attached({**header, "result": dict(fallback)}, payload))
        assert message is not None and "attached" not in message
        return message["result"]

    assert reply(b'{"value":1,"output":"claimed"}') == {"value": 1, "output": "out"}
    forged = b'{"value":"mine"},"job_id":"2","result":{"value":"FORGED"}'
    assert reply(forged)["message"] == "ended but it wrote a result that is not valid JSON"
    assert reply(b'{"fault":"cancelled"}')["message"] == (
        "ended but it wrote a malformed result (fault 'cancelled' cannot come from a job)")
    assert reply(b"[" * 100000 + b"]" * 100000)["fault"] == "crash"
    assert reply(b'{"value":1}')["output"] == "out"
    truncated = encode_attached({**header, "result": fallback}, b'{"value":1}')[:-3]
    assert read_back(truncated) is None
    with pytest.raises(ProtocolError):
        read_back(encode({**header, "result": fallback, "attached": 5}) + encode({"value": 1}))


def test_returns_value_in_child(pool, tmp_path):
    handle = pool.submit({"runner": runner("echo"), "value": 41, "root": str(tmp_path)})
    result = handle.result(30)
    assert result["value"] == 41
    assert result["cwd"] == str(tmp_path)
    assert result["pid"] == handle.pid != os.getpid()
    assert result["output"] == ""
    assert handle.done() and handle.duration_ms is not None
    assert pool.info["torch_version"]


def test_result_forwarded_whole_with_the_output_the_zygote_read(pool):
    result = pool.submit({"runner": runner("claims_output")}).result(30)
    assert result["output"] == "what-it-printed\n"  # never what the result claims
    assert result["text"] == "h\u00e9llo \u2603" and result["nested"] == {"output": [1, {}]}


def test_output_captured_and_parent_stdout_untouched():
    script = textwrap.dedent(f"""
        import json, sys
        from fxscope.worker import WorkerPool
        with WorkerPool(max_workers=1, sys_path=[{str(TESTS)!r}]) as pool:
            noisy = pool.submit({{"runner": "worker_runners:noisy"}}).result(60)
            crash = pool.submit({{"runner": "worker_runners:segfault"}}).result(60)
            loaded = pool.submit({{"runner": "worker_runners:torch_loaded"}}).result(60)
        print(json.dumps({{"noisy": noisy, "crash": crash["fault"], "child_torch": loaded["torch"],
                          "parent_torch": "torch" in sys.modules}}))
    """)
    env = dict(os.environ, PYTHONPATH=str(DAEMON))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    report = json.loads(proc.stdout)  # the whole stdout is our one line: nothing leaked
    output = report["noisy"]["output"]
    assert "to-stdout" in output and "to-stderr" in output and "raw-fd-1" in output
    assert report["noisy"]["ok"] is True
    assert report["crash"] == "crash"
    assert report["child_torch"] is True
    assert report["parent_torch"] is False


def test_timeout_reports_stack(pool):
    start = time.monotonic()
    result = pool.submit({"runner": runner("sleep_forever"), "timeout": 1}).result(30)
    assert time.monotonic() - start < 10  # the zygote's own deadline, well before the watchdog's
    assert result["fault"] == "timeout" and result["timeout"] == 1
    frame = result["stack"][-1]
    assert frame["file"] == str(RUNNERS)
    assert frame["line"] == line_of("SLEEP-LINE")
    assert frame["name"] == "sleep_forever"
    assert "sleeping" in result["output"]


def test_os_exit_is_crash(pool):
    result = pool.submit({"runner": runner("hard_exit")}).result(30)
    assert result["fault"] == "crash"
    assert result["exit_code"] == 3 and result["signal"] is None


def test_segfault_is_crash(pool):
    result = pool.submit({"runner": runner("segfault")}).result(30)
    assert result["fault"] == "crash"
    assert result["signal"] == signal.SIGSEGV and result["signal_name"] == "SIGSEGV"
    assert result["exit_code"] is None
    assert result["stack"][-1]["name"] == "segfault"


def test_sys_exit_is_exit_fault(pool):
    result = pool.submit({"runner": runner("soft_exit")}).result(30)
    assert result["fault"] == "exit" and result["exit_code"] == 2
    assert result["traceback"][-1]["name"] == "soft_exit"


def test_exception_fault(pool):
    result = pool.submit({"runner": runner("raises")}).result(30)
    assert result["fault"] == "exception"
    assert result["type"] == "ValueError" and result["message"] == "bad value"
    assert result["traceback"][0]["name"] == "raises"
    assert result["traceback"][0]["file"] == str(RUNNERS)


def test_infinite_recursion_pool_survives(pool):
    result = pool.submit({"runner": runner("recurse")}).result(30)
    assert result["fault"] in ("exception", "crash")
    if result["fault"] == "exception":
        assert result["type"] == "RecursionError"
    assert pool.submit({"runner": runner("echo"), "value": 1}).result(30)["value"] == 1


def test_memory_limit_pool_survives(pool):
    result = pool.submit({"runner": runner("allocate"), "memory_limit_mb": 1024}).result(30)
    assert result["fault"] in ("exception", "crash")
    if result["fault"] == "exception":
        assert result["type"] == "MemoryError"
    assert pool.submit({"runner": runner("echo"), "value": 2}).result(30)["value"] == 2


def test_cancel_running_kills_child(pool):
    handle = pool.submit({"runner": runner("sleep_forever"), "timeout": 60})
    pid = wait_for_pid(handle)
    start = time.monotonic()
    assert handle.cancel()
    assert handle.result(30) == {"fault": "cancelled"}
    assert time.monotonic() - start < 10  # killed, not left to its 60 s timeout
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not handle.cancel()


def test_cancel_queued(pool):
    sleepers = [pool.submit({"runner": runner("sleep_forever"), "timeout": 60}) for _ in range(2)]
    queued = pool.submit({"runner": runner("echo")})
    called = []
    queued.add_done_callback(called.append)
    assert queued.cancel() and queued.cancelled() and called == [queued]
    assert queued.pid is None
    for handle in sleepers:
        handle.cancel()
    assert all(h.result(30)["fault"] == "cancelled" for h in sleepers)


def test_parallel_jobs_respect_max_workers(pool):
    # each job outlasts the start of its neighbour, even on a loaded host (it is forked, or a spare)
    handles = [pool.submit({"runner": runner("timed"), "seconds": 1.0}) for _ in range(4)]
    results = [h.result(30) for h in handles]
    assert all("start" in r for r in results)
    events = sorted([(r["start"], 1) for r in results] + [(r["end"], -1) for r in results],
                    key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 2


def test_overlays_and_touched_files(pool, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("PKG = 'disk'\n")
    (pkg / "mod.py").write_text("X = 1\n# disk line\n")
    (pkg / "other.py").write_text("Y = 1\n")
    overlays = {
        str(pkg / "__init__.py"): "PKG = 'overlay'\n",
        str(pkg / "mod.py"): "X = 2\n# overlay line\nfrom . import other\n",
    }
    job = {"runner": runner("import_overlaid"), "root": str(tmp_path), "sys_path": [str(tmp_path)],
           "overlays": overlays, "module": "pkg.mod"}
    result = pool.submit(job).result(30)
    assert result["X"] == 2 and result["PKG"] == "overlay"
    assert result["line2"] == "# overlay line\n"

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    assert result["touched"] == {
        "pkg/__init__.py": sha(overlays[str(pkg / "__init__.py")]),
        "pkg/mod.py": sha(overlays[str(pkg / "mod.py")]),
        "pkg/other.py": sha("Y = 1\n"),
    }
    assert not list(pkg.rglob("__pycache__/mod*.pyc"))  # overlay code is never cached


def test_touched_files_excludes_venv(tmp_path, monkeypatch):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "fxs_vendored_mod.py").write_text("A = 1\n")
    (tmp_path / "fxs_user_mod.py").write_text("B = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / ".venv"))
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    try:
        import fxs_user_mod  # noqa: F401
        import fxs_vendored_mod  # noqa: F401

        assert touched_files(tmp_path, before) == {
            "fxs_user_mod.py": hashlib.sha256(b"B = 1\n").hexdigest()
        }
    finally:
        sys.modules.pop("fxs_user_mod", None)
        sys.modules.pop("fxs_vendored_mod", None)


def test_worker_that_cannot_start_fails_jobs(tmp_path):
    with WorkerPool(python=str(tmp_path / "no-such-python")) as pool:
        result = pool.submit({"runner": runner("echo")}).result(10)
        assert result["fault"] == "crash" and "could not start worker" in result["message"]
    with WorkerPool(python="/bin/false") as pool:
        result = pool.submit({"runner": runner("echo")}).result(10)
        assert result["fault"] == "crash" and "failed to start" in result["message"]
        with pytest.raises(TypeError):
            pool.submit({"value": object()})


def test_zygote_killed_then_replaced_and_restart(monkeypatch):
    with WorkerPool(max_workers=1, sys_path=[str(TESTS)]) as pool:
        handle = pool.submit({"runner": runner("sleep_forever"), "timeout": 60})
        child = wait_for_pid(handle)
        zygote = pool.info["pid"]
        os.kill(zygote, signal.SIGKILL)
        result = handle.result(10)
        assert result["fault"] == "crash" and "worker process died" in result["message"]
        assert process_gone(child)
        assert pool.submit({"runner": runner("echo"), "value": 3}).result(60)["value"] == 3
        assert pool.info["pid"] != zygote

        # restart with a new preload list: in-flight jobs are re-run, bad preloads are warnings
        inflight = pool.submit({"runner": runner("timed"), "seconds": 0.2})
        wait_for_pid(inflight)
        pool.restart(preload=["json", "fxs_no_such_module"])
        assert "start" in inflight.result(60)
        info = pool.info
        assert info["preload"]["json"] is None
        assert "ModuleNotFoundError" in info["preload"]["fxs_no_such_module"]
        assert any("fxs_no_such_module" in w for w in info["warnings"])

        # a reinstalled torch (its files' stamp changed) restarts the zygote at the next submit
        monkeypatch.setattr(pool_module, "TORCH_CHECK_INTERVAL", 0.0)
        monkeypatch.setattr(pool_module, "_torch_stamp", lambda path: -1)
        before = info["pid"]
        assert pool.submit({"runner": runner("echo"), "value": 4}).result(60)["value"] == 4
        assert pool.info["pid"] != before
    assert handle.done()
    with pytest.raises(RuntimeError):
        pool.submit({"runner": runner("echo")})


def zygote_children(pool) -> list[int]:
    with open(f"/proc/{pool.info['pid']}/task/{pool.info['pid']}/children") as fh:
        return [int(p) for p in fh.read().split()]


def zygote_fds(pool) -> int:
    return len(os.listdir(f"/proc/{pool.info['pid']}/fd"))


def only_a_spare(pool, jobs=()) -> bool:
    """The zygote's one child is its spare: no process of ``jobs`` (handles) is left."""
    children = zygote_children(pool)
    return len(children) == 1 and children[0] not in {h.pid for h in jobs}


def the_spare(pool, jobs=(), timeout: float = 30.0) -> int:
    """The pid of the zygote's spare, once it is its only child (none of ``jobs``)."""
    assert settled(lambda: only_a_spare(pool, jobs), timeout), zygote_children(pool)
    return zygote_children(pool)[0]


def fd_targets(pid: int) -> list[str]:
    """What the descriptors of ``pid`` point to (one it closes meanwhile, as a starting spare
    does, is left out)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return out


def job_dirs(pool) -> list[str]:
    """The job directories in the zygote's scratch directory (not its own temporary directory,
    ``zygote``, which the sandboxed zygote writes in)."""
    return [name for name in os.listdir(pool.info["scratch"]) if name != "zygote"]


def spare_dir(pool) -> str:
    """The name of the job directory the spare holds its stack file in."""
    pid = the_spare(pool)

    def stack_files() -> list[str]:
        return [t for t in fd_targets(pid) if t.endswith("/stack.txt")]

    assert settled(stack_files), "the spare opens its stack file as it starts"
    return os.path.basename(os.path.dirname(stack_files()[0]))


def settled(check, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_valid_result_is_answered_when_the_child_says_done_and_the_child_is_killed(pool):
    handle = pool.submit({"runner": runner("answer_then_linger"), "timeout": 60})
    result = handle.result(10)  # the child never exits by itself
    assert result["value"] == "early" and result["pid"] == handle.pid
    assert result["output"] == "before-answer\n"
    assert process_gone(handle.pid)
    assert settled(lambda: handle.pid not in zygote_children(pool)), "reaped, no zombie left"
    assert not handle.cancel()


def test_a_done_byte_before_the_result_exists_is_only_a_hint(pool):
    result = pool.submit({"runner": runner("done_byte_first"), "timeout": 60}).result(30)
    assert result["value"] == "late"


def test_an_invalid_result_is_the_same_fault_with_or_without_the_done_byte(pool):
    faults = [pool.submit({"runner": runner("invalid_result_then_exit"), "done_byte": flag,
                           "timeout": 60}).result(30) for flag in (False, True)]
    for fault in faults:
        fault.pop("stack"), fault.pop("threads", None)
    assert faults[0] == faults[1]
    assert faults[0]["fault"] == "crash" and "not valid JSON" in faults[0]["message"]


def test_many_jobs_leave_no_descriptor_or_process_in_the_zygote(pool):
    first = pool.submit({"runner": runner("echo")})
    first.result(30)
    assert settled(lambda: only_a_spare(pool, [first]))
    assert settled(lambda: job_dirs(pool) == [spare_dir(pool)])  # first's removed
    fds = zygote_fds(pool)  # the spare's three pipes included
    runners = ["echo", "noisy", "raises", "hard_exit", "answer_then_linger", "done_byte_first"]
    handles = [pool.submit({"runner": runner(runners[i % len(runners)]), "timeout": 60})
               for i in range(60)]
    assert all(h.result(60) for h in handles)
    assert settled(lambda: only_a_spare(pool, handles)), "every job's process is reaped"
    assert settled(lambda: zygote_fds(pool) == fds), "every job's pipes are closed"
    assert settled(lambda: job_dirs(pool) == [spare_dir(pool)]), \
        "every job's directory is removed"


def test_closing_the_pool_after_an_answer_leaves_no_process():
    with WorkerPool(max_workers=1, sys_path=[str(TESTS)]) as pool:
        handle = pool.submit({"runner": runner("answer_then_linger"), "timeout": 60})
        assert handle.result(30)["value"] == "early"
        zygote = pool.info["pid"]
    assert process_gone(handle.pid) and process_gone(zygote)


def test_a_job_runs_on_the_spare_forked_before_it_and_a_new_spare_follows(pool):
    spare = the_spare(pool)
    handle = pool.submit({"runner": runner("echo"), "value": 7})
    result = handle.result(30)
    assert result["value"] == 7 and result["pid"] == handle.pid == spare
    assert settled(lambda: only_a_spare(pool, [handle]))
    assert the_spare(pool) != spare


def test_a_job_larger_than_a_default_pipe_buffer_runs_on_the_spare(pool):
    """A large unsaved buffer rides in the job: the spare's pipe is grown to take it in one write."""
    spare = the_spare(pool)
    value = "x" * (300 * 1024)
    handle = pool.submit({"runner": runner("echo"), "value": value})
    result = handle.result(30)
    assert result["value"] == value and result["pid"] == handle.pid == spare


def test_a_job_too_large_for_the_spares_pipe_is_forked(pool):
    spare = the_spare(pool)
    value = "x" * (4 * 1024 * 1024)
    handle = pool.submit({"runner": runner("echo"), "value": value})
    result = handle.result(60)
    assert result["value"] == value and result["pid"] == handle.pid != spare


def test_nothing_of_a_job_reaches_the_next_spare(pool):
    first, second = (pool.submit({"runner": runner("leave_traces")}).result(30) for _ in range(2))
    assert first["found"] == second["found"] == []


def test_a_spare_that_dies_is_replaced_and_jobs_still_run(pool):
    spare = the_spare(pool)
    os.kill(spare, signal.SIGKILL)
    assert process_gone(spare)  # its pipe is closed: whether reaped yet or not, the job is forked
    forked = pool.submit({"runner": runner("echo"), "value": 1})
    assert forked.result(30)["value"] == 1 and forked.pid != spare
    replacement = the_spare(pool, [forked])
    assert replacement != spare
    handle = pool.submit({"runner": runner("echo"), "value": 2})
    assert handle.result(30)["pid"] == replacement


def test_a_spare_that_dies_at_the_hand_over_is_a_crash_of_its_job(pool):
    spare = the_spare(pool)
    os.kill(spare, signal.SIGSTOP)  # alive: its pipe takes the job
    handle = pool.submit({"runner": runner("echo"), "timeout": 60})
    assert wait_for_pid(handle) == spare
    os.kill(spare, signal.SIGKILL)
    result = handle.result(30)
    assert result["fault"] == "crash" and result["signal_name"] == "SIGKILL"
    assert pool.submit({"runner": runner("echo"), "value": 3}).result(30)["value"] == 3


def test_cancel_and_timeout_of_jobs_on_spares(pool):
    spare = the_spare(pool)
    handle = pool.submit({"runner": runner("sleep_forever"), "timeout": 60})
    assert wait_for_pid(handle) == spare
    assert handle.cancel()
    assert handle.result(30) == {"fault": "cancelled"}
    assert process_gone(spare)
    spare = the_spare(pool, [handle])
    handle = pool.submit({"runner": runner("sleep_forever"), "timeout": 1})
    result = handle.result(30)
    assert handle.pid == spare and result["fault"] == "timeout"
    assert result["stack"][-1]["line"] == line_of("SLEEP-LINE") and "sleeping" in result["output"]
    assert process_gone(spare)


def test_closing_the_pool_kills_its_spare():
    with WorkerPool(max_workers=1, sys_path=[str(TESTS)]) as pool:
        pool.ensure_started(timeout=60)
        spare = the_spare(pool)
        zygote = pool.info["pid"]
    assert process_gone(spare) and process_gone(zygote)
