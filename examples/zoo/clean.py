"""Models that trace cleanly: fxscope reports nothing for them."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, dim: int = 32, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        return x + self.net(x)


class GatedBlock(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.gate = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)

    def forward(self, x):
        # Data-dependent choice written the traceable way.
        return torch.where(self.gate(x) > 0, self.value(x), x)
