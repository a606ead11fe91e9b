"""Hardening of the worker layer against hostile jobs: forged results, orphans, output floods,
a wedged zygote, a preload that never finishes, an unwritable log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fxscope.engine.faults import fault_result, read_fault
from fxscope.worker import WorkerPool
from fxscope.worker import pool as pool_module
from fxscope.worker import reaper

pytestmark = pytest.mark.requires_torch

TESTS = Path(__file__).resolve().parents[1]
FAULTS = TESTS / "faults"
sys.path.insert(0, str(FAULTS))

from procs import alive, wait_gone  # noqa: E402


def zoo(name: str) -> str:
    return f"zoo_runners:{name}"


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(max_workers=2, sys_path=[str(FAULTS)], preload=["zoo_runners"]) as p:
        p.ensure_started(timeout=120)
        yield p


#: The runners of some tests signal the test through files in its tmp_path (pids, a release file),
#: which the OS sandbox rightly refuses: those pools run without it (what they test is the same).
UNSANDBOXED = {"sandbox": False}


@pytest.fixture(scope="module")
def files_pool():
    with WorkerPool(max_workers=2, sys_path=[str(FAULTS)], preload=["zoo_runners"], **UNSANDBOXED) as p:
        p.ensure_started(timeout=120)
        yield p


def wait_for_pid(handle, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while handle.pid is None:
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.01)
    return handle.pid


def test_forged_result_cannot_reach_another_job(pool):
    victim = pool.submit({"runner": zoo("echo"), "value": "honest", "delay": 1.0, "timeout": 60})
    forger = pool.submit({"runner": zoo("forge_other_job"), "victim": victim.job_id, "timeout": 60})
    forged = forger.result(60)  # never left pending
    honest = victim.result(60)
    assert honest["value"] == "honest"
    assert forged["fault"] == "crash" and "not valid JSON" in forged["message"]


def test_a_job_cannot_claim_to_be_cancelled_or_send_a_non_object(pool):
    claimed = pool.submit({"runner": zoo("claim_cancelled"), "timeout": 60}).result(60)
    assert claimed["fault"] == "crash" and "cannot come from a job" in claimed["message"]
    listed = pool.submit({"runner": zoo("not_an_object"), "timeout": 60}).result(60)
    assert listed["fault"] == "crash" and "not an object" in listed["message"]


def test_processes_a_job_leaves_behind_are_killed(pool):
    result = pool.submit({"runner": zoo("spawn_and_return"), "timeout": 60}).result(60)
    assert result["value"] == "spawned"
    pids = result["pids"]
    assert len(pids) == 3
    assert wait_gone(pids) == [], "fork, Popen and setsid descendants must not outlive the job"


def wait_for_file(path: Path, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)
    return path.read_text()


def test_a_running_jobs_detached_process_outlives_other_jobs_but_not_its_own(files_pool, tmp_path):
    pids_file, release = tmp_path / "pids", tmp_path / "release"
    holder = files_pool.submit({"runner": zoo("escape_until_released"), "pids_file": str(pids_file),
                          "release": str(release), "timeout": 120})
    sleeper = int(wait_for_file(pids_file))
    assert alive(sleeper)
    # other jobs end while it runs: one returns, one is killed by its timeout, one returns after
    # the zygote swept behind both (it reads a request only once its sweep is over)
    assert files_pool.submit({"runner": zoo("echo"), "value": 1, "timeout": 60}).result(60)["value"] == 1
    assert files_pool.submit({"runner": zoo("sleep_forever"), "timeout": 1}).result(60)["fault"] == "timeout"
    assert files_pool.submit({"runner": zoo("echo"), "value": 2, "timeout": 60}).result(60)["value"] == 2
    assert alive(sleeper), "another job's end must not kill this job's detached process"
    assert not holder.done()
    release.write_text("")
    assert holder.result(60)["value"] == "released"
    assert wait_gone([sleeper]) == [], "a job's detached process must not outlive it"


def test_a_job_killed_by_its_timeout_leaves_no_detached_process(files_pool, tmp_path):
    pids_file = tmp_path / "pids"
    handle = files_pool.submit({"runner": zoo("escape_until_released"), "pids_file": str(pids_file),
                          "release": str(tmp_path / "never"), "timeout": 3})
    sleeper = int(wait_for_file(pids_file))
    assert handle.result(60)["fault"] == "timeout"
    assert wait_gone([sleeper]) == []


def disk_bytes(directory: Path) -> int:
    """Bytes in the files under ``directory``; a job's files may be removed while it is read."""
    total = 0
    for parent, _dirs, files in os.walk(directory):
        for name in files:
            try:
                total += os.stat(os.path.join(parent, name)).st_size
            except FileNotFoundError:
                pass
    return total


