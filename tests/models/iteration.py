"""A traced value is iterated (FXS102)."""

import torch
from torch import nn


class ForOverTensor(nn.Module):
    def forward(self, x):
        total = 0
        for row in x:  # FXS102 for
            total = total + row
        return total


class StarUnpack(nn.Module):
    def forward(self, x):
        first, *rest = x  # FXS102 star
        return first


class ListOfTensor(nn.Module):
    def forward(self, x):
        rows = list(x)  # FXS102 list
        return torch.stack(rows)


class StarShape(nn.Module):
    def forward(self, x):
        noise = torch.randn(*x.shape)  # FXS102 shape
        return x + noise


class ZipOverTensor(nn.Module):
    def forward(self, x, y):
        return torch.stack([a * b for a, b in zip(x, y)])  # FXS102 zip


class ShapeUnpackIsFine(nn.Module):
    """`b, t, c = x.shape` unpacks a known number of values: fx records it (no finding)."""

    def forward(self, x):
        b, t, c = x.shape
        return x.reshape(b * t, c)
