"""Hazards in models that do trace: FXS201 (dead in-place op), FXS301 (submodule never called),
FXS302 (parameter never used).

>>> import torch
>>> class Net(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.used = torch.nn.Linear(2, 2)
...         self.spare = torch.nn.Linear(2, 2)
...     def forward(self, x):
...         x.relu_()
...         return self.used(x)
>>> from fxscope.trace.analysis import analyze
>>> from fxscope.trace.build import build_model
>>> built = build_model(Net)
>>> sorted(f.code for f in analyze(built.model, sites=built.sites).findings)
['FXS201', 'FXS301']
"""

from __future__ import annotations

import inspect
from typing import Iterator

import torch.nn as nn
from torch.fx import Node

from fxscope.trace.collection import GraphCollection
from fxscope.trace.findings import Finding
from fxscope.trace.frames import USER, SourceLocation, location_at
from fxscope.trace.classify import quoted
from fxscope.trace.tracer import CONTAINER_TYPES, type_name

__all__ = ["find_hazards", "is_dead_inplace"]


def _is_inplace(node: Node, model: nn.Module | None) -> bool:
    if node.op == "call_method":
        t = str(node.target)
        return t.endswith("_") and not t.startswith("_")
    if node.op == "call_function":
        if node.kwargs.get("inplace") is True:
            return True
        name = getattr(node.target, "__name__", "")
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_module" and model is not None:
        try:
            return getattr(model.get_submodule(str(node.target)), "inplace", False) is True
        except AttributeError:
            return False
    return False


def is_dead_inplace(node: Node, root: nn.Module | None = None) -> bool:
    """An in-place op with no users that ``Graph.eliminate_dead_code()`` would remove."""
    if node.users or not _is_inplace(node, root):
        return False
    if node.op == "call_module":
        # Node.is_impure() needs graph.owning_module, which a tracer's Graph does not have.
        try:
            return not getattr(root.get_submodule(str(node.target)), "_is_impure", False) if root else True
        except AttributeError:
            return True
    return not node.is_impure()


def _node_location(node: Node) -> SourceLocation | None:
    pos = node.meta.get("fxscope_pos")
    if pos is None:
        return None
    return location_at(pos[0], pos[1])


def _assignment_site(gc: GraphCollection, owner: nn.Module, name: str) -> SourceLocation | None:
    site = gc.sites.get((id(owner), name)) if gc.sites else None
    if site is not None:
        return site
    try:  # not built by us: the class's `self.name =` line
        lines, start = inspect.getsourcelines(type(owner))
        file = inspect.getsourcefile(type(owner))
    except (OSError, TypeError):
        return None
    needle = f"self.{name}"
    for i, text in enumerate(lines):
        stripped = text.lstrip()
        if stripped.startswith(needle) and stripped[len(needle):].lstrip().startswith(("=", ":")):
            col = len(text) - len(stripped) + 1
            return SourceLocation(file, start + i, col, start + i, col + len(needle)) if file else None
    return None


class _Anchors:
    """Anchors for hazards located outside user code (site-packages): where user code called
    into the module concerned, or into its nearest called ancestor."""

    def __init__(self, gc: GraphCollection) -> None:
        self.gc = gc
        self.by_module: dict[int, SourceLocation] = {}
        for t in gc.tracers:
            for key, anchor in t.call_anchors.items():
                if anchor is not None:
                    self.by_module.setdefault(key, anchor)

    def __call__(self, path: str, loc: SourceLocation) -> SourceLocation | None:
        if not self.by_module or self.gc._classifier._classify(loc.file) == USER:
            return None
        assert self.gc.model is not None
        while True:
            try:
                anchor = self.by_module.get(id(self.gc.model.get_submodule(path)))
            except AttributeError:
                anchor = None
            if anchor is not None or not path:
                return anchor
            path = path.rpartition(".")[0]


