"""Shape-aware tracing: proxies carry example values computed on the meta device.

With example inputs, every traced op is also run on meta tensors (no real memory), so each node
knows its value's shape and dtype, and shape questions (``x.size(0)``, ``len(x)``,
``x.dim() == 2``, ``for h in x.unbind(0)``, ``range(x.shape[0])``) have concrete answers. Where
Python needs such an answer (a bool, a length, an index), tracing continues with it, the graph is
specialised to the example shapes, and an FXS501 info finding marks the expression. Questions
about tensor *values* (``if x.sum() > 0``) stay unanswerable: FXS101 as without inputs.

>>> import torch
>>> class Net(torch.nn.Module):
...     def forward(self, x):
...         if x.dim() == 2:
...             x = x.unsqueeze(0)
...         return [x[i] * 2 for i in range(x.shape[0])]
>>> tracer = ShapeAwareTracer(inputs={"x": torch.empty(2, 3, device="meta")})
>>> graph = tracer.trace(Net())
>>> [f.code for f in tracer.findings.items()], [f.message for f in tracer.findings.items()][0]
(['FXS501', 'FXS501'], 'specialised on x.dim() == 2; this graph is valid only for that shape')
>>> [f"{n.name}: {format_value(n.meta['fxscope_shape'], n.meta['fxscope_dtype'])}"
...  for n in graph.nodes if "fxscope_shape" in n.meta][-2:]
['getitem_1: f32[2, 3]', 'mul: f32[2, 3]']
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import operator
import sys
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, cast

import torch
import torch.nn as nn
from torch.fx import Node, Proxy

from fxscope.trace.classify import snippet
from fxscope.trace.findings import Finding
from fxscope.trace.frames import USER, SourceLocation, frame_location, location_at
from fxscope.trace.shape_terms import (
    condition,
    describe,
    source_condition,
    source_operand,
    source_terms,
)
from fxscope.trace.tracer import RobustTracer

__all__ = ["ShapeAwareTracer", "describe", "example_values_of_call", "format_value", "short_dtype"]

#: Node meta key of the example value (a meta tensor, or a plain Python value such as an int).
VALUE_KEY = "fxscope_val"
SHAPE_KEY = "fxscope_shape"
#: Node meta key, true for a value computed from buffers and constants only (no input, parameter or
#: module call): plain fx, which does not proxy buffers, holds a real tensor there, so questions
#: about it do not depend on the example inputs and writes into it are recorded.
INPUT_FREE_KEY = "fxscope_input_free"
DTYPE_KEY = "fxscope_dtype"

_UNKNOWN = object()
_META = torch.device("meta")

_SHORT_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}

#: Functions whose device arguments are compared or read, not used to place tensors.
_QUESTIONS = frozenset({getattr, operator.eq, operator.ne, operator.getitem, operator.not_, str})

_BOOL_HINT = ("To support other shapes, compute both branches and select with `torch.where`; to "
              "state the assumption explicitly, use `torch._check(...)`.")
_SIZE_HINT = ("To stay shape-generic, keep sizes as tensor ops (`x.size(0)` passed straight to "
              "torch calls, `torch.arange`, `x.unbind`, `x.reshape`) instead of Python numbers.")


def short_dtype(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``f32`` (the dtype's name for others)."""
    return _SHORT_DTYPES.get(dtype) or str(dtype).removeprefix("torch.")


def format_value(shape: Any, dtype: str | None) -> str:
    """``f32[2, 16, 64]`` from a shape and a short dtype."""
    return f"{dtype or '?'}[{', '.join(str(d) for d in shape)}]"


def _unknown_in(value: Any) -> bool:
    if value is _UNKNOWN:
        return True
    if isinstance(value, (list, tuple)):
        return any(_unknown_in(v) for v in value)
    if isinstance(value, slice):
        return any(_unknown_in(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, dict):
        return any(_unknown_in(v) for v in value.values())
    return False


class _MetaArgs:
    """Maps traced arguments to their example values (devices to meta) for one op."""

    def __init__(self, devices_to_meta: bool) -> None:
        self.devices_to_meta = devices_to_meta

    def __call__(self, arg: Any) -> Any:
        if isinstance(arg, (Proxy, Node)):
            node = arg.node if isinstance(arg, Proxy) else arg
            value = node.meta.get(VALUE_KEY, _UNKNOWN)
            return _META if self.devices_to_meta and isinstance(value, torch.device) else value
        if isinstance(arg, torch.Tensor):
            return arg if arg.device == _META else _to_meta(arg)
        if isinstance(arg, torch.device) and self.devices_to_meta:
            return _META
        if isinstance(arg, tuple):
            values = tuple(self(a) for a in arg)
            return type(arg)(*values) if hasattr(arg, "_fields") else values
        if isinstance(arg, slice):  # `x[:, :l]` with a traced bound: the bound's example value
            return slice(self(arg.start), self(arg.stop), self(arg.step))
        if isinstance(arg, list):
            return [self(a) for a in arg]
        if isinstance(arg, dict):
            return {k: self(v) for k, v in arg.items()}
        return arg


def _to_meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=_META)


