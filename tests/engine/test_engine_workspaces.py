"""What real repositories hit, each from a small workspace: a workspace package in `preload` (and
an installed copy of it), edits of preloaded modules, hangs that must not be paid twice, the
trace children's thread count, classes that are not targets or need constructor arguments."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from engine_support import locate, run_check, write_tree

from fxscope.cache import FileHasher, ResultCache
from fxscope.engine import Engine
from fxscope.engine.workspace_state import WorkspaceState
from fxscope.project import _summary, load_config
from fxscope.report.build import check_report

pytestmark = pytest.mark.requires_torch

LAYERS = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:  # MARK branch
                x = x * 2
            return self.fc(x)
    """

PRELOADED = {
    "pyproject.toml": """
        [tool.fxscope]
        python-path = ["src"]
        preload = ["pkg.layers"]
        timeout = 60
        """,
    "src/pkg/__init__.py": "",
    "src/pkg/layers.py": LAYERS,
    "src/pkg/models.py": """
        from torch import nn

        from pkg.layers import Block


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x)
        """,
}

# An installed copy of the same package, earlier than the workspace on the default sys.path.
INSTALLED = {
    "pkg/__init__.py": "",
    "pkg/layers.py": """
        from torch import nn


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
        """,
}


def _findings(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def test_preloaded_workspace_package_is_the_workspace_copy(tmp_path: Path, monkeypatch) -> None:
    root, site = tmp_path / "ws", tmp_path / "site"
    write_tree(root, PRELOADED)
    write_tree(site, INSTALLED)
    monkeypatch.setenv("PYTHONPATH", str(site))  # the zygote inherits it, like site-packages
    warnings: list[str] = []
    with Engine(root, on_warning=warnings.append) as engine:
        report = check_report(engine.check()).to_json()
        info = engine.pool.info
    assert info["preload"] == {"pkg.layers": None}, info["preload"]
    assert set(info["preload_files"]) == {"src/pkg/__init__.py", "src/pkg/layers.py"}
    [finding] = _findings(report, "FXS101")
    line, _ = locate(root, "src/pkg/layers.py", "MARK branch")
    assert (finding["file"], finding["line"]) == ("src/pkg/layers.py", line)
    assert not [w for w in warnings if "preload" in w.replace(str(tmp_path), "")], warnings  # the path has it


def test_editing_a_preloaded_module_retraces_with_the_new_code(tmp_path: Path) -> None:
    write_tree(tmp_path, PRELOADED)
    layers = tmp_path / "src/pkg/layers.py"
    with Engine(tmp_path) as engine:  # one engine, one warm zygote: as in the server
        first = check_report(engine.check()).to_json()
        assert _findings(first, "FXS101")
        assert {t["id"]: t["status"] for t in first["targets"]}["src/pkg/models.py::Net"] != "traced"
        assert check_report(engine.check()).to_json()["summary"]["cached"] == 2
        layers.write_text(layers.read_text().replace("if x.sum() > 0:", "if True:"))
        second = check_report(engine.check()).to_json()
    assert second["summary"]["cached"] == 0, "results depend on the preloaded module"
    assert _findings(second, "FXS101") == [], second["findings"]
    assert {t["status"] for t in second["targets"]} == {"traced"}
    with Engine(tmp_path) as engine:  # and a fresh process agrees, from the cache
        third = check_report(engine.check()).to_json()
    assert third["summary"]["cached"] == 2 and _findings(third, "FXS101") == []


HANGS = {
    "pyproject.toml": """
        [tool.fxscope]
        timeout = 1
        """,
    "helper.py": """
        PAUSE = 0.05
        """,
    "hangs.py": """
        import time

        from torch import nn

        from helper import PAUSE


        class Sleeper(nn.Module):
            def forward(self, x):
                while True:
                    time.sleep(PAUSE)  # MARK idle
                return x


        class Fine(nn.Module):
            def forward(self, x):
                return x + 1
        """,
}


def test_a_timeout_is_cached_retried_on_request_and_after_an_edit(tmp_path: Path) -> None:
    write_tree(tmp_path, HANGS)
    first = run_check(tmp_path)
    [finding] = first.findings("hangs.py::Sleeper", "FXS403")
    assert finding["line"] == locate(tmp_path, "hangs.py", "MARK idle")[0]

    again = run_check(tmp_path)  # a mostly idle child: still never paid twice
    assert again.uncached() == set()
    assert again.report["findings"] == first.report["findings"]

    retried = run_check(tmp_path, "--retry-faults")
    assert retried.uncached() == {"hangs.py::Sleeper"}
    assert retried.findings("hangs.py::Sleeper", "FXS403")

    (tmp_path / "helper.py").write_text("PAUSE = 0.06\n")  # a recorded dependency of the fault
    edited = run_check(tmp_path)
    assert "hangs.py::Sleeper" in edited.uncached()  # (with Fine: hangs.py imports helper.py)


def test_engine_retry_faults(tmp_path: Path) -> None:
    write_tree(tmp_path, HANGS)
    with Engine(tmp_path) as engine:
        engine.check()
        assert check_report(engine.check()).to_json()["summary"]["cached"] == 2
        report = check_report(engine.check(retry_faults=True)).to_json()
    assert {t["id"]: t["cached"] for t in report["targets"]} == {
        "hangs.py::Fine": True, "hangs.py::Sleeper": False}


def test_one_intra_op_thread_per_trace_child(tmp_path: Path) -> None:
    write_tree(tmp_path, {"threads.py": """
        import torch
        from torch import nn


        class Threads(nn.Module):
            def __init__(self):
                super().__init__()
                print("intra-op threads:", torch.get_num_threads())

            def forward(self, x):
                return x
        """})
    with Engine(tmp_path, workers=1) as engine:
        [result] = engine.run(engine.discover().targets)
    assert "intra-op threads: 1\n" in (result.outcome.output or "")


def test_main_guard_and_forwarding_constructors_through_the_cli(tmp_path: Path) -> None:
    write_tree(tmp_path, {"demo.py": textwrap.dedent("""
        import torch
        from torch import nn


        class Mixin:
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)


        class Scaled(Mixin, nn.Linear):
            def forward(self, x):
                return super().forward(x) * 2


        class Net(nn.Module):
            def forward(self, x):
                return x * 2


        if __name__ == "__main__":
            class Demo(nn.Module):
                def forward(self, x):
                    return x

            print(Demo()(torch.ones(1)))
        """)})
    run = run_check(tmp_path)
    assert set(run.targets) == {"demo.py::Scaled", "demo.py::Net"}
    assert run.targets["demo.py::Scaled"]["status"] == "skipped"
    assert [f["code"] for f in run.report["findings"]] == ["FXS405"]
    assert "(*args, **kwargs)" in run.report["findings"][0]["message"]


def _old(root: Path) -> None:
    """Give every file an mtime long past: its signature is trusted (not "racy")."""
    stamp = 1_600_000_000 * 10**9
    for path in root.rglob("*.py"):
        os.utime(path, ns=(stamp, stamp))


def _fresh_state(root: Path) -> tuple[WorkspaceState, ResultCache]:
    """What a new process starts with: nothing in memory, the persisted cache on disk."""
    _summary.clear_cache()
    cache = ResultCache(root / ".fxscope_cache")
    return WorkspaceState(load_config(root), cache, FileHasher(root)), cache


def test_unchanged_workspace_is_neither_read_nor_parsed_again(tmp_path: Path, monkeypatch) -> None:
    write_tree(tmp_path, {f"m{i}.py": f"from torch import nn\nclass M{i}(nn.Module):\n"
                                      f"    def forward(self, x): return x + {i}\n" for i in range(5)})
    write_tree(tmp_path, {"base.py": "from torch import nn\nclass Base(nn.Module):\n    pass\n",
                          "sub.py": "from base import Base\nclass Sub(Base):\n    def forward(self, x): return x\n"})
    _old(tmp_path)
    state, cache = _fresh_state(tmp_path)
    first = state.discover()
    state.save()
    cache.close()
    assert len(first.targets) == 6

    state, cache = _fresh_state(tmp_path)
    parses = _summary.cache_stats()["parses"]
    reads: list[str] = []
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or real_read(self))
    again = state.discover()
    assert again.to_json() == first.to_json()
    assert _summary.cache_stats()["parses"] == parses and reads == []
    cache.close()

    # one file changes: discovery runs again, from persisted summaries; only that file is parsed
    (tmp_path / "base.py").write_text("from torch import nn\nclass Base(nn.Linear):\n    pass\n")
    stamp = 1_700_000_000 * 10**9  # a later save, long enough ago to be trusted
    os.utime(tmp_path / "base.py", ns=(stamp, stamp))
    state, cache = _fresh_state(tmp_path)
    parses = _summary.cache_stats()["parses"]
    changed = state.discover()
    assert _summary.cache_stats()["parses"] == parses + 1 and reads == ["base.py"]
    assert {t.id: t.needs_args for t in changed.targets}["sub.py::Sub"] is True
    cache.close()