def _dead_inplace(gc: GraphCollection, anchors: _Anchors) -> Iterator[Finding]:
    for _, module, graph in gc.graphs():
        for node in graph.nodes:
            if not is_dead_inplace(node, module):
                continue
            loc = _node_location(node)
            if loc is None:
                continue
            scope = node.meta.get("fxscope_caller_scope") or (
                node.meta.get("fxscope_scope", ""), node.meta.get("fxscope_scope_type", ""))
            yield Finding(
                "FXS201",
                f"in-place {quoted(loc, 'op')} has no users: `Graph.eliminate_dead_code()` removes "
                "it and the model's result changes",
                loc,
                anchor=anchors(scope[0], loc),
                scopes=[scope],
            )


def _skipped_subtrees(gc: GraphCollection) -> set[str]:
    """Paths whose subtree says nothing about usage: aborted forwards, leaves."""
    skipped: set[str] = set()
    for t in gc.tracers:
        skipped |= t.aborted
    assert gc.model is not None
    tracer = gc.tracers[0]
    for path, m in gc.model.named_modules():
        if path and not isinstance(m, CONTAINER_TYPES) and tracer.is_static_leaf(m, path):
            skipped.add(path)
    return skipped


def _under(path: str, roots: set[str]) -> bool:
    """Whether a strict ancestor of ``path`` is in ``roots`` (O(depth), not O(len(roots)))."""
    if not path:
        return False
    if "" in roots:
        return True
    end = path.find(".")
    while end != -1:
        if path[:end] in roots:
            return True
        end = path.find(".", end + 1)
    return False


def _used(gc: GraphCollection, m: nn.Module, accessed: set[int], used_params: set[int]) -> bool:
    """Whether forward uses ``m``: calls it, reads it as an attribute (iterates a ModuleList,
    reads `self.proj.weight`), or reads one of its parameters. A container holding no module
    (only None) has nothing to call."""
    if id(m) in accessed:
        return True
    if isinstance(m, CONTAINER_TYPES):
        children = list(m.children())
        return not children or any(_used(gc, c, accessed, used_params) for c in children)
    if not gc.is_unvisited(m):
        return True
    return any(id(p) in used_params for p in m.parameters())


def _unused(gc: GraphCollection, anchors: _Anchors) -> Iterator[Finding]:
    assert gc.model is not None
    skipped = _skipped_subtrees(gc)
    unvisited_roots: set[str] = set()
    used_params: set[int] = set()
    accessed: set[int] = set()
    for t in gc.tracers:
        used_params |= t.used_params
        accessed |= t.accessed_modules
    for path, m in gc.model.named_modules():
        if _under(path, skipped) or _under(path, unvisited_roots):
            continue
        if path and not _used(gc, m, accessed, used_params):
            unvisited_roots.add(path)
            owner_path, _, name = path.rpartition(".")
            owner = gc.model.get_submodule(owner_path)
            loc = _assignment_site(gc, owner, name)
            if loc is not None:
                yield Finding(
                    "FXS301",
                    f"submodule `{name}` ({type(m).__name__}) is never called in forward",
                    loc,
                    anchor=anchors(owner_path, loc),
                    scopes=[(path, type_name(m))],
                )
            continue
        if path in skipped or isinstance(m, CONTAINER_TYPES):
            continue
        for name, p in m.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in used_params:
                continue
            loc = _assignment_site(gc, m, name)
            if loc is not None:
                yield Finding(
                    "FXS302",
                    f"parameter `{name}` is never used in forward (DDP raises for parameters that get "
                    "no gradient)",
                    loc,
                    anchor=anchors(path, loc),
                    scopes=[(path, type_name(m))],
                )


def find_hazards(gc: GraphCollection) -> list[Finding]:
    """Every hazard finding over a traced collection (no findings under aborted forwards)."""
    anchors = _Anchors(gc)
    return [*_dead_inplace(gc, anchors), *_unused(gc, anchors)]
