"""A block with an fx error in its gate, built on its own (from its defaults) and also inside a
wrapper of another file that fxscope builds with invented values (``a_wrap.py``, whose target id
sorts first): the finding on this file's line must speak for this file's own targets."""

import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # FXS101 own
            x = x * 2
        return x


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.gate = Gate()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.fc(self.gate(x)))  # NODES own
