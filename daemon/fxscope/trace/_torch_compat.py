"""Every private torch name fxscope relies on, in one place.

torch.fx has no public API for these, nor torch.compile and torch.export for what the compile and
export analyses read (the graph-break and recompile logs, torch's registry of graph-break types, a
compiled graph's break reason, draft_export's report); each function says what it reads and what
fxscope does when a torch version lacks it. Where a public API exists fxscope uses it directly (the last node
of a graph is ``next(reversed(graph.nodes), None)``, never ``graph._root.prev``).

>>> import torch
>>> qualified_name(torch.relu)
'torch.relu'
>>> graph = torch.fx.Graph()
>>> uses_pytree_codegen(graph), pytree_out_spec(graph)
(False, None)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

import torch.nn as nn
from torch.fx import Graph, Tracer

__all__ = ["artifact_loggers", "autowrap_function_ids", "compile_reason", "device_constructors", "direct_parameters",
           "draft_export_filenames", "draft_export_report", "enable_dynamo_logs", "export_error_kinds",
           "graph_break_registry_path", "is_constraint_user_error", "pytree_out_spec", "qualified_name",
           "tree_unflatten", "uses_pytree_codegen", "warm_compile_imports", "warm_imports", "warm_override_tables"]


def qualified_name(fn: Any) -> str:
    """``torch.relu`` for a function a graph node calls (``torch.fx.node._get_qualified_name``,
    the name fx's own generated code uses). Raises for an object it cannot name."""
    from torch.fx.node import _get_qualified_name

    return str(_get_qualified_name(fn))


def pytree_out_spec(graph: Graph) -> Any | None:
    """The output tree spec of a graph traced with pytree concrete args (fx flattened the
    output), read from its code generator (``graph._codegen.pytree_info``); None otherwise."""
    info = getattr(getattr(graph, "_codegen", None), "pytree_info", None)
    return getattr(info, "out_spec", None)


def uses_pytree_codegen(graph: Graph) -> bool:
    """Whether fx generates the graph's code with pytree flattening (``_PyTreeCodeGen``): it then
    calls the root's forward itself with the unflattened arguments."""
    return type(getattr(graph, "_codegen", None)).__name__ == "_PyTreeCodeGen"


def tree_unflatten(values: list[Any], spec: Any) -> Any:
    """The value fx flattened with ``spec`` (``torch.utils._pytree.tree_unflatten``: fx's specs
    are that module's)."""
    from torch.utils import _pytree

    return _pytree.tree_unflatten(values, spec)


def autowrap_function_ids(tracer: Tracer) -> frozenset[int]:
    """Ids of the functions ``tracer`` records as one node wherever it patches them: its
    ``autowrap_functions`` and fx's own math functions (``Tracer._autowrap_function_ids``); empty
    when this torch keeps no such set."""
    ids = getattr(tracer, "_autowrap_function_ids", None)
    return frozenset(ids) if isinstance(ids, (set, frozenset)) else frozenset()


def device_constructors() -> set[Any]:
    """The tensor factories that ``with torch.device(...)`` redirects
    (``torch.utils._device._device_constructors``); empty when this torch has no such list."""
    from torch.utils import _device

    constructors = getattr(_device, "_device_constructors", None)
    return set(constructors()) if callable(constructors) else set()


def direct_parameters(module: nn.Module) -> Iterable[tuple[str, Any]]:
    """(name, parameter) of every parameter of ``module`` and its submodules, read from the
    module's own table when it has no submodules (``module._parameters``: the tracer records
    every parameter access, and ``named_parameters()`` costs a generator per call)."""
    if module._modules:
        return module.named_parameters()
    return module._parameters.items()


def warm_imports() -> None:
    """Import what building a module imports on first use (``torch.utils._device``), so a
    process that forks children does it once."""
    import torch.utils._device  # noqa: F401


def warm_override_tables() -> None:
    """Fill the cache of tensor methods that ``__torch_function__`` dispatch reads on first use
    (``torch.overrides._get_tensor_methods``; nothing when this torch has no such cache)."""
    import torch.overrides

    tensor_methods = getattr(torch.overrides, "_get_tensor_methods", None)
    if callable(tensor_methods):
        tensor_methods()


# ------------------------------------------------------------------ torch.compile and torch.export


def enable_dynamo_logs(artifacts: Iterable[str]) -> None:
    """Turn on exactly these ``torch._logging`` artifacts (``graph_breaks``, ``recompiles``), as
    ``TORCH_LOGS`` would; an empty list sets logging back to torch's defaults
    (``torch._logging.set_logs``, documented, in a private package)."""
    import torch._logging

    enabled: dict[str, Any] = {name: True for name in artifacts}
    torch._logging.set_logs(**enabled)


def artifact_loggers(artifacts: Iterable[str]) -> list[logging.Logger]:
    """The loggers torch writes these artifacts to: ``torch._logging.getArtifactLogger`` names
    them ``<module>.__<artifact>``, one per module that logs it (found among existing loggers, so
    call this after ``torch._dynamo`` is imported)."""
    suffixes = tuple(f".__{name}" for name in artifacts)
    names = [name for name in list(logging.root.manager.loggerDict)
             if name.startswith("torch.") and name.endswith(suffixes)]
    return [logging.getLogger(name) for name in sorted(names)]


def graph_break_registry_path() -> str | None:
    """``torch/_dynamo/graph_break_registry.json``, torch's table of graph-break types (GBxxxx ->
    type, explanation, hints); None in a torch that does not ship it (breaks then keep their raw
    reason)."""
    import torch._dynamo

    path = os.path.join(os.path.dirname(os.path.abspath(torch._dynamo.__file__ or "")), "graph_break_registry.json")
    return path if os.path.isfile(path) else None


def compile_reason(graph_module: Any) -> Any | None:
    """Why dynamo compiled this graph (``GraphModule.compile_subgraph_reason``, what
    ``torch._dynamo.explain`` reads: ``reason``, ``user_stack``, ``graph_break``); None without one."""
    return getattr(graph_module, "compile_subgraph_reason", None)


def draft_export_report(program: Any) -> Any | None:
    """The problems ``torch.export.draft_export`` found (``ExportedProgram._report``: ``failures``
    with ``failure_type`` and ``data``, ``str_to_filename``); None when there is no report."""
    return getattr(program, "_report", None)


def draft_export_filenames(report: Any) -> dict[int, str]:
    """The file names of a ``draft_export`` report's stacks, by the number that stands for each
    (``report.str_to_filename``, completed from ``torch._logging.structured.INTERN_TABLE``: a
    file interned by an earlier export of the same process is not listed in the report again)."""
    names: dict[int, str] = {}
    try:
        from torch._logging import structured

        names.update({number: name for name, number in getattr(structured, "INTERN_TABLE", {}).items()})
    except ImportError:
        pass
    names.update(dict(getattr(report, "str_to_filename", None) or {}))
    return names


def export_error_kinds() -> dict[str, tuple[type[BaseException], ...]]:
    """Exception types by what went wrong in torch.export: ``data_dependent`` (a guard on a value
    computed from tensor data), ``constraint`` (a dynamic dimension was specialised) and
    ``unsupported`` (strict export's dynamo could not capture a construct); types this torch lacks
    are left out."""
    kinds: dict[str, list[type[BaseException]]] = {"data_dependent": [], "constraint": [], "unsupported": []}
    try:
        from torch.fx.experimental import symbolic_shapes

        for name in ("GuardOnDataDependentSymNode",):
            if isinstance(getattr(symbolic_shapes, name, None), type):
                kinds["data_dependent"].append(getattr(symbolic_shapes, name))
        if isinstance(getattr(symbolic_shapes, "ConstraintViolationError", None), type):
            kinds["constraint"].append(symbolic_shapes.ConstraintViolationError)
    except ImportError:
        pass
    try:
        from torch._dynamo import exc

        kinds["unsupported"] += [t for t in (getattr(exc, "Unsupported", None), getattr(exc, "UserError", None))
                                 if isinstance(t, type)]
    except ImportError:
        pass
    return {k: tuple(v) for k, v in kinds.items()}


def is_constraint_user_error(error: BaseException) -> bool:
    """Whether a ``torch._dynamo.exc.UserError`` is a constraint violation (its ``error_type``)."""
    kind = getattr(error, "error_type", None)
    return getattr(kind, "name", "") == "CONSTRAINT_VIOLATION"


def warm_compile_imports() -> None:
    """Import what the compile and export analyses use (``torch._dynamo`` and what its first
    compile imports, ``torch.export``), so a process that forks analysis jobs does it once. Runs no
    torch operator."""
    import importlib

    for name in ("torch._dynamo", "torch._dynamo.convert_frame", "torch._dynamo.symbolic_convert",
                 "torch._dynamo.output_graph", "torch._dynamo.variables", "torch._dynamo.guards",
                 "torch._dynamo.backends.debugging", "torch._dynamo.backends.inductor", "torch._dynamo.testing",
                 "torch._dynamo.backends.cudagraphs", "torch._dynamo.backends.distributed",
                 "torch._dynamo.backends.onnxrt", "torch._dynamo.backends.tensorrt", "torch._dynamo.backends.torchxla",
                 "torch._dynamo.backends.tvm", "torch._dynamo.dce_extra_outputs", "torch.distributed.tensor.experimental",
                 "sympy.combinatorics", "sympy.tensor.tensor",
                 "torch._dynamo.debug_utils", "torch._dynamo.repro.after_dynamo", "torch._subclasses.fake_tensor",
                 "torch._subclasses.schema_check_mode", "torch.fx.experimental.symbolic_shapes",
                 "torch.fx.experimental.validator", "torch._inductor.fx_passes.dedupe_symint_uses",
                 "torch._inductor.sizevars", "torch._inductor.compiler_bisector", "torch.nn.attention.flex_attention",
                 "torch.export", "torch.export._trace", "torch.export._draft_export",
                 "torch._export.passes.replace_set_grad_with_hop_pass",
                 "torch._export.passes.replace_autocast_with_hop_pass",
                 "torch._higher_order_ops.passes.inline_invoke_subgraph", "torch._functorch.aot_autograd"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
