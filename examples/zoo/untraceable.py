"""Lines torch.fx cannot trace, the way they show up in real models."""

import torch
from torch import nn

from zoo.utils import split_heads


class Attention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = split_heads(q, self.heads), split_heads(k, self.heads), split_heads(v, self.heads)
        att = q @ k.transpose(-2, -1)
        if mask is not None and mask.any():
            att = att.masked_fill(mask, float("-inf"))
        y = att.softmax(-1) @ v
        return self.out(y.transpose(1, 2).flatten(2))


class EarlyExit(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu()
            if x.norm() < 1e-3:
                break
        return x


class Transformer(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(Attention(dim) for _ in range(depth))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        steps = int(x.shape[1])
        return self.head(x[:, : steps - 1].mean(1))
