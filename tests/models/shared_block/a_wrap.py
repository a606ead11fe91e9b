"""A wrapper of ``block.Block`` that needs a constructor argument no call site gives: fxscope
builds it with an invented ``width``."""

from torch import nn

from block import Block


class Wrapper(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.block = Block(width)

    def forward(self, x):
        return self.block(x) + 1
