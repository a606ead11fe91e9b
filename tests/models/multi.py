"""Every problem in one forward is reported in one run."""

import torch
from torch import nn


class ManyProblems(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = self.proj(x)
        if x.sum() > 0:  # FXS101 if
            x = x + 1
        n = len(x)  # FXS103 len
        k = int(x.max())  # FXS104 int
        return x[:n, :k]
