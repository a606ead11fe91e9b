"""Example inputs for a class target, inferred and checked in the worker.

Candidates, in order: the forward calls on literal tensors the repository shows (discovery's
``input_hints``: tests, ``__main__`` blocks, doctests, README and docs code blocks, notebooks), the
conventions libraries define on the built model (Lightning's ``example_input_array``,
transformers' ``dummy_inputs`` and main input, timm's ``pretrained_cfg["input_size"]``), shapes
the forward's annotations or docstring give (their named dimensions filled from the model), and the
model's structure (the first layer that consumes the input: ``Conv2d.in_channels`` with a spatial
size from ``image_size``/``img_size``/``patch_size``, ``Linear.in_features``, ``Embedding`` ->
token ids as long as ``block_size``/``max_seq_len``/``context_length``; tokens ``(B, H*W, C)`` from
an ``input_resolution`` or ``window_size`` pair, ``img_size // patch_size``, ``num_patches``), with a
small search over the sizes they leave open; a forward's other required tensors only where their
names fix them from the first (a mask, a context, keys and values, a residual or a loss's target, a
diffusion timestep).

A candidate is kept only when the model's eager forward runs on it: first on the meta device
(shapes only, cheap: a shape error there rejects it; a question meta cannot answer, ``.item()``,
leaves it open), then on small real CPU tensors (torch's generator seeded) on a model built for the
check alone. An input that does not run is never used: no finding comes from a made-up input.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from fxscope.model.inputs import InferredInputs, InputCandidate, TensorShape
from fxscope.model.recipe import Recipe

__all__ = ["Inference", "class_factory", "infer_inputs", "specs_table"]

#: Attempts: forwards on the meta device, and on real CPU tensors.
MAX_META_TRIES = 12
MAX_CPU_TRIES = 3
#: Elements of all inputs of a candidate together (larger ones are not tried).
MAX_ELEMENTS = 1 << 24
#: Batch size of inputs fxscope makes up (2: batch norm needs more than one value per channel).
BATCH = 2

_SPATIAL = ("image_size", "img_size", "input_size", "resolution", "input_resolution", "img_res", "image_res",
            "size", "height")
#: Names of an image model's input size (``input_size`` is not one: an LSTM's features).
_IMAGE_SIZES = ("image_size", "img_size", "resolution", "input_resolution", "img_res", "image_res")
_LENGTH = ("block_size", "max_seq_len", "max_seq_length", "context_length", "seq_len", "seq_length", "max_len",
           "max_length", "n_ctx", "n_positions", "max_position_embeddings", "num_tokens", "sequence_length")
_ALIASES: dict[str, tuple[str, ...]] = {
    "batch": ("b", "batch", "bs", "batch_size", "n_batch", "nb"),
    "channels": ("c", "ch", "channels", "in_channels", "in_chans", "num_channels", "c_in", "in_ch", "n_channels"),
    "spatial": ("h", "w", "height", "width", "hw", "s", *_SPATIAL),
    "length": ("t", "l", "n", "seq", "seqlen", "length", "len", "tokens", "num_tokens", *_LENGTH),
    "features": ("d", "dim", "hidden", "hidden_dim", "hidden_size", "d_model", "embed_dim", "n_embd", "features",
                 "in_features", "emb", "e", "d_in", "input_dim", "in_dim", "channels_last"),
}
_SEARCH = {"spatial": (32, 64, 224, 16, 128), "length": (8, 16, 32, 64), "features": (16, 32, 64, 128),
           "channels": (3, 1, 4, 16), "other": (8, 16, 32, 3)}


@dataclass
class Inference:
    """What inference found: the ``inputs`` the eager forward ran on (None: none did) and one line
    per candidate tried, for the info finding that says why there were none."""

    inputs: InferredInputs | None = None
    tried: list[str] = field(default_factory=list)
    params: tuple[str, ...] = ()


def class_factory(cls: Any, build: Recipe | None, is_user_file: Callable[[str], bool]) -> Callable[[], Any]:
    """The constructor call the fx analysis built the class with (its :class:`Recipe`), as a
    factory: the class itself for its defaults."""
    if build is None or build.kind == "defaults":
        return cls  # type: ignore[no-any-return,unused-ignore]
    from fxscope.job.construct import evaluate

    return functools.partial(evaluate, build.expr, is_user_file)


def _forward_params(model: Any) -> tuple[list[str], list[str], bool] | None:
    """(parameters in order, required ones, takes ``*args``) of ``model.forward``; None when it
    has no signature."""
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return None
    names, required, var = [], [], False
    for p in signature.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            var = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY):
            names.append(p.name)
            if p.default is p.empty:
                required.append(p.name)
    return names, required, var


def _numbers(model: Any, factory: Callable[[], Any],
             pairs: dict[str, tuple[int, ...]] | None = None) -> dict[str, int]:
    """Integers the model says about itself: its attributes, its config's, its constructor's
    defaults and the arguments it was built with (lower-cased names); a pair or triple counts as
    its last item, and goes whole into ``pairs`` when given (``input_resolution=(56, 56)``)."""
    found: dict[str, int] = {}

    def take(mapping: Mapping[str, Any]) -> None:
        for key, value in mapping.items():
            if isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
                found.setdefault(key.lower(), value)
            elif isinstance(key, str) and isinstance(value, (tuple, list)) and len(value) in (2, 3) and all(
                    isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 4096 for v in value):
                found.setdefault(key.lower(), value[-1])
                if pairs is not None:
                    pairs.setdefault(key.lower(), tuple(value))

    take({k: v for k, v in vars(model).items() if not k.startswith("_")})
    for name in ("config", "cfg", "args", "hparams", "params"):
        holder = getattr(model, name, None)
        if holder is not None and not callable(holder):
            try:
                take(holder if isinstance(holder, Mapping) else vars(holder))
            except TypeError:
                pass
    keywords = getattr(factory, "args", None)
    if keywords and hasattr(keywords[0], "kwargs"):  # functools.partial(evaluate, Call, ...)
        from fxscope.model.recipe import Lit, Seq

        def plain(value: Any) -> Any:
            if isinstance(value, Seq):
                return [plain(v) for v in value.items]
            return value.value if isinstance(value, Lit) else None

        take({k: plain(v) for k, v in keywords[0].kwargs})
        try:  # positional arguments, by the constructor's parameter names
            names = [n for n in inspect.signature(type(model).__init__).parameters][1:]
            take(dict(zip(names, (plain(v) for v in keywords[0].args))))
        except (TypeError, ValueError):
            pass
    try:
        take({n: p.default for n, p in inspect.signature(type(model).__init__).parameters.items()})
    except (TypeError, ValueError):
        pass
    return found


def _first_layer(model: Any) -> Any | None:
    import torch.nn as nn

    consumers = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.Embedding, nn.LSTM, nn.GRU, nn.RNN, nn.LayerNorm,
                 nn.BatchNorm1d, nn.BatchNorm2d, nn.MultiheadAttention)
    for module in model.modules():
        if isinstance(module, consumers):
            return module
    return None


def _group(name: str) -> str:
    lowered = name.lower()
    for group, names in _ALIASES.items():
        if lowered in names:
            return group
    return "other"


def _options(name: str, position: int, rank: int, numbers: Mapping[str, int], layer: Any) -> list[int]:
    """Values for an open dimension ``name`` at ``position`` of a tensor of ``rank``."""
    import torch.nn as nn

    group = _group(name)
    leading = position == 0 and rank >= 2 and (group == "other" or name.lower() == "n")
    if group == "batch" or leading:  # `b`, `batch`; a first dimension named `n` or nothing known
        return [BATCH]
    values: list[int] = []
    own = numbers.get(name.lower())
    if own is not None:
        values.append(own)
    if group == "channels" and isinstance(layer, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        values.append(layer.in_channels)
    if group in ("features", "channels") and isinstance(layer, nn.Linear):
        values.append(layer.in_features)
    if group in ("features", "channels") and isinstance(layer, nn.LayerNorm):
        values.append(layer.normalized_shape[-1])
    if group in ("features", "channels") and isinstance(layer, (nn.LSTM, nn.GRU, nn.RNN)):
        values.append(layer.input_size)
    if group in ("features", "channels") and isinstance(layer, nn.MultiheadAttention):
        values.append(layer.embed_dim)
    keys = {"spatial": _SPATIAL, "length": _LENGTH, "features": _ALIASES["features"],
            "channels": _ALIASES["channels"]}.get(group, ())
    values += [numbers[k] for k in keys if k in numbers]
    if group == "length":
        values = [min(v, 64) if v > 64 else v for v in values]
    values += list(_SEARCH[group])
    return list(dict.fromkeys(v for v in values if v > 0))[:4]


def _fill(specs: tuple[tuple[str, TensorShape], ...], numbers: Mapping[str, int], layer: Any
          ) -> Iterator[tuple[tuple[str, TensorShape], ...]]:
    """Concrete versions of ``specs`` (a name keeps one value across inputs), most likely first."""
    names: list[str] = []
    choices: list[list[int]] = []
    for _, spec in specs:
        for position, dim in enumerate(spec.shape):
            if isinstance(dim, str) and dim not in names:
                names.append(dim)
                choices.append(_options(dim, position, len(spec.shape), numbers, layer))
    for pick in itertools.islice(itertools.product(*choices), 6):
        value = dict(zip(names, pick))
        yield tuple((n, TensorShape(tuple(value[d] if isinstance(d, str) else d for d in s.shape), s.dtype))
                    for n, s in specs)


def _bind(candidate: InputCandidate, params: list[str]) -> tuple[tuple[str, TensorShape], ...] | None:
    if len(candidate.args) > len(params):
        return None
    bound = list(zip(params, candidate.args))
    names = {n for n, _ in bound}
    for name, spec in candidate.kwargs:
        if name in names or name not in params:
            return None
        bound.append((name, spec))
    return tuple(bound)


def _tensor_spec(value: Any) -> TensorShape | None:
    import torch

    from fxscope.trace.inputs import DTYPES

    if not isinstance(value, torch.Tensor):
        return None
    dtype = next((k for k, v in DTYPES.items() if v == value.dtype), None)
    return TensorShape(tuple(int(d) for d in value.shape), dtype) if dtype else None


def _conventions(model: Any, params: list[str]) -> Iterator[InferredInputs]:
    """Inputs the libraries' conventions give on the built model."""
    try:
        example = getattr(model, "example_input_array", None)
    except Exception:  # noqa: BLE001 - a property of user code may raise anything
        example = None
    if example is not None:
        values = example if isinstance(example, (tuple, list)) else [example]
        if isinstance(example, Mapping):
            specs = [(str(k), _tensor_spec(v)) for k, v in example.items()]
        else:
            specs = [(p, _tensor_spec(v)) for p, v in zip(params, values)]
        if specs and all(s is not None for _, s in specs):
            yield InferredInputs(tuple((n, s) for n, s in specs if s is not None), "convention",
                       text="its example_input_array")
    try:
        dummy = getattr(model, "dummy_inputs", None) if "dummy_inputs" in dir(type(model)) else None
    except Exception:  # noqa: BLE001 - a property of user code may raise anything
        dummy = None
    if isinstance(dummy, Mapping) and dummy:
        specs = [(str(k), _tensor_spec(v)) for k, v in dummy.items() if k in params]
        if specs and all(s is not None for _, s in specs):
            yield InferredInputs(tuple((n, s) for n, s in specs if s is not None), "convention", text="its dummy_inputs")
    from fxscope.trace.inputs import default_inputs

    try:
        hf = default_inputs(model)
    except Exception:  # noqa: BLE001
        hf = None
    if hf:
        main = getattr(model, "main_input_name", "")
        yield InferredInputs(tuple((n, TensorShape(s.shape, s.dtype)) for n, s in hf.items()), "convention",
                   text=f"its main input `{main}` and config")
    for attr in ("pretrained_cfg", "default_cfg"):
        cfg = getattr(model, attr, None)
        size = cfg.get("input_size") if isinstance(cfg, Mapping) else None
        if isinstance(size, (tuple, list)) and len(size) == 3 and all(isinstance(d, int) for d in size) and params:
            yield InferredInputs(((params[0], TensorShape((BATCH, *size))),), "convention",
                       text=f"its {attr}[\"input_size\"]")
            break


