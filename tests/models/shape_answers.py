"""What shape-aware tracing reports as specialised (FXS501): only answers the graph depends on,
named as the source writes them. A slice bound recorded as a graph node stays generic; a
question about a buffer's shape does not depend on the inputs; a size reached only through
other nodes is named by the expression that asked."""

import torch
from torch import nn

INPUTS = {
    "SliceByInputSize": {"x": [2, 3, 8], "y": [2, 4]},
    "BufferLength": {"x": [2, 16]},
    "FinfoOfComputedValue": {"x": [2, 8]},
}


class SliceByInputSize(nn.Module):
    def forward(self, x, y):
        l = y.shape[1]
        return x[:, :, :l]


class BufferLength(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(16, 4))

    def forward(self, x):
        rows = [self.table[i] for i in range(len(self.table))]
        return x @ torch.stack(rows)


class FinfoOfComputedValue(nn.Module):
    """RMSNorm's epsilon from the dtype of a computed value: `torch.finfo` of a traced dtype."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(8))

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        eps = torch.finfo(h.dtype).eps  # FXS107 finfo
        return h * self.weight + eps
