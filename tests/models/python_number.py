"""A traced value used as a Python number or index (FXS104)."""

import torch
from torch import nn


class IntOfTensor(nn.Module):
    def forward(self, x):
        k = int(x.sum())  # FXS104 int
        return x[:, :k]


class FloatOfTensor(nn.Module):
    def forward(self, x):
        scale = float(x.std())  # FXS104 float
        return x / scale


class RangeOfSize(nn.Module):
    def forward(self, x):
        out = x
        for _ in range(x.size(0)):  # FXS104 range
            out = out + 1
        return out


class ListIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [0.5, 1.0, 2.0]

    def forward(self, x):
        return x * self.scales[x.dim()]  # FXS104 index