def test_a_recent_file_is_looked_at_not_trusted_by_its_signature(tmp_path: Path) -> None:
    write_tree(tmp_path, {"m.py": "from torch import nn\nclass A(nn.Module):\n    def forward(self, x): return x\n"})
    stamp = time.time_ns() + 60 * 10**9  # "just now" (in the future) however slowly the test runs
    os.utime(tmp_path / "m.py", ns=(stamp, stamp))
    state, cache = _fresh_state(tmp_path)  # m.py was written just now
    assert [t.id for t in state.discover().targets] == ["m.py::A"]
    state.save()
    cache.close()
    path = tmp_path / "m.py"
    before = path.stat()
    path.write_text(path.read_text().replace("class A(", "class B("))  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    state, cache = _fresh_state(tmp_path)
    assert [t.id for t in state.discover().targets] == ["m.py::B"]
    cache.close()


def test_a_script_directory_imports_its_siblings_as_when_run_from_there(tmp_path: Path) -> None:
    """A directory of scripts (no __init__.py) whose files import each other by bare name, as
    `python examples/main.py` allows: its classes import and trace; a package's files do not get
    their directory on sys.path (a bare name there is an error, as in Python)."""
    write_tree(tmp_path, {
        "examples/helpers.py": """
            def double(x):
                return x * 2
            """,
        "examples/main.py": """
            from torch import nn

            from helpers import double


            class Net(nn.Module):
                def forward(self, x):
                    return double(x)
            """,
        "pkg/__init__.py": "",
        "pkg/helpers.py": """
            def double(x):
                return x * 2
            """,
        "pkg/main.py": """
            from torch import nn

            from helpers import double  # MARK bare


            class Net(nn.Module):
                def forward(self, x):
                    return double(x)
            """,
    })
    run = run_check(tmp_path)
    assert run.targets["examples/main.py::Net"]["status"] == "traced", run.findings("examples/main.py::Net")
    (error,) = run.findings("pkg/main.py::Net", "FXS402")
    assert (error["file"], error["line"]) == ("pkg/main.py", locate(tmp_path, "pkg/main.py", "MARK bare")[0])
