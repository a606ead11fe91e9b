"""A root forward whose return value fx cannot record as the graph output: the trace fails in
fx after the forward returned, and the finding is at the `return` that produced the value."""

import torch
from torch import nn


class State:
    """A plain Python object holding a tensor: fx has no graph form for it."""

    def __init__(self, hidden):
        self.hidden = hidden


class ReturnsObject(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return State(self.proj(x))  # FXS107 object


class ReturnsDictWithObject(nn.Module):
    """Two `return`s: the finding is at the one that ran."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.flat = False

    def forward(self, x):
        h = self.proj(x)
        if self.flat:
            return h
        return {"hidden": h, "state": State(h)}  # FXS107 dict


class ConsumesObject(nn.Module):
    """A child returning the object to its caller is fine: fx records what the root returns."""

    def __init__(self):
        super().__init__()
        self.inner = ReturnsObject()

    def forward(self, x):
        return torch.relu(self.inner(x).hidden)


class FailingCaller(nn.Module):
    """The root fails on its own line, so its child is traced on its own: the child's output is
    no finding there (its caller receives the object, which fx records), only a failed status."""

    def __init__(self):
        super().__init__()
        self.inner = ReturnsObject()

    def forward(self, x):
        state = self.inner(x)
        if state.hidden.sum() > 0:  # FXS101 caller
            return state.hidden
        return -state.hidden
