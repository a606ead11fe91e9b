"""Tensor tables indexed by traced positions (rotary caches, position tables, embedding-like
lookups), as in most LLMs. torch indexes a real tensor with a traced index through
``__torch_function__``: plain fx records one ``__getitem__`` node, and so must fxscope (no
FXS103 from torch's index parser asking the index for its length), with or without inputs."""

import torch
from torch import nn

#: Example inputs of every model here, for shape-aware tracing (the truth suite traces each model
#: with and without them).
INPUTS = {
    "RotaryTable": {"x": [2, 3, 4], "input_pos": {"shape": [3], "dtype": "int64"}},
    "PositionBuffer": {"x": [2, 3, 4], "positions": {"shape": [2, 3], "dtype": "int64"}},
    "DerivedPositions": {"x": [2, 3, 4]},
    "TableRowsByMask": {"x": [2, 4], "keep": {"shape": [16], "dtype": "bool"}},
}


class RotaryTable(nn.Module):
    """gpt-fast's rotary cache: a plain tensor attribute (not a buffer) indexed by the positions."""

    def __init__(self):
        super().__init__()
        self.freqs_cis = torch.randn(16, 4)

    def forward(self, x, input_pos):
        freqs = self.freqs_cis[input_pos]
        return x * freqs


class PositionBuffer(nn.Module):
    """A registered position table looked up by a position-id input."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos_table", torch.randn(16, 4))

    def forward(self, x, positions):
        return x + self.pos_table[positions]


class DerivedPositions(nn.Module):
    """Positions computed from the input's shape, then used to index the table."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos_table", torch.randn(16, 4))

    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device)
        return x + self.pos_table[positions].unsqueeze(0)


class TableRowsByMask(nn.Module):
    """A boolean traced mask selects rows of a table."""

    def __init__(self):
        super().__init__()
        self.table = torch.randn(16, 4)

    def forward(self, x, keep):
        return x @ self.table[keep].t()