def test_output_flood_is_bounded_on_disk_and_in_the_result(pool):
    handle = pool.submit({"runner": zoo("spam_stdout"), "timeout": 4})
    wait_for_pid(handle)
    scratch = Path(pool.info["scratch"])
    sizes = []
    while not handle.done():
        sizes.append(disk_bytes(scratch))
        time.sleep(0.1)
    result = handle.result(30)
    assert result["fault"] == "timeout"
    assert max(sizes, default=0) < 1024 * 1024, "captured output must not grow on disk"
    assert len(result["output"]) < 128 * 1024 and "bytes omitted" in result["output"]

    finite = pool.submit({"runner": zoo("spam_stdout"), "megabytes": 20, "timeout": 60}).result(60)
    assert finite["written"] >= 20 * 1024 * 1024
    assert finite["output"].rstrip().endswith("LAST-LINE") and "bytes omitted" in finite["output"]


def test_system_exit_keeps_its_message(pool, tmp_path):
    raw = pool.submit({"runner": zoo("exit_with_message"), "timeout": 60}).result(60)
    assert raw["fault"] == "exit" and raw["message"] == "the config file is missing"
    body = fault_result(read_fault(raw), {"file": str(tmp_path / "m.py"), "line": 1}, str(tmp_path))
    assert "the config file is missing" in body.findings[0].message


def test_watchdog_replaces_a_wedged_zygote(monkeypatch):
    monkeypatch.setattr(pool_module, "WATCHDOG_GRACE", 1.0)
    with WorkerPool(max_workers=2, sys_path=[str(FAULTS)]) as pool:
        pool.ensure_started(timeout=120)
        zygote = pool.info["pid"]
        # the zygote is stopped before it can enforce this timeout: the innocent job's child is
        # forked (not a spare) after it, which takes a while on a loaded host
        stuck = pool.submit({"runner": zoo("sleep_forever"), "timeout": 3})
        innocent = pool.submit({"runner": zoo("echo"), "value": 7, "delay": 30, "timeout": 60})
        child = wait_for_pid(stuck)
        wait_for_pid(innocent)
        os.kill(zygote, signal.SIGSTOP)  # the zygote can no longer enforce the timeout
        try:
            result = stuck.result(60)
        finally:
            try:
                os.kill(zygote, signal.SIGCONT)
            except ProcessLookupError:
                pass
        assert result["fault"] == "crash" and "did not report the job in time" in result["message"]
        assert wait_gone([zygote, child]) == []
        # the job that merely shared the zygote is run again, not failed
        assert not innocent.done() or innocent.result()["value"] == 7
        assert pool.submit({"runner": zoo("echo"), "value": 8, "timeout": 60}).result(120)["value"] == 8


def test_blocking_preload_is_one_named_startup_error(tmp_path, monkeypatch):
    pidfile = tmp_path / "zygote.pid"
    monkeypatch.setenv("FXSCOPE_TEST_PIDFILE", str(pidfile))
    with WorkerPool(max_workers=2, sys_path=[str(FAULTS)], preload=["blocking_preload"], **UNSANDBOXED,
                    startup_timeout=20) as pool:
        handles = [pool.submit({"runner": zoo("echo"), "value": i, "timeout": 5}) for i in range(3)]
        results = [h.result(60) for h in handles]
    for result in results:
        assert result["fault"] == "crash" and result.get("startup") is True
        assert "importing preload 'blocking_preload'" in result["message"]
    assert wait_gone([int(pidfile.read_text())]) == []


