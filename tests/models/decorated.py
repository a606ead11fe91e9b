"""Decorated forwards (functools.wraps) and `*args/**kwargs` forwards."""

import functools

import torch
from torch import nn


def logged(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return wrapper


class DecoratedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    @logged
    def forward(self, x):
        y = self.proj(x)
        if y.mean() > 0:  # FXS101 decorated
            y = y * 2
        return y


class VarArgs(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, *args, **kwargs):
        x = args[0]
        return self.proj(x) * kwargs.get("scale", 1.0)


class VarArgsCaller(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = VarArgs()

    def forward(self, x):
        return self.inner(x, scale=2.0)


class DecoratedChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    @logged
    def forward(self, x, residual=True):
        return self.proj(x) + x if residual else self.proj(x)  # FXS101 residual


class FailingWithDecoratedChildren(nn.Module):
    """The parent fails; its decorated and `*args` children are traced on their own."""

    def __init__(self):
        super().__init__()
        self.varargs = VarArgs()
        self.child = DecoratedChild()

    @logged
    def forward(self, x):
        y = self.child(self.varargs(x, scale=0.5), residual=False)
        return y[: len(y)]  # FXS103 parent


class DecoratedKeywordOnly(nn.Module):
    """A decorated forward with keyword-only and `**kwargs` parameters (fx alone rewrites the
    wrapper's code object to the inner signature and scrambles its arguments)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    @logged
    def forward(self, x, *, scale=2.0, **kwargs):
        y = self.proj(x) * scale
        return y + kwargs.get("bias", 0.0)
