"""fxscope's placeholders (one element for an iteration, 1 for `len()`) never cause findings of
their own, and never end the exploration of a forward."""

import torch
from torch import nn


class StarShapeUnpack(nn.Module):
    """vit-pytorch's attention: only the iteration is a finding, not the unpacking after it."""

    def __init__(self):
        super().__init__()
        self.heads = 2

    def forward(self, x):
        b, n, _, h = *x.shape, self.heads  # FXS102 star
        return x.reshape(b, n, h, -1)


class LenThenAssert(nn.Module):
    """x-transformers' TransformerWrapper: an assert on a `len()` result, then more forward."""

    def __init__(self):
        super().__init__()
        self.embeds = None
        self.proj = nn.Linear(4, 4)

    def forward(self, x, embed_ids: dict = {}):
        assert not ((self.embeds is not None) ^ (len(embed_ids) > 0)), "embeds"  # FXS103 len
        y = self.proj(x)
        if y.mean() > 0:  # FXS101 later
            y = -y
        return y


class AssertOnLength(nn.Module):
    def forward(self, x):
        n = len(x.shape)  # FXS103 rank
        assert n == 3, "expected (batch, seq, dim)"
        return x.sum(-1) if x.max() > 0 else x  # FXS101 after-assert


class WithLengthCheck(nn.Module):
    """The placeholder assert in a child: the child's forward is explored again past it."""

    def __init__(self):
        super().__init__()
        self.check = AssertOnLength()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.check(self.proj(x))


class UnpackRest(nn.Module):
    def forward(self, x):
        first, second, *rest = x.shape  # FXS102 rest
        return x.view(first, second, -1)


_ = torch
