"""Concrete arguments seen at a call site are used when the child is traced on its own."""

import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, flag=False, mode="mean"):
        if flag:
            x = self.proj(x)
        if mode == "mean":
            return x.mean(-1, keepdim=True) * x
        return x


class FailingParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.scaler = Scaler()
        self.positional = Scaler()

    def forward(self, x):
        y = self.scaler(x, flag=True) + self.positional(x, True, "none")
        if y.sum() > 0:  # FXS101 parent
            y = -y
        return y