def _meta_device_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    if isinstance(kwargs.get("device"), (str, torch.device)):
        kwargs = dict(kwargs, device=_META)
    return kwargs


class ShapeAwareTracer(RobustTracer):
    """A :class:`RobustTracer` whose proxies carry example values (meta tensors, shapes, ints).

    Args:
        inputs: forward parameter name -> example value: a tensor (any device; only its shape,
            dtype and strides are used) or a plain Python value. Parameters without an example
            and not in ``concrete_args`` keep their default value (like a concrete arg) when
            they have one, and are unknown placeholders otherwise.
        device: the device shape questions report for inputs (``x.device``); ops run on meta.
        **kwargs: as for :class:`RobustTracer`.

    Nodes get ``meta["fxscope_val"]`` (the example value), and tensors also
    ``meta["fxscope_shape"]`` (a tuple) and ``meta["fxscope_dtype"]`` (``f32``).
    """

    #: Buffers are graph inputs (``get_attr``), so calls on them with traced sizes are recorded.
    proxy_buffer_attributes = True

    def __init__(self, *, inputs: Mapping[str, Any], device: str = "cpu", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.example_inputs: dict[str, Any] = {
            name: _to_meta(v) if isinstance(v, torch.Tensor) and v.device != _META else v
            for name, v in inputs.items()
        }
        self.report_device = torch.device(device)
        self._meta_depth = 0
        #: Arguments of ops (devices become meta), and of questions about values (devices kept).
        self._meta_args = _MetaArgs(devices_to_meta=True)
        self._plain_args = _MetaArgs(devices_to_meta=False)
        self._module_params: dict[int, dict[str, torch.Tensor] | None] = {}

    # ------------------------------------------------------------------ tracing
    def trace(self, root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Any:
        """Like :meth:`RobustTracer.trace`; parameters with neither an example input nor a
        concrete arg keep their (non-tensor) default."""
        fn = type(root).forward if isinstance(root, nn.Module) else root
        try:
            sig = inspect.signature(inspect.unwrap(fn))
        except (TypeError, ValueError):
            sig = None
        if sig is not None and not isinstance(concrete_args, tuple):
            merged = dict(concrete_args or {})
            for p in sig.parameters.values():
                if p.kind == p.VAR_POSITIONAL and "*" + p.name not in merged:
                    merged["*" + p.name] = ()  # called with the example inputs only
                elif p.kind == p.VAR_KEYWORD and "**" + p.name not in merged:
                    merged["**" + p.name] = {}
                elif not (p.name == "self" or p.name in merged or p.name in self.example_inputs
                          or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty
                          or isinstance(p.default, torch.Tensor)):
                    merged[p.name] = p.default
            concrete_args = merged or concrete_args
        with _index_hook(), _torch_patches(self):
            return super().trace(root, concrete_args)

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Like :meth:`RobustTracer.create_node`; a ``get_attr`` node (parameters, buffers,
        tensor constants) gets its example value here, since fx creates some without a proxy."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind in ("call_function", "call_method"):
            inputs = node.all_input_nodes
            if inputs and all(n.meta.get(INPUT_FREE_KEY) for n in inputs):
                node.meta[INPUT_FREE_KEY] = True
        if kind == "get_attr":
            self._meta_depth += 1
            try:
                value: Any = self.root
                for part in str(target).split("."):
                    value = getattr(value, part)
            except Exception:  # noqa: BLE001 - an attribute that does not resolve on the meta device: no example value
                value = None
            finally:
                self._meta_depth -= 1
            if isinstance(value, torch.Tensor):
                self._set_value(node, value if value.device == _META else _to_meta(value))
                if not isinstance(value, nn.Parameter):  # plain fx holds the buffer itself
                    node.meta[INPUT_FREE_KEY] = True
        return node

    def _set_value(self, node: Node, value: Any) -> None:
        meta = node.meta
        meta[VALUE_KEY] = value
        if isinstance(value, torch.Tensor):
            meta[SHAPE_KEY] = tuple(int(d) for d in value.shape)
            meta[DTYPE_KEY] = short_dtype(value.dtype)

    def create_proxy(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Like fx, and computes the node's example value on the meta device."""
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        if kind != "get_attr":  # see create_node
            value = self._example_value(kind, target, args, kwargs)
            if value is not _UNKNOWN:
                self._set_value(proxy.node, value)
        return proxy

    def _example_value(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if kind == "placeholder":
            return self.example_inputs.get(str(target).lstrip("*"), _UNKNOWN)
        if kind == "output":
            return _UNKNOWN
        self._meta_depth += 1
        try:
            return self._run_on_meta(kind, target, args, kwargs)
        except Exception:  # noqa: BLE001 - no meta kernel, value-dependent code, or a bug in the model
            return _UNKNOWN
        finally:
            self._meta_depth -= 1

    def _run_on_meta(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        convert = self._plain_args if target in _QUESTIONS else self._meta_args
        meta_args = convert(args)
        meta_kwargs = convert(kwargs)
        if _unknown_in(meta_args) or _unknown_in(meta_kwargs):
            return _UNKNOWN
        meta_kwargs = _meta_device_kwargs(meta_kwargs)
        with torch.device(_META):
            if kind == "call_function":
                if target is getattr and len(meta_args) == 2 and meta_args[1] == "device" \
                        and isinstance(meta_args[0], torch.Tensor):
                    return self.report_device
                result = target(*meta_args, **meta_kwargs)
            elif kind == "call_method":
                self_value, *rest = meta_args
                if target in ("cpu", "cuda") and isinstance(self_value, torch.Tensor):
                    result = self_value
                else:
                    if target == "to":
                        rest = [_META if isinstance(a, str) and _is_device(a) else a for a in rest]
                    result = getattr(self_value, target)(*rest, **meta_kwargs)
            elif kind == "call_module":
                result = self._run_module(self.root.get_submodule(str(target)), meta_args, meta_kwargs)
            else:
                return _UNKNOWN
        return self._as_meta(result)

    def _run_module(self, module: nn.Module, args: Any, kwargs: dict[str, Any]) -> Any:
        params = self._module_params.get(id(module), _UNKNOWN)
        if params is _UNKNOWN:
            tensors: dict[str, torch.Tensor] = dict(module.named_parameters())
            tensors.update(module.named_buffers())
            on_meta = all(t.device == _META for t in tensors.values())
            params = self._module_params[id(module)] = (
                None if on_meta else {k: _to_meta(t) for k, t in tensors.items()})
        if params is None:
            return module(*args, **kwargs)
        return torch.func.functional_call(module, cast(dict[str, torch.Tensor], params), tuple(args), kwargs)

    def _as_meta(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value if value.device == _META else _to_meta(value)
        if isinstance(value, (Proxy, Node)) or inspect.isgenerator(value):
            return _UNKNOWN
        if isinstance(value, (tuple, list)) and any(isinstance(v, (Proxy, Node)) for v in value):
            return _UNKNOWN
        return value

    # while computing example values, module calls and attribute reads run plainly
    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """Like :meth:`RobustTracer.call_module`; a plain call while computing example values."""
        if self._meta_depth:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """Like :meth:`RobustTracer.getattr`; the plain attribute while computing example values."""
        if self._meta_depth:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    # ------------------------------------------------------------------ answers (FXS501)
    @staticmethod
    def example_value(obj: Any) -> Any:
        """The example value of a proxy (``None`` when unknown)."""
        node = obj.node if isinstance(obj, Proxy) else obj
        if not isinstance(node, Node):
            return None
        value = node.meta.get(VALUE_KEY, _UNKNOWN)
        return None if value is _UNKNOWN else value

    def to_bool(self, obj: Proxy) -> bool:
        """A condition on shapes is answered (FXS501); on values it stays FXS101."""
        value = self.example_value(obj)
        if isinstance(value, (bool, int, float, torch.Size, tuple, list, torch.dtype, torch.device, str)):
            result = bool(value)

            def wording(loc: SourceLocation) -> str:
                named: list[str] = []
                text = condition(obj.node, result, named)
                if named:
                    source = snippet(loc, limit=_SOURCE_LIMIT)
                    text = source_condition(source, result) if source else "the condition here"
                return f"specialised on {text}"

            self._answered(obj, wording, _BOOL_HINT, sys._getframe(1))
            return result
        return super().to_bool(obj)

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """Iteration over a value of known length is unrolled (FXS501)."""
        n = _length(self.example_value(obj))
        if n is None:
            return super().iter(obj)
        self._answered(obj, lambda loc: f"specialised on len({_subject(obj, loc, whole=True)}) == {n}",
                       _SIZE_HINT, sys._getframe(1))
        items: Any = obj  # a Proxy records indexing (fx adds its operators at run time)
        return iter([items[i] for i in range(n)])

    def concrete_answer(self, obj: Proxy, question: str, start: types.FrameType | None) -> Any:
        """``len``/``integer``/``float`` of a value with a known shape-derived answer (FXS501),
        else None."""
        value = self.example_value(obj)
        if question == "len":
            n = _length(value)
            if n is None:
                return None
            self._answered(obj, lambda loc: f"specialised on len({_subject(obj, loc)}) == {n}", _SIZE_HINT, start)
            return n
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        answer = float(value) if question == "float" else int(value) if question == "integer" else None
        if answer is None or (question == "integer" and answer != value):
            return None
        self._answered(obj, lambda loc: f"specialised on {_subject(obj, loc)} == {value!r}", _SIZE_HINT, start)
        return answer

    def record_setitem(self, obj: Proxy, key: Any, value: Any) -> bool:
        """A write into a buffer (or a value computed from buffers only, ``self.k_cache[:, :, pos] =
        k``) is recorded as a ``__setitem__`` node, as plain fx records it on the real buffer; a
        write into anything else stays FXS105."""
        if not _input_free(obj):
            return False
        self.create_proxy("call_method", "__setitem__", (obj, key, value), {})
        return True

    def _answered(self, obj: Any, wording: Callable[[SourceLocation], str], hint: str,
                  start: types.FrameType | None) -> None:
        """FXS501 for an answer about ``obj``, unless the graph does not depend on it: asked while
        computing an example value, or about a value computed from buffers and constants only
        (plain fx holds the real tensor there, whatever the inputs)."""
        if self._meta_depth or _input_free(obj):
            return
        self._specialise(wording, hint, start)

    def _specialise(self, wording: Callable[[SourceLocation], str], hint: str, start: types.FrameType | None) -> None:
        """Record FXS501 at the first model frame from ``start`` outwards (the module is not
        failed: the graph goes on, specialised); ``wording`` gets that location."""
        frames = list(self.classifier.model_frames(start, self._entry_frame))
        if not frames:
            return  # asked by torch itself: nothing in the model's code to point at
        loc = frame_location(frames[0])
        anchor = None
        if self.classifier.kind(frames[0].f_code) != USER:
            user = next((f for f in frames if self.classifier.kind(f.f_code) == USER), None)
            anchor = frame_location(user) if user is not None else self.default_anchor
        related = [frame_location(f) for f in reversed(frames[1:9])]
        scopes = [self._calls[-1].scope] if self._calls else []
        self.findings.add(Finding("FXS501", f"{wording(loc)}; this graph is valid only for that shape",
                                  loc, hint, anchor, related, scopes))


#: Longest source text quoted in an FXS501 message.
_SOURCE_LIMIT = 80


def _input_free(obj: Any) -> bool:
    """Whether ``obj`` (a proxy or node) was computed from buffers and constants only."""
    node = obj.node if isinstance(obj, Proxy) else obj
    return isinstance(node, Node) and bool(node.meta.get(INPUT_FREE_KEY))


def _subject(obj: Any, loc: SourceLocation, whole: bool = False) -> str:
    """What a size question asked about, in source terms: the node's description when it names
    only what the source names, else the expression's own text at ``loc`` (its operand, e.g.
    ``n`` of ``range(n)``, unless ``whole``)."""
    text = source_terms(obj)
    if text is not None:
        return text
    source = snippet(loc, limit=_SOURCE_LIMIT)
    if source is None:
        return "this expression"
    return source.strip() if whole else source_operand(source)


def _called_in(frame: types.FrameType) -> Any:
    """The function a frame is calling at its current instruction, when it is a call of a plain
    name or a module attribute (``range``, ``torch.ones``, ``F.pad``); else None."""
    loc = location_at(frame.f_code, frame.f_lasti, frame.f_lineno)
    if loc.column is None or loc.end_column is None or loc.end_line != loc.line:
        return None
    text = linecache.getline(loc.file, loc.line)[loc.column - 1 : loc.end_column - 1]
    try:
        call = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call):
        return None
    parts: list[str] = []
    func = call.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    scopes = (frame.f_locals, frame.f_globals, vars(builtins))
    obj = next((scope[func.id] for scope in scopes if func.id in scope), None)
    for name in reversed(parts):
        if not isinstance(obj, types.ModuleType):
            return None  # never run attribute code of model objects while tracing
        obj = getattr(obj, name, None)
    return obj


def _asked_by_torch(frame: types.FrameType | None) -> bool:
    """Whether an ``__index__`` request comes from a torch function's argument parser (which
    probes sequence elements and then hands proxies to ``__torch_function__``) rather than
    from Python (``range``, list indexing)."""
    if frame is None:
        return False
    called = _called_in(frame)
    if called is None:
        return False
    called = inspect.unwrap(called) if callable(called) else called
    module = getattr(called, "__module__", None) or ""
    if not module and getattr(called, "__self__", None) is not None:
        module = getattr(type(called.__self__), "__module__", "") or ""
    return module == "torch" or module.startswith(("torch.", "torch._C"))


def _proxy_index(self: Proxy) -> int:
    """``Proxy.__index__`` in shape-aware mode: a known integer answers (FXS501), else fx's
    TypeError (the question stays a finding). A probe by torch's argument parser gets the
    TypeError too: the call then goes to ``__torch_function__`` and stays symbolic."""
    answer = getattr(self.tracer, "concrete_answer", None)
    start = sys._getframe(1)
    known: int | None = None
    if answer is not None and not _asked_by_torch(start):
        known = answer(self, "integer", start)
    if known is None:
        raise TypeError("'Proxy' object cannot be interpreted as an integer")
    return known


#: torch factories taking sizes as ``*size``: torch's argument parser rejects traced sizes there
#: before any tracing hook runs, but accepts them as one tuple (``torch.ones((b, s))``).
_VARARG_SIZE_FACTORIES = ("ones", "zeros", "empty", "rand", "randn")


def _vararg_factory(original: Callable[..., Any]) -> Callable[..., Any]:
    def factory(*size: Any, **kwargs: Any) -> Any:
        if len(size) > 1 and any(isinstance(s, Proxy) for s in size):
            return original(tuple(size), **kwargs)
        return original(*size, **kwargs)

    factory.__wrapped__ = original  # type: ignore[attr-defined]
    return factory


def _dtype_info(original: type, tracer: "ShapeAwareTracer") -> Callable[..., Any]:
    """``torch.finfo``/``torch.iinfo`` of a traced dtype with a known value (FXS501)."""

    def info(*args: Any) -> Any:
        if args and isinstance(args[0], Proxy):
            dtype = tracer.example_value(args[0])
            if isinstance(dtype, torch.dtype):
                tracer._answered(args[0], lambda loc: f"specialised on {_subject(args[0], loc)} == {dtype}",
                                 _SIZE_HINT, sys._getframe(1))
                args = (dtype, *args[1:])
        return original(*args)

    return info


@contextmanager
def _torch_patches(tracer: "ShapeAwareTracer") -> Iterator[None]:
    """While ``tracer`` traces: vararg-size factories accept traced sizes, and dtype info of a
    traced dtype is answered."""
    saved = {name: getattr(torch, name) for name in (*_VARARG_SIZE_FACTORIES, "finfo", "iinfo")}
    for name in _VARARG_SIZE_FACTORIES:
        setattr(torch, name, _vararg_factory(saved[name]))
    torch.finfo = _dtype_info(saved["finfo"], tracer)  # type: ignore[misc,assignment]
    torch.iinfo = _dtype_info(saved["iinfo"], tracer)  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(torch, name, value)


@contextmanager
def _index_hook() -> Iterator[None]:
    original = Proxy.__dict__.get("__index__")
    Proxy.__index__ = _proxy_index  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if original is None:
            delattr(Proxy, "__index__")
        else:
            Proxy.__index__ = original  # type: ignore[attr-defined]


def _length(value: Any) -> int | None:
    if isinstance(value, (torch.Size, tuple, list)):
        return len(value)
    if isinstance(value, torch.Tensor) and value.dim() > 0:
        return int(value.shape[0])
    return None


def _is_device(text: str) -> bool:
    try:
        torch.device(text)
    except (RuntimeError, TypeError):
        return False
    return True


def example_values_of_call(module: nn.Module, call: tuple[tuple[Any, ...], dict[str, Any]] | None) -> dict[str, Any]:
    """Example values of the traced arguments at ``module``'s call site, by forward parameter
    name (for tracing a child of a failed module on its own)."""
    if call is None:
        return {}
    args, kwargs = call
    try:
        sig = inspect.signature(inspect.unwrap(type(module).forward))
    except (TypeError, ValueError):
        return {}
    params = [p for p in sig.parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    pairs = list(zip([p.name for p in positional], args)) + list(kwargs.items())
    out: dict[str, Any] = {}
    for name, value in pairs:
        if isinstance(value, Proxy):
            known = ShapeAwareTracer.example_value(value)
            if known is not None:
                out[name] = known
    return out
