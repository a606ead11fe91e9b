"""Building models for tracing: on the meta device by default, recording where every submodule
and parameter was assigned (for FXS301/FXS302 locations).

>>> import torch
>>> built = build_model(lambda: torch.nn.Linear(1000, 1000))
>>> built.device, built.model.weight.is_meta
('meta', True)
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.nn as nn

from fxscope.trace.findings import Finding
from fxscope.trace.frames import INTERNAL, USER, FrameClassifier, SourceLocation, frame_location, traceback_location

__all__ = ["BuiltModel", "build_model", "record_assignments", "BuildError", "warm_up"]


class BuildError(Exception):
    """The factory raised (on every device tried). ``__cause__`` is the original exception."""


@dataclass
class BuiltModel:
    """A built model, its concrete args, the device used, and construction findings/sites."""

    model: nn.Module
    concrete_args: dict[str, Any] | None
    device: str
    findings: list[Finding] = field(default_factory=list)
    #: (id(owner module), attribute name) -> where it was assigned.
    sites: dict[tuple[int, str], SourceLocation] = field(default_factory=dict)
    #: Example inputs a factory returned as ``(module, concrete_args, inputs)`` (shape-aware
    #: tracing), else None.
    inputs: dict[str, Any] | None = None


@contextmanager
def record_assignments(sites: dict[tuple[int, str], SourceLocation],
                       classifier: FrameClassifier) -> Iterator[None]:
    """Record the source location of every submodule/parameter assignment while active."""
    original = nn.Module.__setattr__
    # One location per assigning instruction: a loop building 1,000 layers assigns 2,000 parameters
    # from the same few instructions, and computing an exact range is the costly part.
    located: dict[tuple[Any, int], SourceLocation] = {}

    def recording_setattr(self: nn.Module, name: str, value: Any) -> None:
        original(self, name, value)
        if isinstance(value, (nn.Module, nn.Parameter)):
            frame: types.FrameType | None = sys._getframe(1)
            while frame is not None and classifier.kind(frame.f_code) == INTERNAL:
                frame = frame.f_back
            if frame is not None:
                key = (frame.f_code, frame.f_lasti)
                location = located.get(key)
                if location is None:
                    location = located[key] = frame_location(frame)
                sites[(id(self), name)] = location

    nn.Module.__setattr__ = recording_setattr  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.__setattr__ = original  # type: ignore[method-assign]


def _unpack(result: Any) -> tuple[nn.Module, dict[str, Any] | None, dict[str, Any] | None]:
    if isinstance(result, tuple) and len(result) in (2, 3) and isinstance(result[0], nn.Module):
        module, cargs, inputs = (*result, None) if len(result) == 2 else result
        if cargs is not None and not isinstance(cargs, dict):
            raise TypeError(f"factory returned concrete args of type {type(cargs).__name__}, expected a dict")
        if inputs is not None and not isinstance(inputs, dict):
            raise TypeError(f"factory returned example inputs of type {type(inputs).__name__}, expected a dict")
        return module, cargs, inputs
    if isinstance(result, nn.Module):
        return result, None, None
    raise TypeError(f"factory returned {type(result).__name__}, expected an nn.Module, "
                    "(module, concrete_args) or (module, concrete_args, inputs)")


def _innermost_model_location(e: BaseException, classifier: FrameClassifier) -> SourceLocation | None:
    tb, best, user = e.__traceback__, None, None
    while tb is not None:
        kind = classifier.kind(tb.tb_frame.f_code)
        if kind != INTERNAL:
            best = tb
            if kind == USER:
                user = tb
        tb = tb.tb_next
    chosen = user or best
    return traceback_location(chosen) if chosen is not None else None


#: ``torch.nn.init`` functions that only fill values in: meaningless on the meta device, where they
#: run slowly through Python decompositions (half of a small model's build time).
_INIT_FUNCTIONS = (
    "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
)


def _keep(tensor: Any, *args: Any, **kwargs: Any) -> Any:
    return tensor


_Site = tuple[Any, str, Any]  # (module, attribute, the function it holds)


@contextmanager
def _replaced(sites: list[_Site], replacement: Callable[[Any], Any]) -> Iterator[None]:
    """Each ``module.attribute`` of ``sites`` holds ``replacement(function)`` while active."""
    for module, attr, fn in sites:
        setattr(module, attr, replacement(fn))
    try:
        yield
    finally:
        for module, attr, fn in sites:
            setattr(module, attr, fn)


def _no_meta_init() -> contextlib.AbstractContextManager[None]:
    """Make ``torch.nn.init``'s fillers no-ops while building on meta (there is no data to fill)."""
    init = torch.nn.init
    return _replaced([(init, name, getattr(init, name)) for name in _INIT_FUNCTIONS if hasattr(init, name)],
                     lambda fn: _keep)


