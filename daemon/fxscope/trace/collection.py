"""GraphCollection and recursive_trace: the root graph plus graphs for the children of every
failing module, recursively.

Only what must be retraced is retraced: the root once, then each child of a failed module on its
own, with the non-tensor arguments actually seen at its call site as concrete args.

>>> import torch
>>> class Bad(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.inner = torch.nn.Sequential(torch.nn.Linear(2, 2))
...     def forward(self, x):
...         return self.inner(x) if len(x) else x
>>> class Net(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.bad = Bad()
...     def forward(self, x):
...         return self.bad(x)
>>> net = Net()
>>> gc = recursive_trace(net)
>>> gc.is_failed(net.bad), [path for path, _, _ in gc.graphs()]
(True, ['', 'bad.inner'])
"""

from __future__ import annotations

import inspect
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import torch
import torch.nn as nn
from torch.fx import Graph, Proxy

from fxscope.trace.findings import FindingSet
from fxscope.trace.frames import FrameClassifier, SourceLocation
from fxscope.trace.tracer import CONTAINER_TYPES, RobustTracer, has_forward

__all__ = ["GraphCollection", "recursive_trace"]


def _is_concrete(value: Any) -> bool:
    """A non-tensor value without proxies inside (usable as a concrete arg)."""
    if isinstance(value, (Proxy, torch.Tensor)):
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_concrete(v) for v in value)
    if isinstance(value, dict):
        return all(_is_concrete(v) for v in value.values())
    return value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device))


def _concrete_args_from_call(module: nn.Module, call: tuple[tuple[Any, ...], dict[str, Any]] | None) -> dict[str, Any]:
    """Map the non-tensor arguments seen at ``module``'s call site to forward parameter names.

    A module never reached (its parent's forward stopped earlier) is traced as if called with
    its required arguments only: parameters with non-tensor defaults keep their defaults."""
    args, kwargs = call if call is not None else ((), {})
    try:
        sig = inspect.signature(inspect.unwrap(type(module).forward))
    except (TypeError, ValueError):
        return {}
    params = [p for p in sig.parameters.values() if p.name != "self"]
    out: dict[str, Any] = {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params) and len(args) > len(positional):
        return {}  # *args forwards cannot be specialised by name
    for p, value in zip(positional, args):
        if _is_concrete(value):
            out[p.name] = value
    names = {p.name for p in params if p.kind != p.VAR_KEYWORD}
    for name, value in kwargs.items():
        if name in names and _is_concrete(value):
            out[name] = value
    # Parameters the call site left out had their default in that call: keep it concrete, or
    # `mode="mean"` would become a placeholder and `if mode == "mean":` a false finding.
    passed = {p.name for p in positional[: len(args)]} | set(kwargs)
    for p in params:
        if (p.name not in passed and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.default is not p.empty and _is_concrete(p.default)):
            out[p.name] = p.default
    # fx gives `*args`/`**kwargs` one placeholder each (so `f(**kwargs)` would iterate a traced
    # value); when the call site passed nothing through them, they are concretely empty.
    for p in params:
        if p.kind == p.VAR_POSITIONAL and len(args) <= len(positional):
            out["*" + p.name] = ()
        elif p.kind == p.VAR_KEYWORD and set(kwargs) <= names:
            out["**" + p.name] = {}
    return out