def _structure(model: Any, params: list[str], required: list[str], numbers: Mapping[str, int],
               pairs: Mapping[str, tuple[int, ...]], layer: Any) -> Iterator[InferredInputs]:
    """Inputs the first layer that consumes the input implies: for a forward with one required
    input, or one whose other required inputs are companions its name fixes from the first
    (:func:`_companion`: a mask, a context, keys and values, a residual, a loss's target, a
    diffusion timestep)."""
    if not params or (required and required[0] != params[0]):
        return
    others = [p for p in required if p != params[0]]
    rules = [_companion(p, params[0]) for p in others]
    if not all(rules):
        return
    for first in _first_input(model, params[0], numbers, pairs, layer):
        if not others:
            yield first
            continue
        (_, spec), = first.specs
        made = [(p, rule(spec, numbers)) for p, rule in zip(others, rules) if rule is not None]
        if any(m is None for _, m in made):
            continue
        specs = (*first.specs, *((p, m) for p, m in made if m is not None))
        said = ", ".join(f"{p} {m.render()}" for p, m in made if m is not None)
        yield InferredInputs(specs, "structure", text=f"{first.text}, with {said} to match")


#: Names of forward parameters whose shape follows from the first input's (see :func:`_companion`).
_MASKS = ("mask", "attn_mask", "attention_mask", "key_padding_mask", "src_mask", "padding_mask", "src_key_padding_mask",
          "pad_mask", "x_mask")
