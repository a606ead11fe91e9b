"""A constructor that fails on the meta device but works on CPU (FXS406)."""

import torch
from torch import nn


class NeedsRealData(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("freqs", torch.arange(1, 5, dtype=torch.float32))
        self.width = int(self.freqs.sum().item())  # FXS406 item
        self.proj = nn.Linear(self.width, 4)

    def forward(self, x):
        return self.proj(x)
