"""Traced sizes passed to torch functions. torch's argument parser hands a traced size to fx
(which records the call) unless a hook makes it look like a Python int: none of these models is
a finding. Passing traced sizes one by one to a factory and slicing a buffer by them are."""

import torch
from torch import nn

#: Example inputs (shape-aware tracing in the truth suite, with and without them).
INPUTS = {
    "FactoryOfShapeTuple": {"x": [2, 3, 4]}, "RandomPermutation": {"x": [2, 3, 4, 4]},
    "NarrowByInputSize": {"x": [3, 5]}, "CausalMaskNarrow": {"att": [2, 2, 6, 6]},
    "FactoryManySizes": {"x": [2, 5, 3]}, "SizesOneByOne": {"x": [2, 3, 4]},
    "CausalMaskSlice": {"att": [2, 2, 6, 6]},
}


class FactoryOfShapeTuple(nn.Module):
    def forward(self, x):
        return x + torch.zeros((x.shape[0], x.shape[1], x.shape[2]))


class RandomPermutation(nn.Module):
    """timm sequencer's pattern: a permutation of the flattened spatial positions."""

    def forward(self, x):
        b, c, h, w = x.shape
        perm = torch.randperm(h * w)
        return x.flatten(2)[:, :, perm].argsort(-1).float()


class NarrowByInputSize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(64.0).reshape(8, 8))

    def forward(self, x):
        rows = torch.narrow(self.table, 0, 0, x.size(0))
        return x * rows.narrow(1, 0, x.size(1))


class CausalMaskNarrow(nn.Module):
    """minGPT after the fix its own hint suggests: `.narrow` on the mask buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

    def forward(self, att):
        T = att.size(-1)
        mask = self.bias.narrow(2, 0, T).narrow(3, 0, T)
        return att.masked_fill(mask == 0, float("-inf"))


class FactoryManySizes(nn.Module):
    def forward(self, x):
        n = x.size(1)
        pos = torch.arange(n).unsqueeze(0).expand(x.size(0), -1)
        pad = torch.nn.functional.pad(x, (0, x.size(-1)))
        return pad[..., :n].sum(-1) + pos + torch.full((x.size(0), n), 0.5) + x.new_zeros(x.size(0), n)


class SizesOneByOne(nn.Module):
    def forward(self, x):
        b, n = x.shape[0], x.shape[1]
        return x.sum(-1) + torch.ones(b, n)  # FXS104 varargs


class CausalMaskSlice(nn.Module):
    """minGPT's attention mask: a buffer sliced by the traced sequence length."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

    def forward(self, att):
        T = att.size(-1)
        return att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))  # FXS104 buffer
