"""`len()` of a traced value (FXS103)."""

import torch
from torch import nn


class LenOfTensor(nn.Module):
    def forward(self, x):
        n = len(x)  # FXS103 len
        return x / n


class LenOfShape(nn.Module):
    def forward(self, x):
        if len(x.shape) == 2:  # FXS103 shape
            x = x.unsqueeze(0)
        return x


class Inner(nn.Module):
    """Plain torch.fx raises RuntimeError for `len()`; only this module fails, not its parents."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) / len(x)  # FXS103 inner


class Middle(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.inner(x))


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.middle = Middle()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.middle(x).relu())