@pytest.mark.slow
def test_zygote_dies_with_its_parent_during_preload(tmp_path):
    pidfile = tmp_path / "zygote.pid"
    script = textwrap.dedent(f"""
        import sys, time
        from fxscope.worker import WorkerPool
        pool = WorkerPool(sys_path=[{str(FAULTS)!r}], preload=["blocking_preload"], startup_timeout=600,
                          sandbox=False)
        pool.submit({{"runner": "zoo_runners:echo"}})
        print("submitted", flush=True)
        time.sleep(600)
    """)
    env = {**os.environ, "FXSCOPE_TEST_PIDFILE": str(pidfile)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
    try:
        assert parent.stdout.readline().strip() == b"submitted"
        deadline = time.monotonic() + 120
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "the preload never started"
            time.sleep(0.05)
        zygote = int(pidfile.read_text())
        assert alive(zygote)
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone([zygote]) == [], "the zygote must not outlive its parent while preloading"


def test_unwritable_log_does_not_stop_tracing(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with WorkerPool(max_workers=1, sys_path=[str(FAULTS)], log_path=blocker / "worker.log") as pool:
        assert pool.submit({"runner": zoo("echo"), "value": 5, "timeout": 60}).result(120)["value"] == 5


def test_worker_log_is_private(tmp_path):
    log = tmp_path / "cache" / "worker.log"
    with WorkerPool(max_workers=1, sys_path=[str(FAULTS)], log_path=log) as pool:
        pool.submit({"runner": zoo("echo"), "value": 1, "timeout": 60}).result(120)
    assert log.stat().st_mode & 0o077 == 0


def test_killing_the_zygote_kills_what_its_jobs_forked(tmp_path):
    with WorkerPool(max_workers=1, sys_path=[str(FAULTS)], **UNSANDBOXED) as pool:
        pool.ensure_started(timeout=120)
        zygote = pool.info["pid"]
        pids_file = tmp_path / "pids"
        handle = pool.submit({"runner": zoo("spawn_then_sleep"), "pids_file": str(pids_file), "timeout": 120})
        deadline = time.monotonic() + 60
        while not pids_file.exists() or not pids_file.read_text():
            assert time.monotonic() < deadline, "the job never spawned"
            time.sleep(0.05)
        forked = [int(p) for p in pids_file.read_text().split()]
        os.kill(zygote, signal.SIGKILL)
        assert handle.result(30)["fault"] == "crash"
        assert wait_gone(forked) == []


def test_killing_the_zygote_kills_what_its_jobs_detached(tmp_path):
    with WorkerPool(max_workers=1, sys_path=[str(FAULTS)], preload=["zoo_runners"], **UNSANDBOXED) as pool:
        pool.ensure_started(timeout=120)
        zygote = pool.info["pid"]
        pids_file = tmp_path / "pids"
        handle = pool.submit({"runner": zoo("escape_until_released"), "pids_file": str(pids_file),
                              "release": str(tmp_path / "never"), "timeout": 120})
        sleeper = int(wait_for_file(pids_file))
        # a child of this process that is not the pool's: only its own Popen may reap it
        other = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
        while alive(other.pid):
            time.sleep(0.01)
        os.kill(zygote, signal.SIGKILL)
        assert handle.result(30)["fault"] == "crash"
        assert wait_gone([sleeper]) == [], "a setsid escape must not outlive its zygote"
        assert sleeper not in reaper.child_pids(), "the escape was adopted, killed and reaped"
        assert other.wait(10) == 3, "the pool must never reap a process it did not adopt"
        assert pool.submit({"runner": zoo("echo"), "value": 9, "timeout": 60}).result(120)["value"] == 9
        assert pool.info["pid"] != zygote


def test_closing_the_pool_collects_a_killed_zygotes_detached_processes(tmp_path):
    pool = WorkerPool(max_workers=1, sys_path=[str(FAULTS)], preload=["zoo_runners"], **UNSANDBOXED)
    try:
        pool.ensure_started(timeout=120)
        pids_file = tmp_path / "pids"
        pool.submit({"runner": zoo("escape_until_released"), "pids_file": str(pids_file),
                     "release": str(tmp_path / "never"), "timeout": 120})
        sleeper = int(wait_for_file(pids_file))
        os.kill(pool.info["pid"], signal.SIGKILL)
    finally:
        pool.close()
    assert wait_gone([sleeper]) == []
    assert sleeper not in reaper.child_pids()
