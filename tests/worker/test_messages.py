"""The typed messages between the pool and its zygote: read strictly, and a malformed one fails the
job as a fault (never a crash of the pool, never a result) — with a real pool and a zygote that lies."""

from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path

import pytest

from fxscope.model.fault import Fault, Frame, ThreadStack
from fxscope.model.sandbox import SandboxStatus
from fxscope.worker import WorkerPool
from fxscope.worker.messages import (Answer, Cancel, Done, JobSpec, Ready, Run, Shutdown, Started, Starting,
                                     read_reply, read_request)
from fxscope.worker.protocol import ProtocolError, parse_child_result

READY = Ready(42, "3.11.9", "/usr/bin/python3", "2.4.0", "/site/torch", 17, None, {"pkg": None},
              {"einops": "ImportError: no"}, {"pkg/__init__.py": "ab"}, ("preload 'x' failed",), "/tmp/s",
              SandboxStatus(True, "landlock", "Landlock ABI 4"), 812.5)


@pytest.mark.parametrize("message", [
    Starting("preload", "pkg"), READY, Started("3", 77),
    Done("3", 77, 1.5, Answer({"value": [1, {"output": 2}]}, "printed\n")),
    Done("4", None, 0.0, Fault("crash", "fork failed: EAGAIN")),
    Done("5", 8, 30001.0, Fault("timeout", timeout=30.0, cpu_s=29.9, output="", stack=(Frame("/ws/m.py", 3, "f"),),
                                threads=(ThreadStack("0x1", (Frame("/ws/t.py", None, "run"),)),))),
])
def test_every_reply_reads_back_as_itself(message):
    assert read_reply(message.to_json()) == message


@pytest.mark.parametrize("request_", [Run("1", {"runner": "m:f", "x": [1]}), Cancel("1"), Shutdown()])
def test_every_request_reads_back_as_itself(request_):
    assert read_request(request_.to_json()) == request_


@pytest.mark.parametrize("raw, problem", [
    ({"op": "started", "job_id": "1", "pid": 0}, "pid is not a process id"),
    ({"op": "started", "job_id": 1, "pid": 5}, "job_id"),
    ({"op": "done", "job_id": "1", "pid": True, "duration_ms": 1.0, "result": {}}, "pid"),
    ({"op": "done", "job_id": "1", "pid": 5, "duration_ms": "1", "result": {}}, "duration_ms"),
    ({"op": "done", "job_id": "1", "pid": 5, "result": {"fault": "gone"}}, "unknown fault 'gone'"),
    ({"op": "done", "job_id": "1", "pid": 5, "result": {"fault": "timeout", "timeout": "soon"}}, "timeout"),
    ({"op": "done", "job_id": "1", "pid": 5, "result": {"fault": "crash", "stack": [{"file": 3}]}}, "frame"),
    ({"op": "done", "job_id": "1", "pid": 5, "result": {"value": 1, "output": 7}}, "output"),
    ({"op": "ready", "pid": "42"}, "pid"),
    ({"op": "ready", "pid": 42, "warnings": [1]}, "warnings"),
    ({"op": "ready", "pid": 42, "preload": {"pkg": 3}}, "preload"),
    ({"op": "teleport"}, "unknown op"),
])
def test_a_malformed_reply_is_a_protocol_error_naming_what(raw, problem):
    with pytest.raises(ProtocolError, match=problem):
        read_reply(raw)


@pytest.mark.parametrize("raw", [{"op": "run", "job_id": "1", "job": [1]}, {"op": "run", "job": {}},
                                 {"op": "cancel"}, {"op": "fork-bomb", "job_id": "1"}])
def test_a_malformed_request_is_a_protocol_error(raw):
    with pytest.raises(ProtocolError):
        read_request(raw)


def test_job_spec_reads_what_the_worker_needs_and_refuses_the_ill_typed():
    spec = JobSpec.from_json({"runner": "m:f", "timeout": 5, "sys_path": ["/a", "/b"], "root": "/ws",
                              "overlays": {"/ws/m.py": "X = 1"}, "memory_limit_mb": 512, "anything": {"else": 1}})
    assert (spec.runner, spec.timeout, spec.sys_path, spec.root, dict(spec.overlays), spec.memory_limit_mb) == (
        "m:f", 5.0, ("/a", "/b"), "/ws", {"/ws/m.py": "X = 1"}, 512)
    assert JobSpec.from_json({"timeout": 0}).timeout is None  # no timeout, as before
    for bad in ({"timeout": "30"}, {"recursion_limit": True}, {"overlays": {"/m.py": 1}}, {"runner": ["m:f"]}):
        with pytest.raises(ValueError):
            JobSpec.from_json(bad)
    with WorkerPool(max_workers=1) as pool, pytest.raises(ValueError, match="timeout"):
        pool.submit({"runner": "m:f", "timeout": "30"})  # refused before any process starts
    assert pool.info is None


def test_a_fault_a_job_forges_is_no_result():
    assert parse_child_result(b'{"fault": "exception", "type": "E", "message": "m", "traceback": []}')[0] == {
        "fault": "exception", "type": "E", "message": "m", "traceback": []}
    for forged in (b'{"fault": "exception", "message": ["x"]}', b'{"fault": "exit", "exit_code": "2"}',
                   b'{"fault": "exception", "traceback": [1]}', b'{"fault": "crash"}'):
        result, why = parse_child_result(forged)
        assert result is None and why.startswith("it wrote a malformed result (")


LYING_ZYGOTE = """
import argparse, json, os, struct, sys

parser = argparse.ArgumentParser()
parser.add_argument("--fd-in", type=int)
parser.add_argument("--fd-out", type=int)
args, _ = parser.parse_known_args()


def send(message):
    data = json.dumps(message).encode()
    os.write(args.fd_out, struct.pack(">I", len(data)) + data)


def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(args.fd_in, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


send({"op": "ready", "pid": os.getpid(), "python": "3", "executable": sys.executable, "warnings": []})
while True:
    request = json.loads(read(struct.unpack(">I", read(4))[0]))
    if request["op"] == "run":
        send({"op": "started", "job_id": request["job_id"], "pid": os.getpid()})
        send({"op": "done", "job_id": request["job_id"], "pid": os.getpid(), "duration_ms": 1.0,
              "result": {"fault": "timeout", "timeout": "whenever"}})
"""


def test_a_zygote_that_sends_a_malformed_reply_is_replaced_and_the_job_fails_as_a_fault(tmp_path: Path):
    script = tmp_path / "lying_zygote.py"
    script.write_text(LYING_ZYGOTE)
    python = tmp_path / "python"  # the pool runs `<python> -m fxscope.worker.zygote ...`: this one lies
    python.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        shift 2
        exec {sys.executable} {script} "$@"
        """))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    with WorkerPool(python=str(python), max_workers=1, startup_timeout=60) as pool:
        first = pool.ensure_started(timeout=60)["pid"]
        result = pool.submit({"runner": "m:f", "timeout": 30}).result(60)
        assert result["fault"] == "crash"
        assert "malformed reply (done: timeout is not a number)" in result["message"]
        assert pool.info["pid"] != first  # replaced (and the job run again once: it lied again)
