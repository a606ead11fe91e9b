"""A model's own argument checks after a traced condition. Plain fx stops at the condition
(FXS101); exploring past it must not report the ``raise`` the model would reach on the branch
fxscope picked (a made-up follow-on error), and must explore the rest of the forward."""

from torch import nn

INPUTS = {
    "ShapeCheck": {"x": [2, 8]},
    "ValueCheckThenLength": {"x": [2, 8]},
    "CheckInHelper": {"x": [2, 8]},
}


class ShapeCheck(nn.Module):
    """timm's pattern: a shape check combined with a value test."""

    def __init__(self):
        super().__init__()
        self.dim = 8
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        if x.shape[-1] != self.dim and x.sum() > 0:  # FXS101 guard
            raise ValueError(f"expected {self.dim} features")
        return self.proj(x)


class ValueCheckThenLength(nn.Module):
    """After the check, a real problem further down is still found."""

    def forward(self, x):
        if x.min() < 0:  # FXS101 check
            raise ValueError("negative input")
        return x / len(x)  # FXS103 len


def _check_positive(x):
    if x.max() > 100:  # FXS101 helper
        raise RuntimeError("input too large")


class CheckInHelper(nn.Module):
    def forward(self, x):
        _check_positive(x)
        return x * 2
