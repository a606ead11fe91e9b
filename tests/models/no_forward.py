"""Modules without a ``forward``: plain fx raises NotImplementedError on them. A target that is
one (a factory returning a cache or a container) is an error at its class, never a silent
failure; as a submodule that nothing calls, a state holder is looked through."""

import torch
from torch import nn


class StateHolder(nn.Module):  # FXS107 holder
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(2, 4))
        self.proj = nn.Linear(4, 4)


class LayerStack(nn.ModuleList):  # FXS107 stack
    def __init__(self):
        super().__init__([nn.Linear(4, 4), nn.Linear(4, 4)])


class UsesStateHolder(nn.Module):
    """Reads the holder's buffer and calls its projection: fine for plain fx."""

    def __init__(self):
        super().__init__()
        self.state = StateHolder()

    def forward(self, x):
        return self.state.proj(x) + self.state.k.sum()


class FailsAroundStateHolder(nn.Module):
    """The root fails; the holder (nothing calls it) is looked through: its projection is traced
    on its own, the holder itself is no finding."""

    def __init__(self):
        super().__init__()
        self.state = StateHolder()

    def forward(self, x):
        if x.sum() > 0:  # FXS101 around
            x = x * 2
        return self.state.proj(x)