_CONTEXTS = ("context", "cond", "encoder_hidden_states", "memory", "enc", "encoder_out", "enc_out", "cross")
_TIMESTEPS = ("t", "time", "times", "timestep", "timesteps", "noise_level", "sigma", "sigmas")
_CONTEXT_DIMS = ("context_dim", "dim_context", "cross_attention_dim", "cond_dim", "encoder_dim", "enc_dim")
#: A residual stream added back to the first input (``forward(x, residual)``): shaped like it.
_LIKE_FIRST = ("residual", "res", "skip", "shortcut", "identity", "prev", "previous")
#: (first, other) parameter pairs where the other is shaped like the first: keys and values like
#: queries, a loss's target like its prediction.
_PAIRED = (("q", "k"), ("q", "v"), ("query", "key"), ("query", "value"), ("queries", "keys"), ("queries", "values"),
           ("pred", "target"), ("preds", "targets"), ("prediction", "target"), ("input", "target"))


def _companion(param: str, first: str) -> Callable[[TensorShape, Mapping[str, int]], TensorShape | None] | None:
    """How a required forward parameter ``param`` follows from the first input's shape, None when
    its name does not say (then no structure candidate is made: nothing is invented)."""
    name = param.lower()
    if name in _MASKS:
        # a padding mask over the first input's positions (all true: it keeps everything)
        return lambda s, _: TensorShape(tuple(s.shape[:2]), "bool") if len(s.shape) >= 2 else None
    if name in _CONTEXTS:
        def context(s: TensorShape, numbers: Mapping[str, int]) -> TensorShape | None:
            if len(s.shape) != 3 or s.dtype != "float32":
                return None
            d = next((numbers[k] for k in _CONTEXT_DIMS if k in numbers), s.shape[-1])
            return TensorShape((s.shape[0], s.shape[1], d))
        return context
    if name in _TIMESTEPS:
        return lambda s, _: TensorShape((s.shape[0],)) if s.shape else None  # one (float) time per sample
    if name in _LIKE_FIRST or (first.lower(), name) in _PAIRED:
        return lambda s, _: s  # shaped like the first input
    return None


