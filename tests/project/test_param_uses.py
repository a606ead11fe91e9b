"""How ``__init__`` uses a required parameter (unpacked, subscripted, iterated, only tested for
truth) is read from source, persisted with the file's summary, and decides the placeholder the
class is built with; an edit that changes the use changes the candidate."""

from __future__ import annotations

from pathlib import Path

from engine_support import write_tree

from fxscope.project import discover, load_config
from fxscope.project._summary import Summary, summary_of_text

SOURCE = """
from torch import nn


class Net(nn.Module):
    def __init__(self, input_shape, fpn_dims, shifts, causal, width, mode):
        super().__init__()
        self.input_shape = input_shape
        c, h, w = self.input_shape
        self.a = nn.Conv2d(fpn_dims[0], fpn_dims[3], 1)
        self.shifts = tuple(shifts)
        self.causal = causal
        self.mask = 1 if not causal else 2
        self.proj = nn.Linear(width, width)
        self.mode = mode
        if mode:
            self.extra = nn.Identity()
        print(mode)

    def forward(self, x):
        return self.proj(x)
"""


def test_uses_are_read_and_persisted() -> None:
    summary = summary_of_text(SOURCE)
    uses = summary.classes["Net"].param_uses
    # `mode` is tested, and also printed: not only a flag
    assert uses == {"input_shape": "unpack:3", "fpn_dims": "index:4", "shifts": "iter", "causal": "flag"}
    assert Summary.from_json(summary.to_json()).classes["Net"].param_uses == uses


def test_the_use_decides_the_placeholder_and_an_edit_changes_it(tmp_path: Path) -> None:
    write_tree(tmp_path, {"m.py": """
        from torch import nn


        class Gate(nn.Module):
            def __init__(self, dim, gated):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                if gated:
                    self.gate = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)
    """})

    def texts() -> list[str]:
        (target,) = [t for t in discover(load_config(tmp_path)).targets if t.id == "m.py::Gate"]
        return [r.text for r in target.recipes]

    assert texts() == ["Gate(dim=16, gated=False)", "Gate(dim=16, gated=True)", "Gate(dim=128, gated=False)"]
    source = (tmp_path / "m.py").read_text().replace("if gated:", "for _ in gated:")
    (tmp_path / "m.py").write_text(source)
    assert texts() == ["Gate(dim=16, gated=(0, 1))", "Gate(dim=128, gated=(0, 1))"]
