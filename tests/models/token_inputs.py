"""Forwards whose inputs only the model's structure fixes: tokens (B, H*W, C) on a grid the
constructor names (Swin's ``input_resolution``), patches of an image (``img_size // patch_size``
squared), and companions of the first input (a cross-attention context with its mask, a diffusion
timestep). Each builds from its defaults and traces cleanly; ``ClsTokens`` needs one token more than
any structure says (no inferred input runs on it)."""

import torch
from torch import nn


class TokenBlock(nn.Module):
    """Swin's block: ``x`` is (B, H*W, C) with H, W from ``input_resolution``."""

    def __init__(self, dim=8, input_resolution=(4, 6)):
        super().__init__()
        self.input_resolution = input_resolution
        self.norm = nn.LayerNorm(dim)
        self.mix = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, x):
        H, W = self.input_resolution
        torch._assert(x.shape[1] == H * W, "input feature has wrong size")
        y = self.norm(x).transpose(1, 2).reshape(x.shape[0], x.shape[2], H, W)
        return x + self.mix(y).flatten(2).transpose(1, 2)


class PatchTokens(nn.Module):
    """A ViT's encoder after the patch embedding: ``(img_size // patch_size) ** 2`` tokens."""

    def __init__(self, img_size=16, patch_size=4, embed_dim=8):
        super().__init__()
        num = (img_size // patch_size) ** 2
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.pos = nn.Parameter(torch.zeros(1, num, embed_dim))

    def forward(self, x):
        return self.proj(x + self.pos)


class CrossBlock(nn.Module):
    """Cross attention: ``context`` has its own width, ``mask`` keeps positions."""

    def __init__(self, dim=8, context_dim=6):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(context_dim, 2 * dim)

    def forward(self, x, context, mask):
        k, v = self.kv(context).chunk(2, dim=-1)
        scores = self.q(x) @ k.transpose(1, 2)
        scores = scores.masked_fill(~mask[:, None, :], -1e4)
        return scores.softmax(-1) @ v


class TimeConv(nn.Module):
    """A diffusion network's block: an image and one timestep per sample."""

    def __init__(self, channels=3, width=8):
        super().__init__()
        self.conv = nn.Conv2d(channels, width, 3, padding=1)
        self.time = nn.Linear(1, width)

    def forward(self, x, t):
        return self.conv(x) + self.time(t[:, None].float())[:, :, None, None]


class GatedResidual(nn.Module):
    """A residual update: ``residual`` is added back, shaped like ``x``."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, residual):
        return self.proj(x).sigmoid() * x + residual


class ClsTokens(nn.Module):
    """Tokens and a class token: ``x`` must be one longer than the grid."""

    def __init__(self, dim=8, input_resolution=(4, 4)):
        super().__init__()
        self.input_resolution = input_resolution
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        H, W = self.input_resolution
        torch._assert(x.shape[1] == H * W + 1, "needs a class token")  # no structure says so
        return self.norm(x)
