"""Classes whose required parameters only their names, annotations and uses say anything about: no
call site, no default, no value for those names elsewhere. zero-config invents what each calls for
(a shape, a flag, an index, a length, a float, a sequence, an activation, a larger size)."""

from typing import Callable

import torch
from torch import nn

NEEDS_ARGUMENTS = ("PatchDiscriminator", "Generator", "Resample", "Masked", "ConcatCombine", "Memory", "Scale",
                   "ShiftTokens", "GLU", "FpnHead", "GroupNormBlock", "SmallGroups", "GroupNorm32", "OddGroups",
                   "Volume", "Lookup")


class PatchDiscriminator(nn.Module):
    """PyTorch-GAN's discriminators: the shape is unpacked into channels, height and width."""

    def __init__(self, input_shape):
        super().__init__()
        channels, height, width = input_shape
        self.output_shape = (1, height // 2**2, width // 2**2)
        self.body = nn.Sequential(nn.Conv2d(channels, 8, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
                                  nn.Conv2d(8, 1, 4, stride=2, padding=1))

    def forward(self, img):
        return self.body(img)


class Generator(nn.Module):
    def __init__(self, latent_dim, img_shape):
        super().__init__()
        channels, self.h, self.w = img_shape
        self.fc = nn.Linear(latent_dim, self.h * self.w)
        self.out = nn.Conv2d(channels + 1, channels, 3, padding=1)

    def forward(self, x, z):
        z = self.fc(z).view(z.size(0), 1, self.h, self.w)
        return self.out(torch.cat((x, z), 1))


class Resample(nn.Module):
    """guided-diffusion's Downsample: a `use_*` flag."""

    def __init__(self, channels, use_conv):
        super().__init__()
        self.use_conv = use_conv
        if use_conv:
            self.op = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        else:
            self.op = nn.AvgPool2d(2)

    def forward(self, x):
        return self.op(x)


class Masked(nn.Module):
    """A flag only the body says is one: `causal` is only tested for truth."""

    def __init__(self, dim, causal):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("mask", torch.ones(4, 4).tril() if causal else torch.ones(4, 4))

    def forward(self, x):
        return self.proj(x) * self.mask.sum()


class ConcatCombine(nn.Module):
    """x-transformers: an index into the previous layers."""

    def __init__(self, dim, prev_layer_ind):
        super().__init__()
        self.prev_layer_ind = prev_layer_ind
        self.combine = nn.Linear(dim * 2, dim)

    def forward(self, x, prev_layers):
        skip = prev_layers[self.prev_layer_ind]
        return self.combine(torch.cat((skip, x), dim=-1))


class Memory(nn.Module):
    """A length and a `dim_*` size."""

    def __init__(self, dim_model, mem_len):
        super().__init__()
        self.memory = nn.Parameter(torch.zeros(mem_len, dim_model))

    def forward(self, x):
        return torch.cat((self.memory.expand(x.size(0), -1, -1), x), dim=1)


class Scale(nn.Module):
    """A float and a sub-network."""

    def __init__(self, value, fn):
        super().__init__()
        self.value = value
        self.fn = fn

    def forward(self, x):
        return self.fn(x) * self.value


class ShiftTokens(nn.Module):
    """A tuple of ints the body iterates."""

    def __init__(self, shifts, fn):
        super().__init__()
        self.fn = fn
        self.shifts = tuple(shifts)

    def forward(self, x):
        parts = x.chunk(len(self.shifts), dim=-1)
        shifted = [torch.roll(parts[i], amount, dims=1) for i, amount in enumerate(self.shifts)]
        return self.fn(torch.cat(shifted, dim=-1))


class GLU(nn.Module):
    """An activation: a callable module."""

    def __init__(self, dim_in, dim_out, activation: Callable):
        super().__init__()
        self.act = activation
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.act(gate)


class FpnHead(nn.Module):
    """DETR's mask head: a sequence of sizes, subscripted."""

    def __init__(self, dim, fpn_dims):
        super().__init__()
        self.adapters = nn.ModuleList([nn.Conv2d(fpn_dims[0], dim, 1), nn.Conv2d(fpn_dims[1], dim, 1),
                                       nn.Conv2d(fpn_dims[2], dim, 1)])

    def forward(self, a, b, c):
        return self.adapters[0](a) + self.adapters[1](b) + self.adapters[2](c)


class GroupNormBlock(nn.Module):
    """guided-diffusion's ResBlock: GroupNorm(32, channels) builds with neither 16 nor 2."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(32, channels)
        self.proj = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.proj(self.norm(x))


class SmallGroups(nn.Module):
    """Builds with the small size: it keeps it."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(2, channels)

    def forward(self, x):
        return self.norm(x)


class GroupNorm32(nn.GroupNorm):
    """No constructor of its own: nn.GroupNorm's parameters are required."""

    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class OddGroups(nn.Module):
    """No invented size builds it (GroupNorm(24, c) with c of 16, 2 or 128): could not build."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(24, channels)

    def forward(self, x):
        return self.norm(x)


class Volume(nn.Module):
    """The invented (C, H, W) is the wrong shape for a forward that wants four sizes."""

    def __init__(self, input_shape):
        super().__init__()
        self.input_shape = input_shape
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        c, d, h, w = self.input_shape  # MARK volume
        return self.proj(x.view(x.size(0), c, d, h, w))


class Lookup(nn.Module):
    """A mapping nothing invents: only `thing_map` is open."""

    def __init__(self, dim, thing_map):
        super().__init__()
        self.thing_map = thing_map
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
