"""A sequential scan over the time axis (state-space models, RNN cells written by hand):
``for i in range(n)`` with ``n`` taken from a shape. Plain fx fails at ``range(n)``; shape-aware
tracing unrolls the loop for the example's length (FXS501); `torch.arange(n)` is no fix."""

import torch
from torch import nn

INPUTS = {"ScanOverSequence": {"x": [2, 5, 4]}, "WrappedScan": {"x": [2, 5, 4]}}


class ScanOverSequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.decay = nn.Parameter(torch.full((4,), 0.9))

    def forward(self, x):
        n = x.shape[1]
        h = torch.zeros_like(x[:, 0])
        outs = []
        for i in range(n):  # FXS104 range
            h = h * self.decay + x[:, i]
            outs.append(h)
        return torch.stack(outs, 1)


def scan(x, decay):
    h = torch.zeros_like(x[:, 0])
    outs = []
    for i in range(x.shape[1]):
        h = h * decay + x[:, i]
        outs.append(h)
    return torch.stack(outs, 1)


torch.fx.wrap("scan")


class WrappedScan(nn.Module):
    """The other fix the hint gives: the loop in a function marked with `torch.fx.wrap`."""

    def __init__(self):
        super().__init__()
        self.decay = nn.Parameter(torch.full((4,), 0.9))

    def forward(self, x):
        return scan(x, self.decay)
