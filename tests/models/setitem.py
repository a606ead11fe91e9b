"""Item assignment into a traced value (FXS105)."""

import torch
from torch import nn


class ZeroFirstColumn(nn.Module):
    def forward(self, x):
        x[:, 0] = 0  # FXS105 column
        return x


class MaskedAssign(nn.Module):
    def forward(self, x):
        y = x.clone()
        y[y < 0] = 0.0  # FXS105 mask
        return y


class FunctionalIsFine(nn.Module):
    def forward(self, x):
        return x.masked_fill(x < 0, 0.0)
