"""Example inputs for shape-aware tracing: specs from configuration, tensors from specs, and
defaults derived for transformers models from their config and main input name.

>>> specs = parse_inputs({"x": [2, 16], "ids": {"shape": [1, 8], "dtype": "int64"}})
>>> specs["ids"], example_tensors(specs)["x"].shape
(InputSpec(shape=(1, 8), dtype='int64'), torch.Size([2, 16]))
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Mapping

import torch
import torch.nn as nn

__all__ = ["InputSpec", "DTYPES", "parse_inputs", "resolve_specs", "example_tensors", "default_inputs", "default_concrete_args",
           "resolve_inputs"]

#: Accepted dtype names (configuration and factories) -> torch dtype.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64, "double": torch.float64,
    "float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "long": torch.int64, "int32": torch.int32, "int": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
    "complex64": torch.complex64,
}


@dataclass(frozen=True)
class InputSpec:
    """One example input: a shape and a dtype name (a key of :data:`DTYPES`)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def tensor(self, device: str | torch.device = "meta") -> torch.Tensor:
        """An uninitialised tensor of this spec (no memory on ``meta``)."""
        return torch.empty(self.shape, dtype=DTYPES[self.dtype], device=device)

    def to_json(self) -> dict[str, Any]:
        """``{"shape": [...], "dtype": "..."}``."""
        return {"shape": list(self.shape), "dtype": self.dtype}


def _spec(name: str, value: Any) -> InputSpec:
    if isinstance(value, InputSpec):
        return value
    if isinstance(value, torch.Tensor):
        dtype = next((k for k, v in DTYPES.items() if v == value.dtype), None)
        if dtype is None:
            raise ValueError(f"input {name!r}: unsupported dtype {value.dtype}")
        return InputSpec(tuple(value.shape), dtype)
    dtype = "float32"
    shape = value
    if isinstance(value, Mapping):
        unknown = set(value) - {"shape", "dtype"}
        if unknown or "shape" not in value:
            raise ValueError(f"input {name!r} must be a shape list or {{shape = [...], dtype = \"...\"}}, "
                             f"got keys {sorted(value)}")
        shape, dtype = value["shape"], value.get("dtype", "float32")
    if (not isinstance(shape, (list, tuple))
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise ValueError(f"input {name!r}: shape must be a list of non-negative integers, got {shape!r}")
    if dtype not in DTYPES:
        raise ValueError(f"input {name!r}: unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
    return InputSpec(tuple(shape), dtype)


def parse_inputs(data: Mapping[str, Any]) -> dict[str, InputSpec]:
    """Specs from ``{name: [shape]}`` / ``{name: {"shape": [...], "dtype": "int64"}}`` / tensors.
    Raises ValueError naming the input."""
    return {name: _spec(name, value) for name, value in data.items()}


def example_tensors(specs: Mapping[str, InputSpec], device: str | torch.device = "meta"
                    ) -> dict[str, torch.Tensor]:
    """One tensor per spec (meta by default: shapes and dtypes only)."""
    return {name: spec.tensor(device) for name, spec in specs.items()}


def _forward_params(model: nn.Module) -> set[str]:
    try:
        return set(inspect.signature(inspect.unwrap(type(model).forward)).parameters)
    except (TypeError, ValueError):
        return set()


def default_inputs(model: nn.Module, *, batch: int = 2, seq: int = 8) -> dict[str, InputSpec] | None:
    """Example inputs for a transformers model from its ``config`` and ``main_input_name``
    (token ids, pixel values, audio features; decoder ids for encoder-decoders); None for other
    models or an unknown main input."""
    config = getattr(model, "config", None)
    main = getattr(model, "main_input_name", None)
    if config is None or not isinstance(main, str):
        return None
    params = _forward_params(model)
    if main not in params:
        return None
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if isinstance(limit, int) and limit > 0:
        seq = min(seq, limit)
    ids = InputSpec((batch, seq), "int64")
    specs: dict[str, InputSpec] = {}
    if main == "input_ids":
        specs[main] = ids
    elif main == "pixel_values":
        vision = getattr(config, "vision_config", None) or config
        size = getattr(vision, "image_size", 224)
        size = size[0] if isinstance(size, (list, tuple)) else size
        specs[main] = InputSpec((batch, getattr(vision, "num_channels", 3), size, size))
    elif main == "input_features":
        frames = 2 * getattr(config, "max_source_positions", 1500)
        specs[main] = InputSpec((batch, getattr(config, "num_mel_bins", 80), frames))
    elif main == "input_values":
        specs[main] = InputSpec((batch, 16000))
    else:
        return None
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        limit = getattr(config, "max_target_positions", None)
        dec = min(seq, limit) if isinstance(limit, int) and limit > 0 else seq
        specs["decoder_input_ids"] = InputSpec((batch, dec), "int64")
    return specs


def default_concrete_args(model: nn.Module) -> dict[str, Any]:
    """Concrete args that go with :func:`default_inputs`: ``use_cache=False`` where the forward
    takes it (a graph cannot return a key/value cache object)."""
    return {"use_cache": False} if "use_cache" in _forward_params(model) else {}


def resolve_specs(configured: Mapping[str, Any] | str | None, returned: Mapping[str, Any] | None,
                  model: nn.Module) -> dict[str, InputSpec] | None:
    """The example input specs of a target: the configured ``inputs`` (a table, or ``"auto"`` for
    :func:`default_inputs`), else those its factory returned; None without any. Raises
    ValueError for invalid specs, or ``"auto"`` on a model without derivable inputs."""
    if configured == "auto":
        specs = default_inputs(model)
        if specs is None:
            raise ValueError(f"inputs = \"auto\" needs a transformers model with a known main input; "
                             f"{type(model).__name__} has none")
        return specs
    source = configured or returned
    if not source:
        return None
    if isinstance(source, str):
        raise ValueError(f"inputs must be a table of shapes or \"auto\", got {source!r}")
    return parse_inputs(source)


def resolve_inputs(configured: Mapping[str, Any] | str | None, returned: Mapping[str, Any] | None,
                   model: nn.Module) -> dict[str, torch.Tensor] | None:
    """Meta example tensors for a target, from :func:`resolve_specs`."""
    specs = resolve_specs(configured, returned, model)
    return example_tensors(specs) if specs is not None else None
