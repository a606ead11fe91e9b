"""Failures inside an installed library (einops): each workspace call site is its own finding,
anchored at that call, with the fix for what failed (a library function or a library layer)."""

import torch
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from torch import nn


class SplitHeads(nn.Module):
    def forward(self, x):
        return rearrange(x, "b n (h d) -> b h n d", h=2)  # ANCHOR split


class MergeHeads(nn.Module):
    def forward(self, x):
        return rearrange(x, "b h n d -> b n (h d)")  # ANCHOR merge


class Tile(nn.Module):
    def forward(self, x):
        return repeat(x, "b n d -> b n d r", r=2)  # ANCHOR tile


class ThreeCallSites(nn.Module):
    """Three modules call einops at three lines: three findings, one per anchor."""

    def __init__(self):
        super().__init__()
        self.split = SplitHeads()
        self.merge = MergeHeads()
        self.tile = Tile()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        heads = self.split(self.proj(x))
        return self.merge(heads), self.tile(x)


class TwoInstances(nn.Module):
    """Two instances of one class calling einops at one line: one finding, two scopes."""

    def __init__(self):
        super().__init__()
        self.first = SplitHeads()
        self.second = SplitHeads()

    def forward(self, x):
        return self.first(x) + self.second(x)


class PatchEmbed(nn.Module):
    """vit-pytorch's patch embedding: an einops layer inside a Sequential."""

    def __init__(self):
        super().__init__()
        self.to_patches = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4),
            nn.Linear(48, 16),
        )

    def forward(self, img):
        return self.to_patches(img)  # ANCHOR layer


class WrappedHead(nn.Module):
    """Fine once `rearrange` is a wrapped function (`wrap-functions = ["einops:rearrange"]`)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return rearrange(self.proj(x), "b n (h d) -> b h n d", h=2).sum(-1)


class AutocastHeads(nn.Module):
    """A forward decorated by a wrapper from another module (torch's autocast): fx patches wrapped
    functions in the globals of that module, so `wrap-functions` does not reach this call (unless
    an undecorated forward of this file is traced too, which patches this file's globals)."""

    @torch.autocast("cpu", enabled=False)
    def forward(self, x):
        return rearrange(x, "b n (h d) -> b h n d", h=2)  # ANCHOR autocast


def einops_functions() -> tuple:
    """What to pass as ``wrap_functions`` for this file's functional einops calls."""
    return (rearrange, repeat)


_ = torch  # the corpus files import torch for their readers
