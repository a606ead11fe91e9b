"""Submodules forward uses without calling them directly are not "never called" (FXS301)."""

import torch
from torch import nn


class IteratedList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        weights = [layer.weight for layer in self.layers]
        return x @ torch.stack(weights).sum(0)


class TiedWeight(nn.Module):
    """The output projection reuses the embedding's weight (GPT-style weight tying)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10)

    def forward(self, ids):
        h = self.embed(ids)
        return h @ self.out.weight.t()


class NormsOrNone(nn.Module):
    """x-transformers' layer norms: a ModuleList holding only None."""

    def __init__(self):
        super().__init__()
        self.norms = nn.ModuleList([None, None])
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        for norm in self.norms:
            if norm is not None:
                x = norm(x)
        return self.proj(x)


class StillUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.extra = nn.Linear(4, 4)  # FXS301 extra

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
