"""Failures at depth 1, 2 and 3 of the module tree, with traceable modules around them."""

import torch
from torch import nn


class Rotary(nn.Module):
    """Traceable on its own: traced separately when its parent fails."""

    def forward(self, x):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([-x2, x1], dim=-1)


class Level3(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = Rotary()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = self.rotary(self.proj(x))
        if x.mean() > 0:  # FXS101 depth3
            x = x * 2
        return x


class Level2(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Level3()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        x = self.inner(self.norm(x))
        return x / len(x)  # FXS103 depth2


class Level1(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Level2()
        self.gate = nn.Linear(8, 8)

    def forward(self, x):
        x = self.inner(x) + self.gate(x)
        return x[:, : int(x.sum())]  # FXS104 depth1


class Deep(nn.Module):
    """Failures at depth 1 (`body`), 2 (`body.inner`) and 3 (`body.inner.inner`)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.body = Level1()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.stem(x)
        x = self.body(x)
        return self.head(x)


class Healthy2(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Level3()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.inner(self.norm(x))


class Healthy1(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Healthy2()
        self.gate = nn.Linear(8, 8)

    def forward(self, x):
        return self.inner(x) + self.gate(x)


class DeepOnlyLeafFails(nn.Module):
    """Only the depth-3 module fails; every ancestor keeps a faithful graph around it."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.body = Healthy1()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.stem(x)
        x = self.body(x)
        return self.head(x.relu())
