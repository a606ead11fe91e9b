"""Any other exception while tracing (FXS107): the original message is kept."""

import torch
from torch import nn


def check_tensor(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(x).__name__}")  # FXS107 raise
    return x


class IsinstanceCheck(nn.Module):
    def forward(self, x):
        return check_tensor(x) * 2


class TracedDictKey(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {2: 1.0, 3: 0.5}

    def forward(self, x):
        return x * self.table[x.dim()]  # FXS107 key
