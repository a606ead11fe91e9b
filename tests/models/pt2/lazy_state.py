"""Models whose forward changes their own state: what a first call does must not reach an analysis
that runs after another one (torch.export fails on each of them freshly built, and succeeds on one
that has already run)."""

import copy

import torch
from torch import nn


class LazyHead(nn.Module):
    """A lazily initialised layer: its weight has no shape until the first forward."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.LazyLinear(3)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class LazyTargetNetwork(nn.Module):
    """A target network copied from the online one at the first forward (as in DQN/BYOL code)."""

    def __init__(self):
        super().__init__()
        self.online = nn.Linear(4, 4)
        self.target = None

    def forward(self, x):
        if self.target is None:
            self.target = copy.deepcopy(self.online)
        return self.online(x) - self.target(x)


MODELS = (LazyHead, LazyTargetNetwork)
