"""A module call fx cannot record as a node (an argument has no graph form): the caller fails at
the call line, and exploration goes on so that later calls are checked in the same run."""

from torch import nn


class Cache:
    """A plain Python object: fx has no graph form for it."""

    def __init__(self):
        self.items = []


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, cache):
        cache.items.append(x)
        if x.sum() > 0:  # FXS101 layer
            x = x * 2
        return self.proj(x)


class CacheStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x):
        cache = Cache()
        for layer in self.layers:
            x = layer(x, cache)  # FXS107 call
        return x.relu()
