"""Models with known torch.compile graph breaks (and two without), one kind of break each.

Every class builds without arguments and takes one input, ``x`` (a float tensor, batch first).
The marker comment ``# FXS601 <label>`` names the line where the break is meant to be; the
agreement test (tests/trace/test_compile_truth.py) does not read the markers: it asks the installed
torch (``torch._dynamo.explain`` and ``TORCH_LOGS=graph_breaks``) where the breaks are and checks
that fxscope reports exactly those lines.
"""

import copy

import torch
from torch import nn


class Clean(nn.Module):
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
        if y.sum() > 0:  # FXS601 branch
            y = y * 2
        return y + 1


class ItemCall(nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()  # FXS601 item
        return x / (scale + 1)


class PrintCall(nn.Module):
    def forward(self, x):
        y = x * 2
        print("forward", y.shape)  # FXS601 print
        return y - 1


class PrintFirst(nn.Module):
    """A break before any op: torch.compile logs it, but no graph ends there (explain lists none)."""

    def forward(self, x):
        print("start")  # FXS601 print-first
        return x + 1


class UnsupportedBuiltin(nn.Module):
    def forward(self, x):
        y = x + 1
        with open(__file__) as fh:  # FXS601 open
            fh.readline()
        return y * 2


class SortedByIdentity(nn.Module):
    def forward(self, x):
        y = x + 1
        parts = sorted([y, x], key=id)  # FXS601 sorted
        return parts[0] * 2


def noisy(x):
    yield x + 1
    print("between")  # FXS601 generator
    yield x * 2


class GeneratorWithPrint(nn.Module):
    def forward(self, x):
        return sum(noisy(x)) + 1


def pairs(x):
    yield x + 1
    yield x * 2


class GeneratorAcrossBreak(nn.Module):
    def forward(self, x):
        steps = pairs(x)
        first = next(steps)
        print("mid")  # FXS601 generator-alive
        return first + next(steps)


class NumpyCall(nn.Module):
    def forward(self, x):
        y = x * 2
        mean = y.detach().numpy().mean()  # FXS601 numpy
        return y + float(mean)


class DynamicShape(nn.Module):
    def forward(self, x):
        return x[x > 0].sum() + 1  # FXS601 nonzero


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x.sum().item()  # FXS601 autograd-function

    @staticmethod
    def backward(ctx, grad):
        return grad


class CustomAutogradFunction(nn.Module):
    def forward(self, x):
        return Scale.apply(x + 1) * 3


@torch._dynamo.disable
def opaque(x):
    return x * 3


class DisabledCall(nn.Module):
    def forward(self, x):
        y = x + 1
        y = opaque(y)  # FXS601 disable
        return y - 1


class DeepCopy(nn.Module):
    def forward(self, x):
        y = x + 1
        z = copy.deepcopy(y)  # FXS601 deepcopy
        return z * 2


class Helper(nn.Module):
    def forward(self, x):
        return log_and_add(x) + log_and_add(x * 2)


def log_and_add(x):
    y = x + 1
    print("helper")  # FXS601 helper
    return y


class LoopBranch(nn.Module):
    """A break inside a loop: torch.compile gives up on the whole function (it runs eagerly)."""

    def forward(self, x):
        for i in range(3):
            if x.sum() > i:  # FXS601 loop
                x = x + 1
        return x


class ThirdPartySkipped(nn.Module):
    def forward(self, x):
        import tqdm

        y = x + 1
        tqdm.tqdm.write("step")  # FXS601 tqdm
        return y * 2


class ThirdPartyInside(nn.Module):
    """Breaks inside an installed library (transformers): located there, anchored at this line."""

    def forward(self, x):
        from transformers.utils import to_py_obj

        y = x + 1
        n = to_py_obj(y.sum())  # FXS601 transformers
        return y * n


class BatchSpecialised(nn.Module):
    """No break; a Python decision on the batch size makes the second batch size recompile."""

    def forward(self, x):
        if x.shape[0] == 2:
            return x + 1
        return x - 1


#: The corpus, in order; ThirdPartyInside needs transformers.
MODELS = (Clean, DataDependentBranch, ItemCall, PrintCall, PrintFirst, UnsupportedBuiltin, SortedByIdentity,
          GeneratorWithPrint, GeneratorAcrossBreak, NumpyCall, DynamicShape, CustomAutogradFunction, DisabledCall,
          DeepCopy, Helper, LoopBranch, ThirdPartySkipped, ThirdPartyInside, BatchSpecialised)
