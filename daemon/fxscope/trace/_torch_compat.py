"""Every private torch name fxscope relies on, in one place.

torch.fx has no public API for these; each function says what it reads and what fxscope does
when a torch version lacks it. Where a public API exists fxscope uses it directly (the last node
of a graph is ``next(reversed(graph.nodes), None)``, never ``graph._root.prev``).

>>> import torch
>>> qualified_name(torch.relu)
'torch.relu'
>>> graph = torch.fx.Graph()
>>> uses_pytree_codegen(graph), pytree_out_spec(graph)
(False, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch.nn as nn
from torch.fx import Graph, Tracer

__all__ = ["autowrap_function_ids", "device_constructors", "direct_parameters", "pytree_out_spec", "qualified_name",
           "tree_unflatten", "uses_pytree_codegen", "warm_imports", "warm_override_tables"]


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
