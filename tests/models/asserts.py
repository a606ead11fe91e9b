"""FXS101 on an `assert`: the hint is `torch._assert` or removing it."""

import torch
from torch import nn


class ChainedAssert(nn.Module):
    def forward(self, x):
        assert 0 <= x.min() < 10, "out of range"  # FXS101 chained
        return x


class AssertAnd(nn.Module):
    def forward(self, x):
        assert x.dim() == 2 and x.size(1) == 4  # FXS101 and
        return x


class TorchAssert(nn.Module):
    """The fix: recorded as a node."""

    def forward(self, x):
        torch._assert(x.min() >= 0, "negative input")
        return x.sqrt()
