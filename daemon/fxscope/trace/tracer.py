"""RobustTracer: a ``torch.fx.Tracer`` that reports every untraceable line and keeps going.

A module whose own forward has an error finding is *failed*: it appears in its parent's graph as
a leaf ``call_module`` node (the nodes its exploration produced are erased), while exploration
went on inside it so that every problem of one forward is found in one run. The fx module stack
is restored in ``finally`` so failures at any depth never corrupt the parent's state.

>>> import torch
>>> class Gate(torch.nn.Module):
...     def forward(self, x):
...         if x.sum() > 0:
...             return x
...         return -x
>>> class Net(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.gate = Gate()
...         self.fc = torch.nn.Linear(4, 4)
...     def forward(self, x):
...         return self.fc(self.gate(x))
>>> tracer = RobustTracer()
>>> graph = tracer.trace(Net())
>>> [n.op for n in graph.nodes]
['placeholder', 'call_module', 'call_module', 'output']
>>> tracer.is_failed(tracer.root.gate), [f.code for f in tracer.findings.items()]
(True, ['FXS101'])
"""

from __future__ import annotations

import dis
import inspect
import os
import sys
import types
import weakref
from typing import Any, Callable, Iterator, cast

import torch
import torch.nn as nn
from torch.fx import Graph, Node, Proxy, Tracer

from fxscope.model.codes import CODES
from fxscope.trace.assembly import TYPE_NAMES, FindingAssembler, Layer, Site, type_name
from fxscope.trace._torch_compat import (autowrap_function_ids, direct_parameters, pytree_out_spec, tree_unflatten,
                                         uses_pytree_codegen)
from fxscope.trace.classify import bool_construct, classify_exception, is_numpy, quoted, subject
from fxscope.trace.findings import FindingSet
from fxscope.trace.outputs import ReturnedValue, call_watching_return, unrecordable_output_hint, unrecordable_part
from fxscope.trace.placeholders import assert_skip, is_consequence, skipping_asserts, unpack_count
from fxscope.trace.proxy_hooks import proxy_hooks
from fxscope.trace.frames import INTERNAL, USER, FrameClassifier, SourceLocation, frame_location

__all__ = ["RobustTracer", "CONTAINER_TYPES", "type_name", "decorated_root_args", "has_forward",
           "class_location"]

#: Modules without a forward of their own: never traced, never failures.
CONTAINER_TYPES = (nn.ModuleList, nn.ModuleDict, nn.ParameterList, nn.ParameterDict)

#: FXS101 on an `assert`: the fixes that keep the check or drop it (not `torch.where`).
_ASSERT_HINT = (
    "An `assert` needs a Python bool, which a traced value does not have. Record the check in the "
    "graph with `torch._assert(cond, \"message\")` (torch.fx keeps it as a node and it runs when the "
    "traced module runs; write a chained comparison `a < x < b` as `(a < x) & (x < b)` there), or "
    "remove the assert (or check the inputs before calling the model)."
)

