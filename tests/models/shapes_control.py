"""Control flow on shapes: untraceable without example inputs (the FXS10x markers), answered
with them (FXS501 at the same expressions, the graph specialised to the example shapes).

Every model here is traced with ``x`` of shape [2, 4, 8] (and ``y`` [2, 4, 8] where present)."""

import torch
from torch import nn

#: Example inputs (the shapes the docstring names), for the truth suite.
INPUTS = {name: {"x": [2, 4, 8]} for name in (
    "ProjectIfWidthDiffers", "RankBranch", "LenScale", "LoopOverBatch", "IterateHeads", "StarView",
    "MixedShapeAndValue", "Block", "Stack")}
INPUTS["TwoInputs"] = {"x": [2, 4, 8], "y": [1, 4, 8]}


class ProjectIfWidthDiffers(nn.Module):
    """`if x.size(-1) != self.dim` picks a projection by width."""

    def __init__(self, dim=16):
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(8, dim)

    def forward(self, x):
        if x.size(-1) != self.dim:  # FXS101 width
            x = self.proj(x)
        return x.relu()


class RankBranch(nn.Module):
    """`x.dim() == 2` adds a batch dimension."""

    def forward(self, x):
        if x.dim() == 2:  # FXS101 rank
            x = x.unsqueeze(0)
        return x * 2


class LenScale(nn.Module):
    def forward(self, x):
        return x / len(x)  # FXS103 len


class LoopOverBatch(nn.Module):
    """`range(x.shape[0])` runs once per batch row."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        rows = []
        for i in range(x.shape[0]):  # FXS104 range
            rows.append(self.norm(x[i]) * (i + 1))
        return torch.stack(rows)


class IterateHeads(nn.Module):
    """Iteration over a dimension of known length (`unbind`)."""

    def forward(self, x):
        total = torch.zeros_like(x[:, 0])
        for h in x.unbind(1):  # FXS102 unbind
            total = total + h.tanh()
        return total


class StarView(nn.Module):
    """`x.view(*x.shape[:-1], 2, -1)` splits the last dimension."""

    def forward(self, x):
        return x.view(*x.shape[:-1], 2, -1).sum(-1)  # FXS102 view


class MixedShapeAndValue(nn.Module):
    """A shape question (answered) next to a value question (still FXS101)."""

    def forward(self, x):
        if x.shape[1] > 2:  # FXS101 shape
            x = x[:, :2]
        if x.sum() > 0:  # FXS101 value
            return x
        return -x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        b, t, c = x.shape
        if t > 1:  # FXS101 block
            x = x + x.roll(1, dims=1)
        return self.fc(x).reshape(b * t, c).reshape(b, t, c)


class Stack(nn.Module):
    """A shape question inside two instances of a child: one finding, two scopes."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class TwoInputs(nn.Module):
    """Questions on the second input too."""

    def forward(self, x, y):
        if x.shape != y.shape:  # FXS101 pair
            y = y.expand_as(x)
        return x + y
