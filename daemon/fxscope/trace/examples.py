"""Real example tensors for the compile and export analyses.

Shape-aware fx tracing runs on meta tensors (shapes only). torch.compile runs the model, and
torch.export decides data-dependent questions on real values, so these analyses need real (small,
CPU) tensors: made here from the same ``inputs`` specs, deterministically (a seeded generator),
so a run is reproducible and another process can build the very same tensors. Tensors a factory
returned are used as they are.

>>> from fxscope.trace.inputs import InputSpec
>>> xs = real_inputs({"x": InputSpec((2, 3)), "ids": InputSpec((2, 4), "int64")})
>>> xs["x"].device.type, xs["ids"].tolist()[0], torch.equal(xs["x"], real_inputs({"x": InputSpec((2, 3))})["x"])
('cpu', [0, 0, 0, 0], True)
>>> grown = grow_batch(xs)
>>> tuple(grown["x"].shape), tuple(grown["ids"].shape), torch.equal(grown["x"][:2], xs["x"])
((3, 3), (3, 4), True)
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

import torch

from fxscope.trace.inputs import DTYPES, InputSpec, resolve_specs

__all__ = ["SEED", "batch_size", "grow_batch", "real_inputs", "resolve_real_inputs"]

#: Seed of the generator that fills floating-point example inputs (and of the model's build).
SEED = 0


def real_inputs(specs: Mapping[str, InputSpec], *, seed: int = SEED) -> dict[str, torch.Tensor]:
    """One CPU tensor per spec: floating point and complex from a normal distribution (a generator
    seeded with ``seed``, inputs in order), integers zero (a valid index, token id or class),
    booleans true (a mask that keeps everything)."""
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    for name, spec in specs.items():
        dtype = DTYPES[spec.dtype]
        if dtype.is_floating_point or dtype.is_complex:
            out[name] = torch.randn(spec.shape, generator=generator, dtype=dtype)
        elif dtype == torch.bool:
            out[name] = torch.ones(spec.shape, dtype=dtype)
        else:
            out[name] = torch.zeros(spec.shape, dtype=dtype)
    return out


def resolve_real_inputs(configured: Mapping[str, Any] | str | None, returned: Mapping[str, Any] | None,
                        model: torch.nn.Module) -> dict[str, Any] | None:
    """Real example inputs of a target: the tensors its factory returned (as they are), else
    tensors made by :func:`real_inputs` from the configured specs (``"auto"``: derived from a
    transformers model's config); None without any. Raises ValueError for invalid specs."""
    if not configured and returned and all(isinstance(v, torch.Tensor) for v in returned.values()):
        return {name: value for name, value in returned.items()}
    specs = resolve_specs(configured, returned, model)
    return real_inputs(specs) if specs is not None else None


def batch_size(inputs: Mapping[str, Any]) -> int | None:
    """The batch size of ``inputs``: the most common first dimension of its tensors (None without
    a tensor of at least one dimension)."""
    sizes = Counter(v.shape[0] for v in inputs.values() if isinstance(v, torch.Tensor) and v.dim() >= 1)
    return sizes.most_common(1)[0][0] if sizes else None


def grow_batch(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` with a batch one larger: every tensor whose first dimension is the batch size
    gets its first row again at the end (same values, so a second call differs only in size)."""
    batch = batch_size(inputs)
    out = dict(inputs)
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == batch and batch:
            out[name] = torch.cat([value, value[:1]])
        elif isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == batch:
            out[name] = value.new_zeros((1, *value.shape[1:]))  # an empty batch grows to one
    return out