#: Modules whose tensor factories ``torch.device("meta")`` redirects (``torch.fft.fftfreq``...).
_FACTORY_MODULES = ("torch", "torch.fft", "torch.nested", "torch.special", "torch.linalg", "torch.sparse")
_factory_sites: list[_Site] | None = None
_meta_default = False  # true while a build runs with meta-defaulting factories


def _factories() -> list[_Site]:
    """Every public tensor factory that the device context manager redirects (torch's own list;
    empty when this torch has none)."""
    global _factory_sites
    if _factory_sites is None:
        from fxscope.trace._torch_compat import device_constructors  # what torch.device("meta") redirects

        wanted = device_constructors()
        found = []
        for name in _FACTORY_MODULES:
            module = sys.modules.get(name)
            for attr, fn in list(vars(module).items()) if module is not None else ():
                try:
                    if fn in wanted:
                        found.append((module, attr, fn))
                except TypeError:  # unhashable module attribute
                    continue
        _factory_sites = found
    return _factory_sites


def _defaulting_to_meta(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def factory(*args: Any, **kwargs: Any) -> Any:
        if _meta_default and kwargs.get("device") is None:
            kwargs["device"] = "meta"
        return fn(*args, **kwargs)

    return factory


@contextmanager
def _meta_factories() -> Iterator[None]:
    """Torch's tensor factories default to the meta device, as under ``torch.device("meta")``,
    without a ``TorchFunctionMode`` (which costs every torch call of a construction a Python
    dispatch: a quarter of building 1,000 layers). A factory referenced before this starts
    (``from torch import zeros``) is not redirected: see :func:`build_model`."""
    global _meta_default
    with _replaced(_factories(), _defaulting_to_meta):
        _meta_default = True
        try:
            yield
        finally:
            _meta_default = False  # a wrapper kept by the model no longer redirects anything


def warm_up() -> None:
    """Fill what the first build of a process computes (the list of torch's factories, ~2 ms), in
    a process that forks builders."""
    _factories()


def _all_on_meta(model: nn.Module) -> bool:
    return all(t.is_meta for t in model.parameters()) and all(t.is_meta for t in model.buffers())


def build_model(factory: Callable[[], Any], *, device: str = "meta",
                is_user_file: Callable[[str], bool] | None = None,
                classifier: FrameClassifier | None = None, exact_meta: bool = False) -> BuiltModel:
    """Call ``factory`` under ``torch.device(device)``; on meta failure retry on CPU with an
    FXS406 info finding. Raises :class:`BuildError` when construction fails on CPU too.

    On meta, construction first runs with torch's factories defaulting to meta (faster than the
    device context); its model is kept only when every parameter and buffer is on meta and the
    factory returned no example inputs, else construction runs again under the device context.
    ``exact_meta`` (shape-aware tracing, where a tensor left on the CPU would meet meta ones)
    uses the device context only."""
    classifier = classifier or FrameClassifier(is_user_file)
    sites: dict[tuple[int, str], SourceLocation] = {}
    findings: list[Finding] = []
    if device == "meta" and not exact_meta and _factories():
        try:
            with record_assignments(sites, classifier), _meta_factories(), _no_meta_init():
                model, cargs, inputs = _unpack(factory())
            if inputs is None and _all_on_meta(model):
                return BuiltModel(model, cargs, "meta", findings, sites, inputs)
        except Exception:  # noqa: BLE001 - the device context decides, as it always did
            pass
        sites.clear()
    if device == "meta":
        try:
            with record_assignments(sites, classifier), torch.device("meta"), _no_meta_init():
                model, cargs, inputs = _unpack(factory())
            return BuiltModel(model, cargs, "meta", findings, sites, inputs)
        except Exception as e:  # noqa: BLE001 - fall back to CPU
            sites.clear()
            loc = _innermost_model_location(e, classifier)
            if loc is not None:
                findings.append(Finding(
                    "FXS406",
                    f"built on CPU: construction on the meta device raised {type(e).__name__}: {e}",
                    loc,
                ))
    try:
        with record_assignments(sites, classifier):
            model, cargs, inputs = _unpack(factory())
    except Exception as e:
        raise BuildError(f"{type(e).__name__}: {e}") from e
    return BuiltModel(model, cargs, "cpu", findings, sites, inputs)
