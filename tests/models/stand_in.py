"""A child traced on its own because its parent failed before calling it is traced with
stand-in arguments: what only the stand-in call causes is not a finding."""

import torch
from torch import nn


def exists(value):
    return value is not None


class CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.kv = nn.Linear(8, 8)

    def forward(self, x, context=None):
        assert exists(context), "cross attention needs a context"
        return self.q(x) @ self.kv(context).transpose(-1, -2)


class FailsBeforeCrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.cross = CrossAttention()

    def forward(self, x, context):
        for _ in range(x.size(0)):  # FXS104 parent
            x = x * 2
        return self.cross(x, context=context)


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, gate=None):
        y = self.proj(x)
        if y.max() > 0:  # FXS101 child
            y = y * 2
        return y


class FailsBeforeGated(nn.Module):
    """A real problem of the child is still reported when traced with stand-in arguments."""

    def __init__(self):
        super().__init__()
        self.gated = Gated()

    def forward(self, x):
        total = x.new_zeros(())
        for row in range(x.size(0)):  # FXS104 range
            total = total + x[row].sum()
        return self.gated(x) * total


_ = torch
