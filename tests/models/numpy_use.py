"""A traced value reaches non-torch code (FXS106). `.item()`, `.tolist()` and `.numpy()` are
recorded as call_method nodes (plain fx traces them, the traced module computes the same); using
their result as a Python value is the finding."""

import numpy as np
import torch
from torch import nn


class NumpyReduction(nn.Module):
    def forward(self, x):
        return x * np.sum(x)  # FXS106 np-sum


class NumpyArray(nn.Module):
    def forward(self, x):
        arr = np.asarray(x)  # FXS106 asarray
        return x + torch.from_numpy(arr)


class ItemCall(nn.Module):
    def forward(self, x):
        peak = x.max().item()
        return x / peak


class ToList(nn.Module):
    def forward(self, x):
        sizes = x.sum(-1).tolist()
        return x, sizes


class ToNumpy(nn.Module):
    def forward(self, x):
        arr = x.detach().numpy()
        return arr


class ItemDecides(nn.Module):
    def forward(self, x):
        peak = x.max().item()
        if peak > 1:  # FXS101 item
            x = x / peak
        return x
