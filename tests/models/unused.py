"""A submodule never called (FXS301) and a parameter never used (FXS302) in forward."""

import torch
from torch import nn


class UnusedSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.spare = nn.Linear(4, 4)  # FXS301 spare

    def forward(self, x):
        return self.used(x)


class UnusedParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))
        self.bias = nn.Parameter(torch.zeros(4))  # FXS302 bias
        self.frozen = nn.Parameter(torch.zeros(4), requires_grad=False)

    def forward(self, x):
        return x * self.weight


class Branchy(nn.Module):
    """Only one branch is taken for the concrete default: the other head is never called."""

    def __init__(self):
        super().__init__()
        self.head_a = nn.Linear(4, 4)
        self.head_b = nn.Linear(4, 4)  # FXS301 head-b
        self.use_b = False

    def forward(self, x):
        return self.head_b(x) if self.use_b else self.head_a(x)


class HeadWhenNoMask(nn.Module):
    """The head runs only when the optional `mask` is None: traced as an input, it never is."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 4)  # FXS301 head-no-mask

    def forward(self, x, mask=None):
        x = self.body(x)
        if mask is None:
            x = self.head(x)
        else:
            x = x * mask
        return x
