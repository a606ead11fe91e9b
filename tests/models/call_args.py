"""Concrete arguments seen at a call site are used when the child is traced on its own."""

import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)  # FXS301 proj

    def forward(self, x, flag=False, mode="mean"):
        # Traced on its own, `flag` and `mode` are placeholders (fx semantics): both lines are
        # findings then. Traced as FailingParent's child, the call site's values are used.
        if flag:  # FXS101 flag
            x = self.proj(x)
        if mode == "mean":  # FXS101 mode
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


class Forwarder(nn.Module):
    """Passes `**kwargs` on: traced on its own, fx makes `kwargs` one placeholder."""

    def __init__(self):
        super().__init__()
        self.scaler = Scaler()

    def forward(self, x, **kwargs):
        return self.scaler(x, **kwargs)  # FXS102 kwargs


class FailingParentOfForwarder(nn.Module):
    """Called without extra keywords, the forwarder is traced with an empty `**kwargs`."""

    def __init__(self):
        super().__init__()
        self.forwarder = Forwarder()

    def forward(self, x):
        y = self.forwarder(x)
        return y[: len(y)]  # FXS103 parent