#: file name -> whether it is numpy's (a traced value handed to numpy: FXS106).
_NUMPY_FILES: dict[str, bool] = {}
class _hybridmethod:
    """A method bound to the class when called on the class, to the instance otherwise."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, cls: type) -> Callable[..., Any]:
        return types.MethodType(self.fn, cls if obj is None else obj)


class _ModuleCall:
    """One module forward being explored."""

    __slots__ = ("module", "path", "marker", "completed_len", "failed", "aborted", "message", "scope")

    def __init__(self, module: nn.Module, path: str, marker: Node | None, completed_len: int,
                 full: str = "") -> None:
        self.module = module
        self.path = path
        #: (full path, qualified type): the scope of findings and calls in this forward.
        self.scope = (full, type_name(module))
        self.marker = marker
        self.completed_len = completed_len
        self.failed = False
        self.aborted = False
        self.message: str | None = None


class RobustTracer(Tracer):
    """A ``torch.fx.Tracer`` that records failing module calls as leaves and keeps tracing.

    Args:
        is_user_file: predicate telling which files are user (workspace) code; findings in other
            non-internal code (site-packages) get the innermost user frame as ``anchor``.
        prefix: module path of ``root`` inside the original model (for scopes), e.g. ``blocks.0``.
        leaf_types: extra leaf classes for this tracer only.
        classifier: a shared :class:`FrameClassifier` (its cache is reused across tracers).
        default_anchor: anchor for findings outside user code when no user frame is on the stack.
        wrap_functions: functions recorded as one ``call_function`` node, never traced into
            (fx's ``autowrap_functions``; e.g. ``einops.rearrange``).
        stand_in: ``root`` is a child traced on its own with stand-in arguments (its parent failed
            before calling it): exceptions that the stand-in call can cause are not findings.
        target_site: where the target is defined in the workspace, the anchor of a finding about
            the root module itself (no ``forward``) when its class is outside the workspace.
    """

    #: How often one forward is explored again to skip asserts that fail on placeholders.
    _MAX_RETRIES = 4

    #: Marks tracers whose proxies report through ``_report`` (see ``proxy_hooks``).
    _fxscope_reports = True
    _leaves: set[type] = set()
    _leaf_instances: "weakref.WeakSet[nn.Module]" = weakref.WeakSet()

    def __init__(
        self,
        *,
        is_user_file: Callable[[str], bool] | None = None,
        prefix: str = "",
        leaf_types: tuple[type, ...] = (),
        classifier: FrameClassifier | None = None,
        default_anchor: SourceLocation | None = None,
        wrap_functions: tuple[Callable[..., Any], ...] = (),
        stand_in: bool = False,
        target_site: SourceLocation | None = None,
    ) -> None:
        super().__init__(autowrap_functions=tuple(wrap_functions))
        self.stand_in = stand_in
        #: Where the target is defined in the workspace (its class or factory): the anchor of a
        #: finding about the root module itself located outside the workspace.
        self.target_site = target_site
        self.prefix = prefix
        #: Anchor for findings outside user code when no user frame is on the stack (a library
        #: module traced on its own: where user code called it in the parent's trace).
        self.default_anchor = default_anchor
        self.classifier = classifier or FrameClassifier.shared(is_user_file)
        #: Locates what this tracer reports and holds its findings (:attr:`findings`).
        self.assembly = FindingAssembler(self.classifier, default_anchor=default_anchor,
                                         wrapped=lambda: autowrap_function_ids(self))
        self._own_leaf_types: set[type] = set(leaf_types)
        self._own_leaf_instances: "weakref.WeakSet[nn.Module]" = weakref.WeakSet()
        self._failed: dict[int, str] = {}
        self._visited: set[int] = set()
        self._static_leaves: dict[int, bool] = {}
        self._reset_trace_state()

    # ------------------------------------------------------------------ leaves (modelopt API)
    @staticmethod
    def _leaf_registry(self_or_cls: type[RobustTracer] | RobustTracer, m: nn.Module | type) -> Any:
        """The set a class or instance leaf goes in: class-wide, or this tracer's own."""
        if isinstance(self_or_cls, type):
            return self_or_cls._leaves if isinstance(m, type) else self_or_cls._leaf_instances
        return self_or_cls._own_leaf_types if isinstance(m, type) else self_or_cls._own_leaf_instances

    @_hybridmethod
    def register_leaf(self_or_cls, m: nn.Module | type) -> None:
        """Register a leaf: a class or an instance; on the class for every tracer, on a tracer
        instance for that tracer only."""
        RobustTracer._leaf_registry(self_or_cls, m).add(m)
        if not isinstance(self_or_cls, type):
            self_or_cls._static_leaves = {}

    @_hybridmethod
    def unregister_leaf(self_or_cls, m: nn.Module | type) -> None:
        """Undo :meth:`register_leaf` (no error when not registered)."""
        RobustTracer._leaf_registry(self_or_cls, m).discard(m)
        if not isinstance(self_or_cls, type):
            self_or_cls._static_leaves = {}

    @_hybridmethod
    def is_registered_leaf(self_or_cls, m: nn.Module | type) -> bool:
        """Whether ``m`` (class or instance) is a registered leaf here."""
        cls = m if isinstance(m, type) else type(m)
        registries = [RobustTracer._leaves, self_or_cls._leaves]
        if not isinstance(self_or_cls, type):
            registries.append(self_or_cls._own_leaf_types)
        if any(cls in r for r in registries):
            return True
        if isinstance(m, type):
            return False
        if m in RobustTracer._leaf_instances or m in self_or_cls._leaf_instances:
            return True
        return not isinstance(self_or_cls, type) and m in self_or_cls._own_leaf_instances

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Standard torch.nn leaves, registered leaves and failed modules."""
        static = self._static_leaves.get(id(m))
        if static is None:  # memoised per trace: fx asks again for every call
            static = self._static_leaves[id(m)] = self.is_static_leaf(m, module_qualified_name)
        return static or id(m) in self._failed

    def is_static_leaf(self, m: nn.Module, module_qualified_name: str = "") -> bool:
        """A leaf by type or registration (standard torch.nn modules, registered leaves)."""
        return super().is_leaf_module(m, module_qualified_name) or self.is_registered_leaf(m)

    # ------------------------------------------------------------------ results (modelopt API)
    def record_call_module(self, m: nn.Module, e: BaseException | str | None = None) -> None:
        """Mark ``m`` visited, and failed with ``e`` when given."""
        self._visited.add(id(m))
        if e is not None:
            msg = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
            self._failed.setdefault(id(m), msg)

    def is_failed(self, m: nn.Module) -> bool:
        """Whether ``m``'s own forward could not be traced."""
        return id(m) in self._failed

    def failure_msg(self, m: nn.Module) -> str | None:
        """Why ``m`` failed (the first error in its own forward), or None."""
        return self._failed.get(id(m))

    def is_unvisited(self, m: nn.Module) -> bool:
        """Whether ``m`` was never called while tracing."""
        return id(m) not in self._visited

    # ------------------------------------------------------------------ state
    def _reset_trace_state(self) -> None:
        self._static_leaves = {}
        self.assembly.reset()
        #: Full paths of modules in the order their forward was first entered (FSDP exec order).
        self.forward_order: list[str] = []
        self._param_order: list[str] = []
        #: Parameter uses in order, materialised on demand (:attr:`param_order`,
        #: :attr:`used_params`): flat pairs ``leaf module, full path`` or ``parameter, full name``
        #: (flat: no tuple per call, fewer allocations, fewer GC passes).
        self._param_log: list[Any] = []
        self._param_log_done = 0
        #: (full path, "traced" | "leaf") for every module call represented in the final graph.
        self.completed: list[tuple[str, str]] = []
        #: Full paths whose forward was cut short by an exception.
        self.aborted: set[str] = set()
        #: id(module) -> (args, kwargs) of its first explored (non-leaf) call.
        self.call_args: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        #: id(module) -> innermost user location calling it, for modules whose code is not the user's.
        self.call_anchors: dict[int, SourceLocation | None] = {}
        self._calls: list[_ModuleCall] = []
        self._param_cache: dict[str, Proxy] | None = None
        self._site_visits: dict[tuple[Any, ...], int] = {}
        self._sources: dict[tuple[int, int], tuple[tuple[str, int], tuple[types.CodeType, int]]] = {}
        self._leaf_caller: types.FrameType | None = None
        self._entry_frame: types.FrameType | None = None
        self._seen_paths: set[str] = set()
        self._seen_params: set[str] = set()
        self._used_params: set[int] = set()
        #: id() of submodules read as attributes in forward (`self.blocks`, `self.proj.weight`).
        self.accessed_modules: set[int] = set()
        #: Frames that received a placeholder (and their callers): their exceptions may be
        #: consequences of it, not the model's problems.
        self._placeholder_frames: set[types.FrameType] = set()
        #: Frames in which to_bool picked a branch, with the sites it picked (last one last): a
        #: ``raise`` statement reached there is the model's own check on a branch plain fx never
        #: takes, not a finding.
        self._guesses: dict[types.FrameType, list[tuple[Any, ...]]] = {}
        #: to_bool sites whose branch choice is inverted (their first pick reached a ``raise``).
        self._flipped: set[tuple[Any, ...]] = set()
        #: {code: {assert line: next line}}: asserts that failed only on placeholders.
        self._skips: dict[types.CodeType, dict[int, int]] = {}
        self._retry = False
        #: What the root's forward returned (None until it returns): fx records it as the output.
        self._returned: ReturnedValue | None = None

    @property
    def findings(self) -> FindingSet:
        """The findings of the last trace (one per expression)."""
        return self.assembly.findings

    @property
    def param_order(self) -> list[str]:
        """Full parameter names in the order of first use (read in forward, or owned by a
        called leaf)."""
        self._flush_param_log()
        return self._param_order

    @property
    def used_params(self) -> set[int]:
        """id() of every parameter read in forward (get_attr) or owned by a called leaf."""
        self._flush_param_log()
        return self._used_params

    def _flush_param_log(self) -> None:
        log = self._param_log
        if self._param_log_done == len(log):
            return
        used, seen, order = self._used_params, self._seen_params, self._param_order
        pending = log[self._param_log_done:]
        for item, full in zip(pending[::2], pending[1::2]):
            if isinstance(item, nn.Module):
                params = direct_parameters(item)
                names = [(f"{full}.{name}" if full else name, p) for name, p in params if p is not None]
            else:
                names = [(full, item)]
            for name, p in names:
                used.add(id(p))
                if name not in seen:
                    seen.add(name)
                    order.append(name)
        self._param_log_done = len(log)

    def full_path(self, path: str) -> str:
        """``path`` (relative to the traced root) inside the original model."""
        if not self.prefix:
            return path
        return f"{self.prefix}.{path}" if path else self.prefix

    # ------------------------------------------------------------------ tracing
    def trace(self, root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root``; never raises for problems in the model's code.

        A root that is itself a leaf becomes one ``call_module`` node. A root whose own forward
        fails gives an empty ``Graph`` (its children are traced on their own by
        :func:`fxscope.trace.recursive_trace`).
        """
        self._reset_trace_state()
        self._entry_frame = sys._getframe()
        root_call = _ModuleCall(root, "", None, 0, self.full_path("")) if isinstance(root, nn.Module) else None
        if root_call is not None:
            self._visited.add(id(root))
            self._note_forward(self.full_path(""))
            self._calls.append(root_call)
        if isinstance(root, nn.Module) and root_call is not None and not has_forward(root):
            return self._without_forward(root, root_call)
        leaf_root = isinstance(root, nn.Module) and self.is_leaf_module(root, "")
        try:
            for attempt in range(self._MAX_RETRIES + 1):
                self._returned = None
                try:
                    with proxy_hooks(), skipping_asserts(self._skips):
                        if leaf_root:
                            graph = self._trace_leaf_root(cast(nn.Module, root), concrete_args)
                        else:
                            graph = super().trace(root, concrete_args)
                except Exception as e:  # the root's own forward raised, or fx could not record its output
                    if root_call is None:
                        raise
                    if self._returned is not None:
                        self._report_output(e, self._returned, root_call)
                        break
                    self._record_exception(e, root_call)
                    graph = self.graph
                    if self._retry and attempt < self._MAX_RETRIES:
                        # Explore the root's forward again, past the assert a placeholder failed.
                        self._retry = root_call.aborted = False
                        self.aborted.discard(self.full_path(""))
                        del self._calls[1:]
                        self.completed.clear()
                        self._site_visits.clear()
                        continue
                break
        finally:
            self._calls.clear()
            self._entry_frame = None
            self._placeholder_frames.clear()
            self._guesses.clear()
            self._returned = None
        if root_call is not None and root_call.failed:
            self.record_call_module(root_call.module, root_call.message or "failed")
            self.completed.clear()
            self.graph = Graph(tracer_cls=type(self))
            return self.graph
        if root_call is not None and not leaf_root:
            self.completed.insert(0, (self.full_path(""), "traced"))
        return graph

    def _without_forward(self, root: nn.Module, call: _ModuleCall) -> Graph:
        """A root module whose class has no ``forward`` (a container, a cache holding buffers):
        plain fx raises NotImplementedError; here an FXS107 at its class says what is missing. A
        module traced on its own (its parent failed) fails without one: nothing calls it."""
        cls = type(root)
        message = (f"`{cls.__qualname__}` has no `forward` method, so there is nothing to trace: torch.fx "
                   f"traces a module's `forward`, and nn.Module's default raises NotImplementedError "
                   f"(Module [{cls.__name__}] is missing the required \"forward\" function)")
        self._calls.clear()
        self._entry_frame = None
        loc = class_location(cls)
        if loc is not None and not self.prefix:
            anchor = None if self.classifier._classify(loc.file) == USER else self.default_anchor or self.target_site
            hint = ("Check a module that has a `forward`: give this class one, or point the target at the "
                    "model that uses it (a factory returning that model). A container (`nn.ModuleList`, "
                    "`nn.ModuleDict`) or a state holder (a key/value cache) is not traced on its own.")
            self._add_finding("FXS107", message, Site(loc, anchor, (), hint), call)
        self.record_call_module(root, f"FXS107: {message}")
        self.aborted.add(self.full_path(""))  # nothing ran: its submodules' usage is unknown
        self.completed.clear()
        self.graph = Graph(tracer_cls=type(self))
        return self.graph

    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | tuple[Any, ...] | None = None) -> tuple[Any, list[Any]]:
        """Like fx, except for a decorated forward (see :func:`decorated_root_args`); a module's
        forward is called through :func:`~fxscope.trace.outputs.call_watching_return`, so an output
        fx cannot record is reported at the ``return`` that produced it."""
        fn, args = decorated_root_args(self, super().create_args_for_root, root_fn, is_module, concrete_args)
        if not is_module:
            return fn, args
        code = getattr(inspect.unwrap(root_fn), "__code__", None)

        def forward_returning(*values: Any) -> Any:
            self._returned = call_watching_return(fn, code, values)
            return self._returned.value

        forward_returning.__wrapped__ = fn  # type: ignore[attr-defined]
        return forward_returning, args

    def _trace_leaf_root(self, root: nn.Module, concrete_args: dict[str, Any] | None) -> Graph:
        """A leaf root: placeholders, one call_module node, the output."""
        self.root = root
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        fn, args = self.create_args_for_root(type(root).forward, True, concrete_args)
        out = self.create_proxy("call_module", "", tuple(args[1:]), {})
        self.create_node("output", "output", (self.create_arg(out),), {})
        self._note_leaf_params(root, self.full_path(""))
        self.completed.append((self.full_path(""), "leaf"))
        return self.graph

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """Explore ``m``'s forward; on an error finding in it, replace it by a leaf node."""
        # Hot path (every module call): bookkeeping inlined.
        path = self.path_of_module(m)
        prefix = self.prefix
        full = (f"{prefix}.{path}" if path else prefix) if prefix else path
        key = id(m)
        self._visited.add(key)
        if full not in self._seen_paths:
            self._seen_paths.add(full)
            self.forward_order.append(full)
        if self.is_leaf_module(m, path):
            depth = len(self.module_stack)
            # The node's source is the caller's line: create_node need not walk fx's frames.
            self._leaf_caller = sys._getframe(1)
            try:
                ret = super().call_module(m, forward, args, kwargs)
            except Exception as e:
                self._leaf_caller = None
                if not self._calls:
                    raise
                self._restore_module_stack(depth)
                self._note_leaf_params(m, full)
                self.completed.append((full, "failed" if key in self._failed else "leaf"))
                return self._unrecordable_call(e, m, full, sys._getframe(1))
            self._leaf_caller = None
            log = self._param_log
            log.append(m)
            log.append(full)
            self.completed.append((full, "failed" if key in self._failed else "leaf"))
            return ret
        if key not in self.call_args:  # leaves are never traced on their own: explored calls only
            self.call_args[key] = (args, kwargs)
        if key not in self.call_anchors:
            self.call_anchors[key] = self._user_anchor(m)
        call = _ModuleCall(m, path, next(reversed(self.graph.nodes), None), len(self.completed), full)
        depth = len(self.module_stack)
        self._calls.append(call)
        try:
            for attempt in range(self._MAX_RETRIES + 1):
                try:
                    if self._skips:
                        with skipping_asserts(self._skips):
                            ret = super().call_module(m, forward, args, kwargs)
                    else:
                        ret = super().call_module(m, forward, args, kwargs)
                except Exception as e:  # noqa: BLE001 - what the forward raises is what is reported
                    self._restore_module_stack(depth)
                    self._record_exception(e, call)
                    if self._retry and attempt < self._MAX_RETRIES:
                        self._explore_again(call)
                        continue
                break
        finally:
            self._calls.pop()
        if not call.failed:
            self.completed.append((full, "traced"))
            return ret
        explored_end = next(reversed(self.graph.nodes), None)
        del self.completed[call.completed_len:]
        self.record_call_module(m, call.message or "failed")
        num_calls = getattr(self, "num_calls", None)
        if isinstance(num_calls, dict) and num_calls.get(path):
            num_calls[path] -= 1  # the leaf node stands for this call, not for a second one
        leaf_ret, err = self._leaf_call(m, forward, args, kwargs)  # now a leaf
        self.completed.append((full, "failed"))
        if err is None:
            self._erase_after(call.marker, explored_end)
            return leaf_ret
        # fx cannot record this call as a node (an argument has no graph form): the caller fails
        # here, and its exploration goes on with the explored value (or an opaque one).
        return self._unrecordable_call(err, m, full, sys._getframe(1), None if call.aborted else ret, failed=True)

    def _explore_again(self, call: _ModuleCall) -> None:
        """Undo a forward's aborted exploration before exploring it again (past an assert that a
        placeholder failed): its nodes, completed calls and branch choices."""
        self._retry = call.aborted = False
        self.aborted.discard(call.scope[0])
        self._erase_after(call.marker)
        del self.completed[call.completed_len:]
        owners = {id(sub) for sub in call.module.modules()}
        for key in [k for k in self._site_visits if k[0] in owners]:
            del self._site_visits[key]

    def _leaf_call(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[Any, Exception | None]:
        """One ``call_module`` node for ``m``; the error instead when fx cannot record it."""
        depth = len(self.module_stack)
        try:
            return super().call_module(m, forward, args, kwargs), None
        except Exception as e:
            if not self._calls:
                raise
            self._restore_module_stack(depth)
            return None, e

    def _restore_module_stack(self, depth: int) -> None:
        """Drop the entries an exception left on fx's module stack (fx pops them only on
        success); entries are only ever pushed above ``depth`` during a call."""
        stack = self.module_stack
        while len(stack) > depth:
            stack.popitem()

    def _unrecordable_call(self, e: Exception, m: nn.Module, full: str, start: types.FrameType,
                           explored: Any = None, failed: bool = False) -> Any:
        """Report, on the calling forward, a module call fx cannot record; return a value to go on.
        (The message names the class, not the instance: one finding covers every instance.)"""
        cls = type(m).__name__
        what = (f"the called `{cls}` could not be traced, and it cannot be kept as one `call_module` "
                "node either" if failed else f"the call of leaf module `{cls}` cannot be recorded as a "
                "`call_module` node")
        self._report("FXS107", f"{what}: fx cannot record one of its arguments ({type(e).__name__}: {e})",
                     start=start)
        if explored is not None:
            return explored
        return self.create_proxy("call_function", _unrecorded_call, (full,), {})

    def _report_output(self, e: Exception, returned: ReturnedValue, call: _ModuleCall) -> None:
        """FXS107 at the root forward's ``return``: its value (``returned``) has a part fx cannot
        record as the graph output (``e`` is fx's error). A submodule traced on its own (its parent
        failed) fails without a finding: in the model its caller receives the value, which fx
        records; only a graph of its own would need it as an output."""
        forward = inspect.unwrap(type(call.module).forward)
        where = f"`{type(call.module).__name__}.forward`"
        value = returned.value
        spec = pytree_out_spec(self.graph)
        if spec is not None and isinstance(value, list):  # fx flattened it (pytree concrete args)
            value = tree_unflatten(value, spec)
        part = unrecordable_part(value, self._recordable)
        if part is not None:
            path, cls = part
            what = "it is" if path == "output" else f"`{path}` is"
            message = (f"{where} returns a value fx cannot record as the graph output: {what} a "
                       f"`{type_name(cls)}`, which has no graph form ({type(e).__name__}: {e})")
            shown = cls.__name__
        else:
            message = f"{where} returns a value fx cannot record as the graph output ({type(e).__name__}: {e})"
            shown = type(value).__name__
        if self.prefix:
            call.failed = True
            call.message = call.message or f"traced on its own: {message}"
            return
        try:
            takes_use_cache = "use_cache" in inspect.signature(forward).parameters
        except (TypeError, ValueError):
            takes_use_cache = False
        loc = returned.location
        code = getattr(forward, "__code__", None)
        anchor = None if code is not None and self.classifier.kind(code) == USER else self.default_anchor
        self._add_finding("FXS107", message, Site(loc, anchor, (), unrecordable_output_hint(shown, takes_use_cache)),
                          call)

    def _recordable(self, leaf: Any) -> bool:
        """Whether fx can record ``leaf`` (not a tuple, list or dict) as part of a graph output."""
        if isinstance(leaf, (Proxy, torch.Tensor, str, int, float, complex, type(None), type(...),
                             torch.dtype, torch.device, torch.memory_format, torch.layout)):
            return True
        try:
            self.create_arg(leaf)  # the root failed: whatever this adds to its graph is discarded
        except Exception:  # noqa: BLE001 - whatever fx cannot record
            return False
        return True

    def _user_anchor(self, m: nn.Module) -> SourceLocation | None:
        """For a module whose forward is not user code, where user code called into it (the
        innermost user frame), inherited from the tracer when there is none."""
        if not self.assembly.is_library_forward(m):  # user code, or torch's own modules (never traced alone)
            return None
        frame: types.FrameType | None = sys._getframe(2)
        kind_of = self.classifier.kind
        while frame is not None and frame is not self._entry_frame:
            if kind_of(frame.f_code) == USER:
                return frame_location(frame)
            frame = frame.f_back
        return self.default_anchor

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """Like fx, and records parameter first-use order."""
        self._param_cache = parameter_proxy_cache
        if isinstance(attr_val, nn.Module):
            self.accessed_modules.add(id(attr_val))
        ret = super().getattr(attr, attr_val, parameter_proxy_cache)
        if isinstance(attr_val, torch.Tensor) and isinstance(attr_val, nn.Parameter):
            if isinstance(ret, Proxy) and ret.node.op == "get_attr":
                self._param_log += (attr_val, self.full_path(str(ret.node.target)))
            else:
                self._used_params.add(id(attr_val))
        return ret

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Like fx, and annotates the node with its module scope and source line."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        # Hot path (every node): no helper calls, memoised type names and frame kinds.
        scope = self.scope
        meta = node.meta
        path, prefix = scope.module_path, self.prefix
        meta["fxscope_scope"] = (f"{prefix}.{path}" if path else prefix) if prefix else path
        module_type = scope.module_type
        if module_type is None and isinstance(self.root, nn.Module):
            module_type = type(self.root)
        if module_type is not None:
            meta["fxscope_scope_type"] = TYPE_NAMES.get(module_type) or type_name(module_type)
        if kind == "call_module" and self._calls:
            # The scope of a leaf call is the leaf itself; findings about the calling line
            # belong to the module whose forward contains it.
            meta["fxscope_caller_scope"] = self._calls[-1].scope
        frame = self._leaf_caller if kind == "call_module" else None
        if frame is None:
            frame = sys._getframe(1)
        kinds = self.classifier._kinds
        classify = self.classifier.kind
        sources = self._sources
        check_numpy = kind in ("call_method", "call_function")
        foreign = False
        stop = self._entry_frame  # frames outside trace() (its caller) are not the model's
        while frame is not None and frame is not stop:
            code = frame.f_code
            filename = code.co_filename
            k = kinds.get(filename)
            if k is None:
                k = classify(code)
            if k != INTERNAL:
                # Nodes of one instruction (a loop over blocks) share their tuples: fewer live
                # objects, fewer GC passes. The cache holds the code object, so ids stay unique.
                lasti = frame.f_lasti
                entry = sources.get((id(code), lasti))
                if entry is None:
                    entry = sources[(id(code), lasti)] = ((filename, frame.f_lineno), (code, lasti))
                meta["fxscope_source"], meta["fxscope_pos"] = entry
                break
            if check_numpy and not foreign:
                numpy_file = _NUMPY_FILES.get(filename)
                if numpy_file is None:
                    numpy_file = _NUMPY_FILES[filename] = is_numpy(filename)
                foreign = numpy_file
            frame = frame.f_back
        # `.item()`, `.tolist()` and `.numpy()` on a traced value are recorded as call_method
        # nodes and the traced module computes what the model does: no finding (what uses their
        # result as a Python value is one, at that line).
        if foreign and kind in ("call_method", "call_function"):
            self._report(
                "FXS106",
                f"a traced value is passed to numpy, which calls `{getattr(target, '__name__', target)}`"
                " on it instead of computing with torch",
                start=sys._getframe(1),
            )
        return node

    # ------------------------------------------------------------------ hooks (report and continue)
    def to_bool(self, obj: Proxy) -> bool:
        """Record FXS101 and pick a branch: the first visit of a site in a module instance takes
        the true branch, later visits alternate (so ``while`` loops end). Keyed per instance, every
        instance of a class explores the same path and reports the same findings."""
        frame = self._offending_frame(sys._getframe(1))
        construct = "an `if`/`while` condition"
        if frame is not None:
            construct = bool_construct(frame)
        loc = self._report(
            "FXS101",
            None,
            start=sys._getframe(1),
            message_fn=lambda loc: f"{subject(loc)} decides {construct}; its value is "
            "unknown while tracing",
            hint=_ASSERT_HINT if construct == "an `assert`" else None,
        )
        owner = id(self._calls[-1].module) if self._calls else 0
        key = (owner, loc.file, loc.line, loc.column) if loc else (owner,)
        visits = self._site_visits.get(key, 0)
        self._site_visits[key] = visits + 1
        if frame is not None:
            self._guesses.setdefault(frame, []).append(key)
        return (visits % 2 == 0) != (key in self._flipped)

    def concrete_answer(self, obj: Proxy, question: str, start: types.FrameType | None) -> Any:
        """The answer to ``len()``/``int()``/``float()``/index (``question``: ``"len"``,
        ``"integer"``, ``"float"``) of ``obj`` when this tracer knows it, else None (then the
        question is a finding). Only shape-aware tracers know answers."""
        return None

    def record_setitem(self, obj: Proxy, key: Any, value: Any) -> bool:
        """Record ``obj[key] = value`` as a node when plain fx would (it holds a real tensor there),
        and say so; False reports FXS105. Only shape-aware tracers proxy such tensors (buffers)."""
        return False

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """Record FXS102 and iterate over a placeholder: as many elements as an unpacking of the
        result needs (``b, n, h = *x.shape, heads``), else one."""
        caller = self._offending_frame(sys._getframe(1))  # the model line that iterates
        self._report(
            "FXS102",
            None,
            start=sys._getframe(1),
            message_fn=lambda loc: f"a traced value is iterated in {quoted(loc, 'this expression')}; "
            "its length is unknown while tracing",
            placeholder=True,
        )
        count = unpack_count(caller.f_code, caller.f_lasti) if caller is not None else None
        items: Any = obj  # a Proxy records indexing (fx adds its operators at run time)
        return iter([items[i] for i in range(1 if count is None else count)])

    def keys(self, obj: Proxy) -> Any:
        """Record FXS102 for ``**x`` on a traced value.

        A submodule traced on its own (children of a failed module) gets its ``**kwargs`` as one
        placeholder, which fx cannot unpack; that is an artefact of tracing it alone, not a
        problem in its code, so it is passed on as empty without a finding."""
        node = getattr(obj, "node", None)
        if (self.prefix and node is not None and node.op == "placeholder"
                and str(node.target).startswith("**")):
            return ()
        self._report("FXS102", "`**` unpacks a traced value; its keys are unknown while tracing",
                     start=sys._getframe(1))
        return ()

    # ------------------------------------------------------------------ reporting
    def _offending_frame(self, start: types.FrameType | None) -> types.FrameType | None:
        for frame in self.classifier.model_frames(start, self._entry_frame):
            return frame
        return None

    def _layer(self) -> Layer:
        """The module whose forward is being explored (for the hints of a finding)."""
        module = self._calls[-1].module if self._calls else None
        return Layer(module, module is not None and module is getattr(self, "root", None) and not self.prefix)

    def _report(
        self,
        code: str,
        message: str | None,
        *,
        start: types.FrameType | None,
        hint: str | None = None,
        message_fn: Callable[[SourceLocation], str] | None = None,
        placeholder: bool = False,
    ) -> SourceLocation | None:
        """Record a finding located at the first model frame from ``start`` outwards.
        ``placeholder``: the caller goes on with a placeholder value (a consequence of it in
        these frames is not a finding)."""
        frames = self.assembly.model_frames(start, self._entry_frame)
        if placeholder:
            self._placeholder_frames.update(frames)
        if not frames:
            call = self._calls[-1] if self._calls else None
            if call is not None:
                call.failed = True
                call.message = call.message or f"{code}: {message or CODES[code].title}"
            return None
        site = self.assembly.at_frames(frames, self._layer(), hint)
        self._add_finding(code, message or (message_fn(site.location) if message_fn else code), site)
        return site.location

    def _add_finding(self, code: str, message: str, site: Site, call: _ModuleCall | None = None) -> None:
        """The finding at ``site`` fails the forward being explored (``call``, default: the innermost)."""
        call = call or (self._calls[-1] if self._calls else None)
        if call is not None:
            call.failed = True
            if call.message is None:
                call.message = f"{code}: {message}"
        self.assembly.add(code, message, site, call.scope if call is not None else None)

    def _record_exception(self, e: BaseException, call: _ModuleCall) -> None:
        """Record an exception that ended ``call``'s forward, at the innermost model frame.

        A consequence of a placeholder (an exception in a frame that received one) is not a
        finding; when it is an ``assert``, ``self._retry`` asks for the forward to be explored
        again with that assert skipped."""
        call.aborted = True
        self.aborted.add(self.full_path(call.path))
        if getattr(e, "_fxscope_reported", False):
            call.failed = True
            return
        tb_entries, numpy_involved = self.assembly.model_traceback(e)
        if tb_entries and (self._placeholder_consequence(e, tb_entries[-1])
                           or self._guessed_raise(tb_entries)):
            call.failed = True
            call.message = call.message or f"{type(e).__name__}: {e}"
            return
        outer = self.assembly.model_frames(sys._getframe(1), self._entry_frame)
        if not tb_entries and not outer:  # raised by the tracer machinery, with no model frame to blame
            call.failed = True
            call.message = call.message or f"{type(e).__name__}: {e}"
            return
        # Without a model frame in its traceback, it was raised by the tracer machinery for this
        # call: located at the caller.
        site = (self.assembly.at_traceback(tb_entries, outer, self._layer()) if tb_entries
                else self.assembly.at_frames(outer, self._layer()))
        loc, frame = site.location, site.frame
        code, message, own_hint = classify_exception(e, numpy_involved, loc, frame)
        if self.stand_in and code == "FXS107" and (isinstance(e, AssertionError) or "NoneType" in str(e)):
            # Traced with stand-in arguments (the parent failed before calling it): an assert or a
            # None where the real call passes a value is an artefact of the stand-in call.
            call.failed = True
            call.message = call.message or f"{type(e).__name__}: {e}"
            return
        self._add_finding(code, message, Site(loc, site.anchor, site.related, own_hint or site.hint, frame), call)

    def _guessed_raise(self, tb_entries: list[types.TracebackType]) -> bool:
        """Whether the exception comes from a ``raise`` statement of the model (its own argument
        check) on a branch that to_bool picked: plain fx stops at that ``if`` (reported as FXS101)
        and never reaches it. The last branch picked on the way is inverted and the forward
        explored again (asks ``self._retry``), so the rest of the forward is still explored."""
        if not self._guesses or not _is_raise_statement(tb_entries[-1]):
            return False
        guessed = [self._guesses[t.tb_frame] for t in tb_entries if t.tb_frame in self._guesses]
        if not guessed:
            return False
        site = guessed[-1][-1]
        if site not in self._flipped:
            self._flipped.add(site)
            self._retry = True
        return True

    def _placeholder_consequence(self, e: BaseException, tb: types.TracebackType) -> bool:
        """Whether ``e``, raised at ``tb`` (the innermost model frame), follows from a placeholder
        the tracer handed out; for an ``assert``, arrange for it to be skipped next time."""
        if not self._placeholder_frames or tb.tb_frame not in self._placeholder_frames or not is_consequence(e):
            return False
        if isinstance(e, AssertionError):
            site = assert_skip(tb)
            if site is not None:
                code, line, target = site
                lines = self._skips.setdefault(code, {})
                if line not in lines:
                    lines[line] = target
                    self._retry = True
        return True

    # ------------------------------------------------------------------ bookkeeping
    def _note_forward(self, full: str) -> None:
        if full not in self._seen_paths:
            self._seen_paths.add(full)
            self.forward_order.append(full)

    def _note_leaf_params(self, m: nn.Module, full: str) -> None:
        self._param_log.append(m)
        self._param_log.append(full)

    def _erase_after(self, marker: Node | None, end: Node | None = None) -> None:
        """Erase every node created after ``marker`` up to ``end`` (default: the last node):
        the exploration of a failed module."""
        graph = self.graph
        erased: set[Node] = set()
        explored: list[Node] = []
        for node in reversed(graph.nodes):  # last first
            if end is not None and not explored and node is not end:
                continue
            if node is marker:
                break
            explored.append(node)
        for node in explored:
            if not node.users:
                graph.erase_node(node)
                erased.add(node)
        if erased and self._param_cache:
            for k in [k for k, p in self._param_cache.items() if p.node in erased]:
                del self._param_cache[k]


# ---------------------------------------------------------------------- helpers
_RAISE = dis.opmap["RAISE_VARARGS"]


def _is_raise_statement(tb: types.TracebackType) -> bool:
    """Whether ``tb`` stopped at a ``raise X`` statement (not a bare re-raise, not an assert)."""
    code = tb.tb_frame.f_code
    raw = code.co_code
    lasti = tb.tb_lasti
    if not (0 <= lasti < len(raw) - 1 and raw[lasti] == _RAISE and raw[lasti + 1] >= 1):
        return False
    return assert_skip(tb) is None


def has_forward(m: nn.Module) -> bool:
    """Whether ``m``'s class defines a ``forward`` (nn.Module's default only raises)."""
    return type(m).forward is not nn.Module.forward


def class_location(cls: type) -> SourceLocation | None:
    """The ``class`` statement of ``cls``, its name as the range; None without source."""
    try:
        file = inspect.getsourcefile(cls)
        lines, first = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    if not file:
        return None
    for offset, text in enumerate(lines):
        stripped = text.lstrip()
        if stripped.startswith("class "):
            start = len(text) - len(stripped) + len("class ")
            column = text.find(cls.__name__, start) + 1 or None
            line = first + offset
            end = column + len(cls.__name__) if column is not None else None
            return SourceLocation(os.path.abspath(file), line, column, line if end else None, end)
    return SourceLocation(os.path.abspath(file), max(first, 1))


def decorated_root_args(tracer: Tracer, create_args: Callable[..., tuple[Any, list[Any]]],
                        root_fn: Callable[..., Any], is_module: bool,
                        concrete_args: dict[str, Any] | tuple[Any, ...] | None = None) -> tuple[Any, list[Any]]:
    """``create_args_for_root`` for ``tracer`` (fx's own is ``create_args``), fixed for a decorated
    forward (``functools.wraps``) whose wrapper takes ``*args, **kwargs`` while the inner forward
    has keyword-only or variadic parameters: fx rewrites the *wrapper's* code object to the inner
    parameter count, which binds the wrong values to the wrapper's variables (a traced value
    lands in the wrapper's ``kwargs``). Here the placeholders come from the inner signature and
    the wrapper is called with them by name (positional-only ones by position), the way models
    are usually called; nothing is passed through the inner ``*args``/``**kwargs`` (they have no
    values to spread)."""
    inner = inspect.unwrap(root_fn)
    code = getattr(root_fn, "__code__", None)
    inner_code = getattr(inner, "__code__", None)
    varstuff = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    if (inner is root_fn or code is None or inner_code is None or not code.co_flags & varstuff
            or not (inner_code.co_kwonlyargcount or inner_code.co_flags & varstuff)
            or isinstance(concrete_args, tuple)):
        return create_args(root_fn, is_module, concrete_args)
    fn, args = create_args(inner, is_module, concrete_args)
    if uses_pytree_codegen(tracer.graph):
        return fn, args  # pytree concrete args: fx calls the inner forward itself
    skip = 1 if is_module else 0
    names = inner_code.co_varnames[skip : inner_code.co_argcount + inner_code.co_kwonlyargcount]
    n_pos = max(inner_code.co_posonlyargcount - skip, 0)

    def call_wrapper(*values: Any) -> Any:
        named = values[skip : skip + len(names)]
        return root_fn(*values[:skip], *named[:n_pos], **dict(zip(names[n_pos:], named[n_pos:])))

    call_wrapper.__wrapped__ = inner  # type: ignore[attr-defined]
    return call_wrapper, args


def _unrecorded_call(path: str) -> Any:
    """Stands for a module call fx could not record; only in graphs of failed modules, which
    are discarded."""
    raise RuntimeError(f"the call of {path} could not be traced")
