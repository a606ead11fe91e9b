"""The fault zoo: a workspace generator whose targets attack the checker the way hostile or careless
model code does, next to healthy models whose results must stay complete and correct.

``write_zoo(root, scratch)`` writes the workspace; ``scratch`` (outside it) receives the pid files
of the processes the models leave behind. ``EXPECTED`` maps each target to its status and the code
of the finding it must get (``None``: no finding).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

#: target id -> (status, finding code or None, text the finding's message must contain)
EXPECTED: dict[str, tuple[str, str | None, str]] = {
    "healthy.py::Healthy": ("traced", None, ""),
    "healthy.py::Branchy": ("failed", "FXS101", "decides"),
    "hang.py::Hang": ("error", "FXS403", "did not finish"),
    "crash.py::Crash": ("error", "FXS404", "SIGSEGV"),
    "hard_exit.py::HardExit": ("error", "FXS404", "status 7"),
    "soft_exit.py::SoftExit": ("error", "FXS404", "bad weights"),
    "memory.py::Memory": ("failed", "FXS107", "MemoryError"),
    "spam.py::Spam": ("traced", None, ""),
    "forks.py::Forks": ("traced", None, ""),
    "escapes.py::Escapes": ("traced", None, ""),
    "forger.py::Forger": ("error", "FXS404", "not valid JSON"),
    "patcher.py::Patcher": ("traced", None, ""),
}

HEALTHY = '''
    import torch
    from torch import nn


    class Healthy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.fc(x))


    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # MARK if
                return x
            return -x
    '''


def _files(scratch: Path) -> dict[str, str]:
    pid = str(scratch)
    return {
        # The forking models tell the test the pids they leave behind through files outside the
        # workspace, which the OS sandbox refuses: the zoo runs unsandboxed (its faults are the
        # same either way; the sandbox has tests of its own).
        "pyproject.toml": """
            [tool.fxscope]
            timeout = 4
            memory-limit-mb = 1024
            sandbox = false
            """,
        "healthy.py": HEALTHY,
        "hang.py": """
            from torch import nn


            class Hang(nn.Module):
                def forward(self, x):
                    while True:
                        pass
            """,
        "crash.py": """
            import ctypes

            from torch import nn


            class Crash(nn.Module):
                def forward(self, x):
                    ctypes.string_at(0)
                    return x
            """,
        "hard_exit.py": """
            import os

            from torch import nn


            class HardExit(nn.Module):
                def forward(self, x):
                    os._exit(7)
            """,
        "soft_exit.py": """
            from torch import nn


            class SoftExit(nn.Module):
                def __init__(self):
                    super().__init__()
                    raise SystemExit("bad weights")

                def forward(self, x):
                    return x
            """,
        "memory.py": """
            from torch import nn


            class Memory(nn.Module):
                def forward(self, x):
                    hoard = bytearray(64 * 1024 ** 3)
                    return x
            """,
        "spam.py": """
            import os

            from torch import nn


            class Spam(nn.Module):
                def forward(self, x):
                    line = b"spam " * 13106 + b"\\n"
                    for _ in range(400):
                        os.write(1, line)
                    return x + 1
            """,
        "forks.py": f"""
            import os
            import subprocess
            import sys
            import time

            from torch import nn


            class Forks(nn.Module):
                def forward(self, x):
                    child = os.fork()
                    if child == 0:
                        time.sleep(300)
                        os._exit(0)
                    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
                    with open(os.path.join({pid!r}, f"forks-{{os.getpid()}}"), "w") as fh:
                        fh.write(f"{{child}} {{popen.pid}}")
                    return x * 2
            """,
        "escapes.py": f"""
            import os
            import time

            from torch import nn


            class Escapes(nn.Module):
                def forward(self, x):
                    read, write = os.pipe()
                    first = os.fork()
                    if first == 0:
                        os.setsid()
                        if os.fork() == 0:
                            os.write(write, str(os.getpid()).encode())
                            time.sleep(300)
                        os._exit(0)
                    os.waitpid(first, 0)
                    daemon = os.read(read, 32).decode()
                    with open(os.path.join({pid!r}, f"escapes-{{os.getpid()}}"), "w") as fh:
                        fh.write(daemon)
                    return x - 1
            """,
        "forger.py": """
            import json

            from torch import nn

            _real = json.dumps


            def _forge(obj, *args, **kwargs):
                honest = _real(obj, *args, **kwargs)
                fake = {"status": "traced", "modules": [], "nodes": 0, "findings": []}
                return honest + ',"job_id":"1","result":' + _real(fake)


            json.dumps = _forge


            class Forger(nn.Module):
                def forward(self, x):
                    return x
            """,
        "patcher.py": """
            import builtins

            import torch
            from torch import nn

            builtins.len = lambda obj: 0
            torch.relu = lambda x: x * 0


            class Patcher(nn.Module):
                def forward(self, x):
                    return x + 3
            """,
    }


def write_zoo(root: Path, scratch: Path) -> None:
    """Write the zoo workspace under ``root``; leftover pids go to files in ``scratch``."""
    scratch.mkdir(parents=True, exist_ok=True)
    for rel, text in _files(scratch).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def leftover_pids(scratch: Path) -> list[int]:
    """Every pid the models recorded as left behind."""
    pids = []
    for path in scratch.iterdir():
        pids += [int(p) for p in path.read_text().split()]
    return pids