class GraphCollection:
    """A collection of fx graphs and tracing results over one model.

    Iterating yields the modules that have a graph; ``gc[module]`` is its Graph.
    """

    def __init__(self, is_user_file: Callable[[str], bool] | None = None,
                 leaf_types: tuple[type, ...] = (), inputs: Mapping[str, Any] | None = None,
                 wrap_functions: tuple[Callable[..., Any], ...] = (),
                 target_site: SourceLocation | None = None) -> None:
        self._classifier = FrameClassifier(is_user_file)
        #: Where the target is defined (its class or factory), for findings about the root itself.
        self.target_site = target_site
        self._leaf_types = leaf_types
        #: Functions recorded as one node, never traced into (fx's ``autowrap_functions``).
        self.wrap_functions = tuple(wrap_functions)
        #: Example inputs of the root's forward (shape-aware mode, see ``fxscope.trace.shapes``);
        #: None traces without them.
        self.inputs = inputs
        self._graphs: dict[nn.Module, tuple[str, Graph]] = {}
        self.tracers: list[RobustTracer] = []
        self.findings = FindingSet()
        self.model: nn.Module | None = None
        self.paths: dict[nn.Module, str] = {}
        #: (id(owner), attribute) -> assignment location, from :func:`fxscope.trace.build_model`.
        self.sites: dict[tuple[int, str], Any] = {}

    # modelopt-compatible API
    def __iter__(self) -> Iterator[nn.Module]:
        yield from self._graphs

    def __getitem__(self, key: nn.Module) -> Graph:
        return self._graphs[key][1]

    def __len__(self) -> int:
        return len(self._graphs)

    def is_failed(self, m: nn.Module) -> bool:
        """Whether ``m``'s own forward failed in any trace."""
        return any(t.is_failed(m) for t in self.tracers)

    def failure_msg(self, m: nn.Module) -> str | None:
        """The failure message of ``m`` if it failed."""
        for t in self.tracers:
            msg = t.failure_msg(m)
            if msg is not None:
                return msg
        return None

    def is_unvisited(self, m: nn.Module) -> bool:
        """Whether ``m`` was never called in any trace."""
        return all(t.is_unvisited(m) for t in self.tracers)

    def graphs(self) -> list[tuple[str, nn.Module, Graph]]:
        """(module path, module, graph) for every graph, root first."""
        return [(path, m, g) for m, (path, g) in self._graphs.items()]

    def graph_for(self, path: str) -> Graph | None:
        """The graph whose root is the module at ``path``."""
        for p, _, g in self.graphs():
            if p == path:
                return g
        return None

    @property
    def forward_order(self) -> list[str]:
        """Module paths in first-forward order over all traces."""
        seen: dict[str, None] = {}
        for t in self.tracers:
            seen.update(dict.fromkeys(t.forward_order))
        return list(seen)

    @property
    def param_order(self) -> list[str]:
        """Parameter names in first-use order over all traces."""
        seen: dict[str, None] = {}
        for t in self.tracers:
            seen.update(dict.fromkeys(t.param_order))
        return list(seen)

    def recursive_trace(self, model: nn.Module, concrete_args: dict[str, Any] | None = None) -> None:
        """Trace ``model``, then every child of each failed module on its own, recursively."""
        self._graphs = {}
        self.tracers = []
        self.findings = FindingSet()
        self.model = model
        self.paths = {m: name for name, m in model.named_modules()}
        # (module, concrete args, traced with stand-in arguments: never called in any trace)
        queue: deque[tuple[nn.Module, dict[str, Any] | None, bool]] = deque([(model, concrete_args, False)])
        queued = {id(model)}
        seen_calls: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        anchors: dict[int, Any] = {}
        while queue:
            mod, cargs, stand_in = queue.popleft()
            prefix = self.paths.get(mod, "")
            tracer = self._new_tracer(mod, prefix, anchors.get(id(mod)), seen_calls.get(id(mod)), stand_in)
            with _model_state_kept(model):  # a trace leaves nothing in the model for the next one
                graph = tracer.trace(mod, concrete_args=cargs)
            self.tracers.append(tracer)
            self.findings.extend(tracer.findings)
            for key, call in tracer.call_args.items():
                seen_calls.setdefault(key, call)
            for key, anchor in tracer.call_anchors.items():
                if anchors.get(key) is None:
                    anchors[key] = anchor
            if not tracer.is_failed(mod):
                self._graphs[mod] = (prefix, graph)
            for m in mod.modules():
                if not tracer.is_failed(m):
                    continue
                for child in self._traceable_children(m, tracer):
                    if id(child) not in queued:
                        queued.add(id(child))
                        first_call = seen_calls.get(id(child))
                        queue.append((child, _concrete_args_from_call(child, first_call), first_call is None))

    def _new_tracer(self, mod: nn.Module, prefix: str, anchor: Any, call: tuple[tuple[Any, ...], dict[str, Any]] | None,
                    stand_in: bool = False) -> RobustTracer:
        """A RobustTracer, or with example inputs a ShapeAwareTracer (a child traced on its own
        gets the example values seen at its call site)."""
        site = self.target_site if mod is self.model else None
        if self.inputs is None:
            return RobustTracer(prefix=prefix, leaf_types=self._leaf_types, classifier=self._classifier,
                                default_anchor=anchor, wrap_functions=self.wrap_functions, stand_in=stand_in,
                                target_site=site)
        from fxscope.trace.shapes import ShapeAwareTracer, example_values_of_call

        inputs = self.inputs if mod is self.model else example_values_of_call(mod, call)
        return ShapeAwareTracer(inputs=inputs, prefix=prefix, leaf_types=self._leaf_types,
                                classifier=self._classifier, default_anchor=anchor,
                                wrap_functions=self.wrap_functions, stand_in=stand_in, target_site=site)

    def _traceable_children(self, m: nn.Module, tracer: RobustTracer) -> Iterator[nn.Module]:
        """Children worth tracing on their own: containers (and other modules without a
        ``forward``, which nothing calls) are looked through, leaves skipped."""
        for child in m.children():
            if isinstance(child, CONTAINER_TYPES) or not has_forward(child):
                yield from self._traceable_children(child, tracer)
            elif not tracer.is_static_leaf(child, self.paths.get(child, "")):
                yield child


@contextmanager
def _model_state_kept(model: nn.Module) -> Iterator[None]:
    """Restore every module's attributes (and its parameter, buffer and submodule tables) after a
    trace. A forward that assigns to a module (``m.weight = params[:, :4]``, AdaIN style) leaves a
    proxy of that trace on it; a child traced on its own afterwards would meet it (fx's "Found
    multiple different tracers") where plain fx, on the model as built, never does."""
    saved = [(m, dict(m.__dict__), dict(m._parameters), dict(m._buffers), dict(m._modules))
             for m in model.modules()]
    try:
        yield
    finally:
        for m, attrs, params, buffers, modules in saved:
            tables: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
                (m._parameters, params), (m._buffers, buffers), (m._modules, modules), (m.__dict__, attrs))
            for table, kept in tables:
                if not _same(table, kept):
                    table.clear()
                    table.update(kept)


def _same(now: dict[str, Any], before: dict[str, Any]) -> bool:
    """The same keys holding the same objects (identity: values may be tensors)."""
    return now.keys() == before.keys() and all(now[k] is v for k, v in before.items())


def recursive_trace(model: nn.Module, concrete_args: dict[str, Any] | None = None, *,
                    is_user_file: Callable[[str], bool] | None = None,
                    leaf_types: tuple[type, ...] = (),
                    inputs: Mapping[str, Any] | None = None,
                    wrap_functions: tuple[Callable[..., Any], ...] = ()) -> GraphCollection:
    """Trace ``model`` and all failing submodules' children; return the collection. With
    ``inputs`` (forward parameter -> example tensor), tracing is shape-aware."""
    gc = GraphCollection(is_user_file=is_user_file, leaf_types=leaf_types, inputs=inputs,
                         wrap_functions=wrap_functions)
    gc.recursive_trace(model, concrete_args)
    return gc