def _tokens(numbers: Mapping[str, int], pairs: Mapping[str, tuple[int, ...]]) -> list[tuple[int, str]]:
    """Token counts the model's structure gives, with what gave them: a grid of tokens
    (``input_resolution=(56, 56)``, a ``window_size`` pair: H*W), an image cut into patches
    (``img_size // patch_size`` squared), a ``num_patches`` or ``seq_len``."""
    found: list[tuple[int, str]] = []
    for key in _TOKEN_GRIDS:
        grid = pairs.get(key)
        if grid is None and key in ("input_resolution", "patches_resolution") and key in numbers:
            grid = (numbers[key], numbers[key])
        if grid is not None and len(grid) == 2:
            found.append((grid[0] * grid[1], f"its {key}=({grid[0]}, {grid[1]}) as {grid[0] * grid[1]} tokens"))
    patch = numbers.get("patch_size")
    size = next(((k, numbers[k]) for k in ("img_size", "image_size") if k in numbers), None)
    if patch and size is not None and size[1] % patch == 0:
        n = (size[1] // patch) ** 2
        found.append((n, f"its {size[0]}={size[1]} and patch_size={patch} as {n} tokens"))
    for key in _TOKEN_COUNTS:
        if key in numbers:
            n = min(numbers[key], 256)
            found.append((n, f"its {key}={numbers[key]}" + (f" (at most {n} tokens)" if n != numbers[key] else "")))
    return _first_of_each(found)


def _first_of_each(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``found`` without the later pairs of a number already there."""
    seen: dict[int, tuple[int, str]] = {}
    for n, said in found:
        seen.setdefault(n, (n, said))
    return list(seen.values())


#: Names of the structure that count tokens (:func:`_tokens`).
_TOKEN_GRIDS = ("input_resolution", "patches_resolution", "window_size", "grid_size", "feature_resolution")
_TOKEN_COUNTS = ("num_patches", "seq_len", "seq_length", "num_tokens", "n_tokens", "max_seq_len")


def _first_input(model: Any, name: str, numbers: Mapping[str, int], pairs: Mapping[str, tuple[int, ...]],
                 layer: Any) -> Iterator[InferredInputs]:
    """Inputs for the forward's first parameter ``name`` that the first layer implies."""
    import torch.nn as nn

    spatial = next(((k, numbers[k]) for k in _IMAGE_SIZES if k in numbers), None)
    patch = numbers.get("patch_size")
    if (spatial is not None or patch) and not isinstance(layer, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        # an image model whose first layer comes after a patchify (a Rearrange, an unfold)
        channels = next((numbers[k] for k in ("channels", "in_channels", "in_chans", "num_channels", "in_ch")
                         if k in numbers), 3)
        sizes = [(spatial[1], f"its {spatial[0]}={spatial[1]}")] if spatial is not None else [
            (s, f"its patch_size={patch}, {s}x{s}") for s in (32, 64, 224) if patch and s % patch == 0]
        for size, said in sizes:
            yield InferredInputs(((name, TensorShape((BATCH, channels, size, size))),), "structure",
                       text=f"{said} and {channels} channels")
    if layer is None:  # no layer fixes the input's shape (an activation, a parameter-free block)
        for shape in ((BATCH, 4, 8, 8), (BATCH, 8, 16), (BATCH, 16)):
            yield InferredInputs(((name, TensorShape(shape)),), "structure",
                       text="a small tensor (no layer of the model fixes the input's shape)")
        return
    kind = type(layer).__name__
    shapes: list[tuple[TensorShape, str]] = []
    if isinstance(layer, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        c = layer.in_channels
        patch = numbers.get("patch_size")
        for s in _options("s", 2, 4, numbers, layer):
            if patch and s % patch:
                continue
            if isinstance(layer, nn.Conv1d):
                shapes.append((TensorShape((BATCH, c, s)), f"in_channels={c}, length {s}"))
            elif isinstance(layer, nn.Conv2d):
                shapes.append((TensorShape((BATCH, c, s, s)), f"in_channels={c}, {s}x{s}"))
            else:
                shapes.append((TensorShape((BATCH, c, 8, s, s)), f"in_channels={c}, 8x{s}x{s}"))
    elif isinstance(layer, nn.Embedding):
        for t in _options("t", 1, 2, numbers, layer)[:3]:
            shapes.append((TensorShape((BATCH, t), "int64"), f"token ids of length {t}"))
    elif isinstance(layer, (nn.Linear, nn.LayerNorm)):
        d = layer.in_features if isinstance(layer, nn.Linear) else layer.normalized_shape[-1]
        what = f"in_features={d}" if isinstance(layer, nn.Linear) else f"normalized_shape={layer.normalized_shape}"
        # tokens (B, N, C): N from the structure, C the model's width or what the layer takes
        widths = [(numbers[k], f"{k}={numbers[k]}") for k in ("dim", "embed_dim", "hidden_dim", "d_model", "n_embd")
                  if k in numbers]
        widths = _first_of_each([*widths, (d, what)])[:3]
        for n, said in _tokens(numbers, pairs)[:3]:
            for c, width in widths:
                shapes.append((TensorShape((BATCH, n, c)), f"{said} of {width}"))
        if isinstance(layer, nn.Linear):
            shapes.append((TensorShape((BATCH, d)), what))
        shapes.append((TensorShape((BATCH, 8, d)), f"{what}, a sequence of 8"))
        window = numbers.get("window_size") or 4
        shapes.append((TensorShape((BATCH, 2 * window, 2 * window, d)), f"{what}, a {2 * window}x{2 * window} grid"))
        shapes.append((TensorShape((BATCH, 4, 8, d)), f"{what}, 4 groups of 8"))
    elif isinstance(layer, (nn.LSTM, nn.GRU, nn.RNN)):
        d = layer.input_size
        shape = (BATCH, 8, d) if layer.batch_first else (8, BATCH, d)
        shapes.append((TensorShape(shape), f"input_size={d}"))
    elif isinstance(layer, nn.BatchNorm1d):
        shapes.append((TensorShape((BATCH, layer.num_features)), f"num_features={layer.num_features}"))
    elif isinstance(layer, nn.BatchNorm2d):
        shapes.append((TensorShape((BATCH, layer.num_features, 32, 32)), f"num_features={layer.num_features}"))
    elif isinstance(layer, nn.MultiheadAttention):
        shapes.append((TensorShape((BATCH, 8, layer.embed_dim) if layer.batch_first else (8, BATCH, layer.embed_dim)),
                       f"embed_dim={layer.embed_dim}"))
    path = next((p for p, m in model.named_modules() if m is layer), "")
    for spec, detail in shapes:
        yield InferredInputs(((name, spec),), "structure", text=f"its first layer `{path}` ({kind}, {detail})")


def _candidates(model: Any, factory: Callable[[], Any], hints: tuple[InputCandidate, ...],
                params: list[str], required: list[str]) -> Iterator[InferredInputs]:
    pairs: dict[str, tuple[int, ...]] = {}
    numbers = _numbers(model, factory, pairs)
    layer = _first_layer(model)
    for hint in hints:
        bound = _bind(hint, params)
        if bound is None:
            continue
        for specs in _fill(bound, numbers, layer) if not all(s.concrete for _, s in bound) else [bound]:
            yield InferredInputs(specs, hint.kind, hint.file, hint.line, hint.text, hint.cell)
    yield from _conventions(model, params)
    yield from _structure(model, params, required, numbers, pairs, layer)


def _meta_limited(error: BaseException) -> bool:
    """Whether the meta device, not the input, made the forward fail (data-dependent values,
    kernels without a meta implementation, copies out of meta tensors)."""
    text = str(error).lower()
    return isinstance(error, NotImplementedError) or "meta" in text or "data-dependent" in text


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    text = text if len(text) <= 160 else text[:157] + "..."
    return f"{type(error).__name__}: {text}"


def _run(model: Any, specs: tuple[tuple[str, TensorShape], ...], device: str) -> None:
    import torch

    from fxscope.trace.examples import real_inputs
    from fxscope.trace.inputs import InputSpec

    concrete = {n: InputSpec(tuple(int(d) for d in s.shape), s.dtype) for n, s in specs}
    if device == "meta":
        tensors = {n: s.tensor("meta") for n, s in concrete.items()}
        with torch.no_grad():
            model(**tensors)
    else:
        model(**real_inputs(concrete))


def _elements(specs: tuple[tuple[str, TensorShape], ...]) -> int:
    total = 0
    for _, spec in specs:
        count = 1
        for d in spec.shape:
            count *= int(d)
        total += count
    return total


def infer_inputs(factory: Callable[[], Any], hints: tuple[InputCandidate, ...],
                 is_user_file: Callable[[str], bool]) -> Inference:
    """The first candidate the model's eager forward runs on (meta first, then real CPU
    tensors, each CPU check on a model built for it alone); see the module docstring."""
    import torch

    from fxscope.trace.build import BuildError, build_model
    from fxscope.trace.examples import SEED

    inference = Inference()
    try:
        meta = build_model(factory, device="meta", is_user_file=is_user_file, exact_meta=True)
    except BuildError as e:
        inference.tried.append(f"the model could not be built: {e}")
        return inference
    shape = _forward_params(meta.model)
    if shape is None:
        inference.tried.append("its forward has no signature")
        return inference
    params, required, _ = shape
    inference.params = tuple(params)
    lazy = any(isinstance(m, torch.nn.modules.lazy.LazyModuleMixin) for m in meta.model.modules())
    meta_tries = cpu_tries = 0
    seen: set[tuple[tuple[str, TensorShape], ...]] = set()
    for attempt in _candidates(meta.model, factory, hints, params, required):
        if attempt.specs in seen:
            continue
        seen.add(attempt.specs)
        missing = [p for p in required if p not in dict(attempt.specs)]
        if missing:
            inference.tried.append(f"{attempt.label()}: does not give {', '.join(missing)}")
            continue
        if _elements(attempt.specs) > MAX_ELEMENTS:
            inference.tried.append(f"{attempt.label()}: too large to try")
            continue
        if meta.device == "meta" and meta_tries < MAX_META_TRIES:
            meta_tries += 1
            model = build_model(factory, device="meta", is_user_file=is_user_file,
                                exact_meta=True).model if lazy else meta.model
            try:
                _run(model, attempt.specs, "meta")
            except Exception as e:  # noqa: BLE001 - the forward's error is the candidate's verdict
                if not _meta_limited(e):
                    inference.tried.append(f"{attempt.label()}: {_one_line(e)}")
                    continue
        if cpu_tries >= MAX_CPU_TRIES:
            inference.tried.append(f"{attempt.label()}: not tried (at most {MAX_CPU_TRIES} eager runs)")
            break
        cpu_tries += 1
        try:
            torch.manual_seed(SEED)
            real = build_model(factory, device="cpu", is_user_file=is_user_file)
            _run(real.model, attempt.specs, "cpu")
        except Exception as e:  # noqa: BLE001
            inference.tried.append(f"{attempt.label()}: {_one_line(e)}")
            continue
        inference.inputs = attempt
        return inference
    return inference


def specs_table(inputs: InferredInputs) -> dict[str, Any]:
    """The ``inputs`` table of a target (``{name: {"shape": [...], "dtype": ...}}``)."""
    return {name: {"shape": [int(d) for d in spec.shape], "dtype": spec.dtype} for name, spec in inputs.specs}
