"""fxscope: shows which lines of PyTorch model code torch.fx cannot trace, and why."""

__version__ = "0.1.0"
