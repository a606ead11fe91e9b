"""A traced value reaches non-torch code (FXS106)."""

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
        peak = x.max().item()  # FXS106 item
        return x / peak


class ToList(nn.Module):
    def forward(self, x):
        sizes = x.sum(-1).tolist()  # FXS106 tolist
        return x, sizes


class ToNumpy(nn.Module):
    def forward(self, x):
        arr = x.detach().numpy()  # FXS106 numpy
        return arr
