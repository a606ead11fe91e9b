"""Models that trace, but hide problems for graph passes and DDP."""

import torch
from torch import nn


class Normalizer(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)          # assigned, never called
        self.bias = nn.Parameter(torch.zeros(dim))  # never used

    def forward(self, x):
        y = self.proj(x)
        y.clamp_(min=0)                          # in-place, result unused
        return self.proj(x)
