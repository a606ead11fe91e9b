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

import ast
import inspect
import textwrap
from typing import Any, Iterator, cast

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
    site: SourceLocation | None = gc.sites.get((id(owner), name)) if gc.sites else None
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
                    hint=_unused_submodule_hint(gc, loc, owner_path, owner, name, m),
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


def _unused_submodule_hint(gc: GraphCollection, loc: SourceLocation, owner_path: str, owner: nn.Module,
                           name: str, m: nn.Module) -> str | None:
    """FXS301's fix when the code's help (remove it or call it) does not fit: the submodule is
    assigned inside an installed library, or forward calls it only when an optional input that is
    traced as an input (never None while tracing) is None. None: the help applies."""
    if gc._classifier._classify(loc.file) != USER:
        library = type(owner).__module__.partition(".")[0]
        params = sum(p.numel() for p in m.parameters())
        matters = (f"`{name}` has none, so it is safe to ignore here." if not params else
                   f"`{name}` has {params:,} parameter values that get no gradient: pass "
                   "`find_unused_parameters=True` to DDP, or freeze them with `requires_grad_(False)`.")
        return (f"`{name}` is assigned inside the installed library `{library}` (in `{type(owner).__qualname__}`), "
                "not in your code, so there is nothing to remove or call here. A submodule that is never called "
                f"matters only for DistributedDataParallel, and only when it has parameters: {matters}")
    guard = _none_guard(type(owner), name)
    if guard is None:
        return None
    root_input = _root_input(gc, owner_path, owner, guard)
    if root_input is None:
        return None
    assert gc.model is not None
    root = type(gc.model)
    if owner_path:
        why = (f"`{type(owner).__qualname__}.forward` calls `{name}` only when `{guard}` is None, and it receives "
               f"the model's input `{root_input}`, traced as a placeholder, which is never None while tracing.")
    else:
        why = (f"`forward` calls `{name}` only when `{guard}` is None, and `{guard}` is an input traced as a "
               "placeholder, which is never None while tracing.")
    return (f"{why} To trace the path that calls it, make that input a concrete arg: "
            f"`concrete-args = {{ {root_input} = None }}` in a [tool.fxscope.targets.NAME] table (with "
            f"`factory = \"{root.__module__}:{root.__qualname__}\"` for this class); with plain torch.fx, "
            f"`concrete_args={{\"{root_input}\": None}}`.")


def _none_guard(cls: type, attr: str) -> str | None:
    """The forward parameter (default None) whose ``is None`` test guards every call of
    ``self.<attr>`` in ``cls.forward`` (``if mask is None: x = self.head(x)``), or None."""
    try:
        forward = inspect.unwrap(cast(Any, cls).forward)
        source = textwrap.dedent(inspect.getsource(forward))
        tree = ast.parse(source)
        sig = inspect.signature(forward)
    except (OSError, TypeError, ValueError, SyntaxError):
        return None
    optional = {n for n, p in sig.parameters.items() if p.default is None}
    guards: set[str | None] = set()

    def none_test(test: ast.expr) -> tuple[str, bool] | None:
        """(parameter, whether the test is ``is None``) for ``p is None`` / ``p is not None``."""
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
                and isinstance(test.left, ast.Name) and test.left.id in optional
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            return test.left.id, isinstance(test.ops[0], ast.Is)
        return None

    def visit(node: ast.AST, guard: str | None) -> None:
        if isinstance(node, (ast.If, ast.IfExp)) and (found := none_test(node.test)) is not None:
            name, is_none = found
            then = node.body if isinstance(node.body, list) else [node.body]
            other = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            for child in then:
                visit(child, name if is_none else guard)
            for child in other:
                visit(child, guard if is_none else name)
            return
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            guards.add(guard)
        for inner in ast.iter_child_nodes(node):
            visit(inner, guard)

    visit(tree, None)
    return next(iter(guards)) if len(guards) == 1 and None not in guards else None


def _root_input(gc: GraphCollection, owner_path: str, owner: nn.Module, param: str) -> str | None:
    """The root forward's input that ``owner``'s ``param`` received as a traced input: ``param``
    itself for the root, else the root placeholder passed to ``owner`` for it; None otherwise."""
    graph = gc.graph_for("")
    if graph is None:
        return None
    placeholders = {str(n.target).lstrip("*"): n for n in graph.nodes if n.op == "placeholder"}
    if not owner_path:
        return param if param in placeholders else None
    call = next((t.call_args[id(owner)] for t in gc.tracers if id(owner) in t.call_args), None)
    if call is None:
        return None
    args, kwargs = call
    try:
        bound = inspect.signature(inspect.unwrap(type(owner).forward)).bind_partial(None, *args, **kwargs)
    except (TypeError, ValueError):
        return None
    value = bound.arguments.get(param)
    node = getattr(value, "node", None)
    if node is None or node.op != "placeholder" or node.graph is not graph:
        return None
    return str(node.target).lstrip("*")


def find_hazards(gc: GraphCollection) -> list[Finding]:
    """Every hazard finding over a traced collection (no findings under aborted forwards)."""
    anchors = _Anchors(gc)
    return [*_dead_inplace(gc, anchors), *_unused(gc, anchors)]
