"""In-place ops whose result has no users (FXS201): dead code elimination drops them."""

import torch
from torch import nn


class DeadMethod(nn.Module):
    def forward(self, x):
        y = x * 2
        y.relu_()  # FXS201 method
        return y


class DeadFunction(nn.Module):
    def forward(self, x):
        y = x + 1
        torch.sigmoid_(y)  # FXS201 function
        return y


class DeadInplaceModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.proj(x)
        self.act(y)  # FXS201 module
        return y


class UsedInplaceIsFine(nn.Module):
    def forward(self, x):
        y = x * 2
        y = y.relu_()
        return y.add_(1)
