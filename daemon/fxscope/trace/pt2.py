"""The torch.compile and torch.export analyses of one target, as the worker runs them after fx.

Both need real tensors (torch.compile runs the model; torch.export decides data-dependent
questions on real values; meta tensors would fail at the first ``.item()`` or data-dependent
``if`` for reasons of fxscope's own making), so the model is built again on the CPU, with torch's
random generator seeded, and the example inputs are real tensors made from the target's ``inputs``
(see :mod:`fxscope.trace.examples`). The result is a JSON fragment of the target's result body.

>>> import torch
>>> class Net(torch.nn.Module):
...     def forward(self, x):
...         return torch.relu(x) + 1
>>> out = run_pt2(Net, {"x": [2, 4]}, {}, Pt2Options(analyses=("export",)))
>>> out["export"]["exported"], out["findings"], "compile" in out
(True, [], False)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from fxscope.trace.build import build_model
from fxscope.trace.examples import SEED, resolve_real_inputs
from fxscope.trace.frames import SourceLocation

__all__ = ["CACHE_DIR_ENV", "NoExampleInputs", "PT2_ANALYSES", "Pt2Options", "RealModel", "build_real", "run_compile",
           "run_export", "run_pt2", "warm_up"]

#: The analyses this module runs (``fx`` is the tracer's).
PT2_ANALYSES = ("compile", "export")
#: Where torch.compile keeps its on-disk caches (inductor's, with Dynamo's profile of dynamic sizes).
CACHE_DIR_ENV = "TORCHINDUCTOR_CACHE_DIR"


@dataclass(frozen=True)
class Pt2Options:
    """Which of :data:`PT2_ANALYSES` to run and how: ``dynamic`` is ``torch.compile``'s (None:
    its automatic default), ``strict`` and ``dynamic_batch`` are the export's."""

    analyses: tuple[str, ...]
    dynamic: bool | None = None
    strict: bool = False
    dynamic_batch: bool = False


@dataclass(frozen=True)
class RealModel:
    """A model built on the CPU for one analysis, with its real example inputs and concrete
    arguments (what :func:`build_real` gives)."""

    model: torch.nn.Module
    inputs: dict[str, Any]
    concrete_args: dict[str, Any]


class NoExampleInputs(ValueError):
    """The target has no usable example inputs; the message completes "<analyses> analysis ..."."""


def build_real(factory: Callable[[], Any], configured_inputs: Mapping[str, Any] | str | None,
               concrete_args: Mapping[str, Any], *, is_user_file: Callable[[str], bool] | None = None) -> RealModel:
    """Build the model on the CPU with torch's generator seeded (so every build of the same target
    is the same) and make its real example inputs. Raises :class:`fxscope.trace.build.BuildError`
    when the model cannot be built, :class:`NoExampleInputs` when it has no usable inputs."""
    torch.manual_seed(SEED)
    built = build_model(factory, device="cpu", is_user_file=is_user_file)
    concrete = dict(concrete_args)
    concrete.update(built.concrete_args or {})
    try:
        inputs = resolve_real_inputs(configured_inputs or None, built.inputs, built.model)
    except ValueError as e:
        raise NoExampleInputs(f"skipped: {e}") from e
    if inputs is None:
        raise NoExampleInputs("needs example inputs: give the target `inputs` (a factory target), or return them "
                              "from its factory")
    if configured_inputs == "auto":
        from fxscope.trace.inputs import default_concrete_args

        concrete = {**default_concrete_args(built.model), **concrete}
    return RealModel(built.model, inputs, concrete)


def run_compile(real: RealModel, options: Pt2Options, *, is_user_file: Callable[[str], bool] | None = None,
                fallback: SourceLocation | None = None) -> dict[str, Any]:
    """torch.compile's analysis of ``real``: ``findings``, ``graphs`` and the ``compile`` summary."""
    from fxscope.trace.compile_analysis import analyze_compile

    started = time.perf_counter()
    compiled = analyze_compile(real.model, real.inputs, real.concrete_args, is_user_file=is_user_file,
                               dynamic=options.dynamic, fallback=fallback)
    return {"findings": [f.to_json() for f in compiled.findings], "graphs": compiled.graph_json,
            "compile": {**compiled.summary(), "duration_ms": _ms(started)}}


def run_export(real: RealModel, options: Pt2Options, *, is_user_file: Callable[[str], bool] | None = None,
               fallback: SourceLocation | None = None) -> dict[str, Any]:
    """torch.export's analysis of ``real``: ``findings`` and the ``export`` summary."""
    from fxscope.trace.export_analysis import analyze_export

    started = time.perf_counter()
    exported = analyze_export(real.model, real.inputs, real.concrete_args, is_user_file=is_user_file,
                              strict=options.strict, dynamic_batch=options.dynamic_batch, fallback=fallback)
    return {"findings": [f.to_json() for f in exported.findings], "graphs": [],
            "export": {**exported.summary(), "duration_ms": _ms(started)}}


def run_pt2(factory: Callable[[], Any], configured_inputs: Mapping[str, Any] | str | None,
            concrete_args: Mapping[str, Any], options: Pt2Options, *,
            is_user_file: Callable[[str], bool] | None = None,
            fallback: SourceLocation | None = None) -> dict[str, Any]:
    """Run the analyses of ``options``, each on a model of its own built by :func:`build_real`
    (a forward that changes the model's state, lazy initialisation, cannot leak from one analysis
    into the next). Returns ``findings`` (report-schema dicts, absolute paths), ``graphs`` (the
    graphs torch.compile captured), a ``compile`` and an ``export`` summary for the analyses that
    ran, and ``warnings``. Raises :class:`fxscope.trace.build.BuildError` when the model cannot be
    built on the CPU."""
    wanted = [a for a in PT2_ANALYSES if a in options.analyses]
    out: dict[str, Any] = {"findings": [], "graphs": [], "warnings": []}
    for analysis in wanted:
        try:
            real = build_real(factory, configured_inputs, concrete_args, is_user_file=is_user_file)
        except NoExampleInputs as e:
            out["warnings"].append(f"{' and '.join(wanted)} analysis {e}")
            return out
        run = run_compile if analysis == "compile" else run_export
        part = run(real, options, is_user_file=is_user_file, fallback=fallback)
        out["findings"] += part["findings"]
        out["graphs"] += part["graphs"]
        out[analysis] = part[analysis]
    return out


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)


def warm_up() -> None:
    """Import everything the analyses use and read torch's graph-break registry, in a process that
    forks analysis jobs (the worker's zygote): no torch operator runs.

    Importing ``torch._dynamo`` creates torch's compile cache directory (a module-level cache object
    asks for it): here it is a directory of fxscope's own, removed once the imports are done, so the
    zygote leaves nothing behind (each job gets its own, see ``fxscope.job.real_build``)."""
    import shutil
    import tempfile

    from fxscope.trace import compile_analysis, export_analysis  # noqa: F401
    from fxscope.trace._torch_compat import warm_compile_imports

    previous = os.environ.get(CACHE_DIR_ENV)
    scratch = tempfile.mkdtemp(prefix="fxscope-warm-")
    os.environ[CACHE_DIR_ENV] = scratch
    try:
        warm_compile_imports()
        compile_analysis.registry()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if previous is None:
            os.environ.pop(CACHE_DIR_ENV, None)
        else:
            os.environ[CACHE_DIR_ENV] = previous
