"""The finding is inside helpers.py; the call line here is its related location."""

from torch import nn

from helpers import safe_scale, scale


class UsesHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return scale(self.proj(x))  # CALL helper


class UsesSafeHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return safe_scale(self.proj(x))
