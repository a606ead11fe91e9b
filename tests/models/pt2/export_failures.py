"""Models that torch.export cannot export (and one it can), one kind of failure each.

Every class builds without arguments and takes one input, ``x`` (a float tensor, batch first).
``# FXS7xx <label>`` marks the line meant to fail; the agreement test
(tests/trace/test_export_truth.py) asks the installed torch (``torch.export.export`` and
``torch.export.draft_export``) instead of reading the markers.
"""

import torch
from torch import nn


class Exportable(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) + 1


class DataDependentBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:  # FXS701 branch
            y = y * 2
        return y + 1


class ItemSize(nn.Module):
    def forward(self, x):
        n = int(x.abs().sum().item())  # FXS701 item
        return x[:, :n] + 1


class NonzeroCount(nn.Module):
    def forward(self, x):
        hits = x.nonzero()
        if hits.shape[0] > 3:  # FXS701 nonzero
            return x + 1
        return x - 1


class TwoProblems(nn.Module):
    """Two data-dependent branches: export stops at the first, draft_export lists both."""

    def forward(self, x):
        a = x.sum().item()
        if a > 0:  # FXS701 first
            x = x + 1
        b = x.max().item()
        if b > 2:  # FXS701 second
            x = x * 2
        return x


@torch._dynamo.disable
def opaque(x):
    return x * 3


class DisabledCall(nn.Module):
    """Fine for non-strict export; strict export (Dynamo) cannot capture the disabled call."""

    def forward(self, x):
        y = x + 1
        return opaque(y) - 1  # FXS702 disable


class BatchSpecialised(nn.Module):
    """Fine with a static batch; a dynamic batch (``export-dynamic-batch``) is specialised here."""

    def forward(self, x):
        if x.shape[0] == 2:  # FXS703 batch
            return x + 1
        return x - 1


class WrongShapes(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(5, 5))

    def forward(self, x):
        return x @ self.weight  # FXS704 shapes


#: The corpus, in order.
MODELS = (Exportable, DataDependentBranch, ItemSize, NonzeroCount, TwoProblems, DisabledCall, BatchSpecialised,
          WrongShapes)
