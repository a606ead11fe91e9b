"""A forward that assigns traced values to its submodules (AdaIN style: a style MLP writes each
normalisation layer's weight and bias before the body runs). fxscope traces the failing parent,
then each child on its own: the child must meet the model as built (weight None), not the
proxies the parent's trace left on it (fx's "Found multiple different tracers")."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class AdaIN(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.weight = self.bias = None
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def forward(self, x):
        assert self.weight is not None and self.bias is not None, "assign weight and bias first"  # FXS107 assign
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, True)


class StyledDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), AdaIN())
        self.mlp = nn.Linear(4, 8)

    def forward(self, x, style):
        params = self.mlp(style)
        for m in self.modules():
            if isinstance(m, AdaIN):
                m.bias, m.weight = params[:, :4].reshape(-1), params[:, 4:].reshape(-1)
                if params.size(1) > 8:  # FXS101 style
                    params = params[:, 8:]
        return self.body(x)
