"""Models that trace cleanly: no finding at all, every module traced or a leaf."""

import math

import torch
import torch.nn.functional as F
from torch import nn

#: Example inputs (shape-aware tracing in the truth suite, with and without them).
INPUTS = {
    "MLP": {"x": [2, 8]}, "ConvNet": {"x": [2, 3, 8, 8]}, "Residual": {"x": [2, 5, 16]},
    "LayerStack": {"x": [2, 5, 16]}, "SelfAttention": {"x": [2, 5, 16]},
    "TiedLM": {"ids": {"shape": [2, 7], "dtype": "int64"}}, "WrappedHelper": {"x": [3, 8]},
    "MathOnSizes": {"q": [2, 4, 8], "k": [2, 4, 8]}, "ConcreteDefault": {"x": [2, 8]},
}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, 10)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.flatten(1))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return x + self.fc(self.norm(x))


class LayerStack(nn.Module):
    """A ModuleList loop and a ModuleDict loop."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Residual() for _ in range(3)])
        self.heads = nn.ModuleDict({"cls": nn.Linear(16, 2), "reg": nn.Linear(16, 1)})

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        outs = [head(x) for head in self.heads.values()]
        return torch.cat(outs, dim=-1)


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = 2
        self.qkv = nn.Linear(16, 48)
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class TiedLM(nn.Module):
    """Tied embedding/head weights, a buffer, torch.where and a learned scalar."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.attn = SelfAttention()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 50, bias=False)
        self.head.weight = self.embed.weight
        self.positions = nn.Parameter(torch.zeros(64, 16))
        self.temperature = nn.Parameter(torch.ones(()))
        self.register_buffer("channel_scale", torch.ones(16))

    def forward(self, ids):
        x = self.embed(ids) + self.positions[: ids.size(1)]
        x = x + self.attn(x)
        x = x + self.mha(x, x, x, need_weights=False)[0]
        x = torch.where(x > 0, x, x * 0.1)
        return self.head(self.norm(x) * self.channel_scale) / self.temperature


@torch.fx.wrap
def clamp_if_large(x, limit: float):
    if x.abs().max() > limit:
        return x.clamp(-limit, limit)
    return x


class WrappedHelper(nn.Module):
    """Control flow inside a torch.fx.wrap function is one opaque node."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return clamp_if_large(self.fc(x), 3.0)


class MathOnSizes(nn.Module):
    """fx wraps the `math` module: `math.sqrt` of a traced size is recorded as a node."""

    def forward(self, q, k):
        scores = q @ k.transpose(-2, -1)
        return scores / math.sqrt(q.size(-1))


class ConcreteDefault(nn.Module):
    """Python control flow on a plain Python default argument and on attributes."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.use_bias = True
        self.shift = nn.Parameter(torch.zeros(8))

    def forward(self, x, scale=None):
        y = self.fc(x)
        if scale is not None:
            y = y * scale
        if self.use_bias:
            y = y + self.shift
        return y
