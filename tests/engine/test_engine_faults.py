"""Every way user code can break a trace is reported with its code and line, through the real CLI,
while the other targets' results stay complete: syntax and import errors, a raising constructor,
a hang, os._exit, a segfault, sys.exit, floods of output, infinite recursion, a huge allocation."""

from __future__ import annotations

import pytest

from engine_support import assert_failures_explained, locate, run_check, write_tree

pytestmark = pytest.mark.requires_torch

#: Seconds per trace: the hang waits it out once, and the other targets (Chatty's 20,000 prints
#: take ~0.7 s, over 1 s on a loaded host) must finish well inside it.
TIMEOUT = 6

FAULTS = {
    "pyproject.toml": f"""
        [tool.fxscope]
        timeout = {TIMEOUT}
        """,
    "clean.py": """
        import torch
        from torch import nn


        class Clean(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return torch.relu(self.fc(x))


        class Branchy(nn.Module):
            def forward(self, x):
                if x.mean() > 0:  # MARK if
                    return x
                return -x
        """,
    "broken.py": """
        from torch import nn


        class Broken(nn.Module):
            def forward(self, x)  # MARK syntax
                return x
        """,
    "missing.py": """
        from torch import nn

        import no_such_module_for_fxscope  # MARK import


        class Missing(nn.Module):
            def forward(self, x):
                return x
        """,
    "faults.py": """
        import ctypes
        import os
        import sys

        from torch import nn


        class RaisingInit(nn.Module):
            def __init__(self):
                super().__init__()
                raise ValueError("cannot build this")  # MARK raise

            def forward(self, x):
                return x


        class Hangs(nn.Module):
            def forward(self, x):
                while True:  # MARK hang
                    pass  # MARK hang-body


        class OsExit(nn.Module):
            def forward(self, x):
                os._exit(3)  # MARK os-exit


        class Segfault(nn.Module):
            def forward(self, x):
                ctypes.string_at(0)  # MARK segv
                return x


        class SysExit(nn.Module):
            def forward(self, x):
                sys.exit(2)  # MARK sys-exit


        class Chatty(nn.Module):
            def __init__(self):
                super().__init__()
                print("{not json" * 1000)
                sys.stdout.flush()
                os.write(1, b"raw bytes on fd 1\\n" * 1000)

            def forward(self, x):
                for i in range(20000):
                    print("noise", i, "}{")
                sys.stderr.write("noise on stderr\\n" * 1000)
                return x + 1


        def recurse(n):
            return recurse(n + 1)  # MARK recurse


        class Recursion(nn.Module):
            def forward(self, x):
                return recurse(0) + x
        """,
}

HUGE = {
    "pyproject.toml": """
        [tool.fxscope]
        device = "cpu"
        memory-limit-mb = 1024
        """,
    "big.py": """
        import torch
        from torch import nn


        class Huge(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("table", torch.empty(10**12))  # MARK alloc

            def forward(self, x):
                return x


        class OverLimit(nn.Module):  # 1.6 GB: fits in RAM, not in memory-limit-mb
            def __init__(self):
                super().__init__()
                self.register_buffer("table", torch.ones(400 * 2**20))  # MARK over-limit

            def forward(self, x):
                return x


        class Fine(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x):
                return self.fc(x)
        """,
}


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("faults")
    write_tree(root, FAULTS)
    return root, run_check(root)


def only(run, target, code):
    found = run.findings(target, code)
    assert len(found) == 1, (target, code, run.findings(target))
    assert run.targets[target]["status"] == "error" or code in ("FXS101", "FXS107", "FXS402")
    return found[0]


def test_other_targets_are_complete(faults):
    root, run = faults
    assert_failures_explained(run.report)
    targets = run.targets
    assert targets["clean.py::Clean"]["status"] == "traced"
    assert [m["path"] for m in targets["clean.py::Clean"]["modules"]] == ["", "fc"]
    assert targets["clean.py::Branchy"]["status"] == "failed"
    line, column = locate(root, "clean.py", "MARK if", "x.mean() > 0")
    [finding] = run.findings("clean.py::Branchy", "FXS101")
    assert (finding["file"], finding["line"], finding["column"]) == ("clean.py", line, column)
    assert set(targets) == {
        "clean.py::Clean", "clean.py::Branchy", "missing.py::Missing", "faults.py::RaisingInit",
        "faults.py::Hangs", "faults.py::OsExit", "faults.py::Segfault", "faults.py::SysExit",
        "faults.py::Chatty", "faults.py::Recursion",
    }  # broken.py does not parse: no target, a file finding


