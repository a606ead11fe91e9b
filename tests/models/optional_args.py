"""Classes whose constructor cannot run without arguments although discovery sees none required:
building one without arguments raises. When fxscope built them on its own (auto-targets), that is
"needs constructor arguments" (FXS405, with the exception), never a build error (FXS401)."""

from torch import nn

#: Classes of this file that cannot be built without arguments (on purpose).
NEEDS_ARGUMENTS = ("Quantizer", "MixedLinear")


class Quantizer(nn.Module):
    """vector-quantize-pytorch's pattern: every parameter optional, one of two required."""

    def __init__(self, *, dim=None, codebook_size=None):
        super().__init__()
        assert dim is not None or codebook_size is not None, "give dim or codebook_size"
        self.proj = nn.Linear(dim or codebook_size, dim or codebook_size)

    def forward(self, x):
        return self.proj(x)


class Mixin:
    """A LoRA-style mixin: its constructor passes whatever it gets on to the next base."""

    def __init__(self, *args, rank=4, **kwargs):
        super().__init__(*args, **kwargs)
        self.rank = rank


class MixedLinear(Mixin, nn.Linear):
    """The constructor that needs arguments is nn.Linear's, after the mixin's."""
