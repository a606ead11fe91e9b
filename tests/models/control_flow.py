"""A traced value decides Python control flow (FXS101)."""

import torch
from torch import nn


class IfOnTensor(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # FXS101 if
            return x * 2
        return -x


class WhileOnTensor(nn.Module):
    def forward(self, x):
        while x.abs().max() > 1:  # FXS101 while
            x = x / 2
        return x


class AssertOnTensor(nn.Module):
    def forward(self, x):
        assert x.min() >= 0, "inputs must be non-negative"  # FXS101 assert
        return x.sqrt()


class BoolCall(nn.Module):
    def forward(self, x):
        nonzero = bool(x.any())  # FXS101 bool
        return x + int(nonzero)


class AndOr(nn.Module):
    def forward(self, x, mask):
        keep = x.any() and mask  # FXS101 and
        return x * keep


class NotOnTensor(nn.Module):
    def forward(self, x):
        empty = not x.numel()  # FXS101 not
        return x if empty else x + 1


class ConditionalExpression(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y if y.mean() > 0 else -y  # FXS101 ternary