def test_syntax_error(faults):
    root, run = faults
    found = [f for f in run.findings(code="FXS402") if f["file"] == "broken.py"]
    assert len(found) == 1
    assert found[0]["line"] == locate(root, "broken.py", "MARK syntax")[0]
    assert "SyntaxError" in found[0]["message"]


def test_missing_module(faults):
    root, run = faults
    finding = only(run, "missing.py::Missing", "FXS402")
    line, _ = locate(root, "missing.py", "MARK import")
    assert (finding["file"], finding["line"]) == ("missing.py", line)
    assert "no_such_module_for_fxscope" in finding["message"]


def test_constructor_raises(faults):
    root, run = faults
    finding = only(run, "faults.py::RaisingInit", "FXS401")
    line, column = locate(root, "faults.py", "MARK raise", "raise")
    assert (finding["file"], finding["line"]) == ("faults.py", line)
    assert "cannot build this" in finding["message"]


def test_hang_times_out_where_it_was_stuck(faults):
    root, run = faults
    finding = only(run, "faults.py::Hangs", "FXS403")
    lines = {locate(root, "faults.py", "MARK hang")[0], locate(root, "faults.py", "MARK hang-body")[0]}
    assert finding["file"] == "faults.py" and finding["line"] in lines
    assert f"within {TIMEOUT}" in finding["message"]


@pytest.mark.parametrize("target, marker", [
    ("faults.py::OsExit", "MARK os-exit"),
    ("faults.py::Segfault", "MARK segv"),
    ("faults.py::SysExit", "MARK sys-exit"),
])
def test_process_death(faults, target, marker):
    root, run = faults
    finding = only(run, target, "FXS404")
    assert (finding["file"], finding["line"]) == ("faults.py", locate(root, "faults.py", marker)[0])


def test_death_messages(faults):
    _, run = faults
    assert "status 3" in only(run, "faults.py::OsExit", "FXS404")["message"]
    assert "SIGSEGV" in only(run, "faults.py::Segfault", "FXS404")["message"]
    assert "sys.exit(2)" in only(run, "faults.py::SysExit", "FXS404")["message"]


def test_output_never_reaches_stdout(faults):
    _, run = faults  # run_check already parsed stdout as JSON
    assert run.targets["faults.py::Chatty"]["status"] == "traced"
    assert "noise" not in run.stdout and "raw bytes" not in run.stdout
    assert "noise" not in run.stderr and "raw bytes" not in run.stderr


def test_infinite_recursion(faults):
    root, run = faults
    target = run.targets["faults.py::Recursion"]
    assert target["status"] in ("failed", "error")
    [finding] = [f for f in run.findings("faults.py::Recursion") if f["severity"] == "error"]
    assert finding["code"] in ("FXS107", "FXS404")
    assert finding["file"] == "faults.py"
    assert finding["line"] in (locate(root, "faults.py", "MARK recurse")[0],
                               run.targets["faults.py::Recursion"]["line"])


def test_faults_are_cached_and_reported_again(faults):
    root, first = faults
    run = run_check(root)
    # every fault, the timeout included, is cached like any other result
    assert run.uncached() == set()
    assert run.report["findings"] == first.report["findings"]


def test_huge_allocation_is_contained(tmp_path):
    write_tree(tmp_path, HUGE)
    run = run_check(tmp_path)
    assert_failures_explained(run.report)
    assert run.targets["big.py::Fine"]["status"] == "traced"
    for target, marker in (("big.py::Huge", "MARK alloc"), ("big.py::OverLimit", "MARK over-limit")):
        assert run.targets[target]["status"] == "error"
        [finding] = run.findings(target)
        assert finding["code"] in ("FXS401", "FXS404")
        if finding["code"] == "FXS401":
            assert finding["line"] == locate(tmp_path, "big.py", marker)[0]
