"""Report-and-continue dunders installed on ``torch.fx.Proxy`` while a RobustTracer traces:
``len()``, ``int()``/``float()``, item assignment and numpy conversion record a finding through
the proxy's tracer and return a placeholder instead of raising. Proxies of other tracers keep
fx's behaviour.

``len()`` asked by a subscript (``self.freqs_cis[pos]`` on a real tensor: torch's index parser
probes whether the index is a sequence) raises fx's own error, as in plain fx: torch then records
one ``__getitem__``/``__setitem__`` node for the traced index instead of treating it as a sequence.

``__index__`` is deliberately not installed: with it, torch's argument parser takes a proxy for a
Python int (``torch.zeros((b, n))``, ``t.narrow(2, 0, T)``, ``torch.randperm(n)``) instead of
dispatching the call to ``__torch_function__``, and fx records those calls. ``range(n)`` and list
indexing with a traced value raise, as in plain fx, and are reported from the exception.
"""

from __future__ import annotations

import dis
import sys
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from torch.fx import Proxy

from fxscope.trace.classify import quoted

__all__ = ["proxy_hooks"]


def _tracer_of(proxy: Proxy) -> Any:
    """The proxy's tracer when it is a RobustTracer (it has ``_report``), else None."""
    tracer = getattr(proxy, "tracer", None)
    return tracer if getattr(tracer, "_fxscope_reports", False) else None


#: Opcodes of subscripts: ``len()`` asked while one runs comes from the container's index parser.
_SUBSCRIPTS = frozenset(dis.opmap[name] for name in (
    "BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR", "BINARY_SLICE", "STORE_SLICE") if name in dis.opmap)


def _in_subscript(frame: types.FrameType) -> bool:
    """Whether ``frame`` is executing a subscript (``t[i]``, ``t[i] = v``): a ``len()`` asked
    from there is the container probing its index (torch's index parser), not the model's."""
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    return 0 <= lasti < len(code) and code[lasti] in _SUBSCRIPTS


def _proxy_len(self: Proxy) -> int:
    tracer = _tracer_of(self)
    if tracer is None or _in_subscript(sys._getframe(1)):
        length: int = _ORIGINAL["__len__"](self)
        return length
    known: int | None = tracer.concrete_answer(self, "len", sys._getframe(1))
    if known is not None:
        return known
    tracer._report("FXS103", None, start=sys._getframe(1),
                   message_fn=lambda loc: f"`len()` of a traced value in {quoted(loc, 'this expression')}; "
                   "its length is unknown while tracing", placeholder=True)
    return 1


def _number_hook(kind: str, placeholder: Any) -> Callable[[Proxy], Any]:
    def hook(self: Proxy) -> Any:
        tracer = _tracer_of(self)
        if tracer is None:
            raise TypeError(f"'Proxy' object cannot be interpreted as {kind}")
        known = tracer.concrete_answer(self, kind, sys._getframe(1))
        if known is not None:
            return known
        tracer._report("FXS104", None, start=sys._getframe(1),
                       message_fn=lambda loc: f"a traced value is used as a Python {kind} in "
                       f"{quoted(loc, 'this expression')}; its value is unknown while tracing",
                       placeholder=True)
        return placeholder

    return hook


def _proxy_setitem(self: Proxy, key: Any, value: Any) -> None:
    tracer = _tracer_of(self)
    if tracer is None:
        raise TypeError("'Proxy' object does not support item assignment")
    if tracer.record_setitem(self, key, value):
        return
    tracer._report("FXS105", None, start=sys._getframe(1),
                   message_fn=lambda loc: f"item assignment into a traced value in "
                   f"{quoted(loc, 'this statement')}; symbolic tracing does not record in-place writes")


def _proxy_array(self: Proxy, *args: Any, **kwargs: Any) -> Any:
    tracer = _tracer_of(self)
    import numpy

    if tracer is not None:
        tracer._report("FXS106", None, start=sys._getframe(1),
                       message_fn=lambda loc: f"a traced value is converted to a numpy array in "
                       f"{quoted(loc, 'this expression')}; numpy needs real data")
    return numpy.zeros(())


_ZERO_ARRAY: Any = None


def _array_attr(name: str) -> property:
    """``__array_struct__``/``__array_interface__``: numpy probes these before ``__array__``.
    Raising AttributeError would fall through to ``Proxy.__getattr__`` (an Attribute proxy, which
    numpy rejects with "invalid __array_struct__"), so report FXS106 and hand numpy a 0-d array's
    interface instead (the array is kept alive at module level)."""

    def getter(self: Proxy) -> Any:
        global _ZERO_ARRAY
        tracer = _tracer_of(self)
        import numpy

        if tracer is not None:
            tracer._report("FXS106", None, start=sys._getframe(1),
                           message_fn=lambda loc: f"a traced value is converted to a numpy array in "
                           f"{quoted(loc, 'this expression')}; numpy needs real data")
        if _ZERO_ARRAY is None:
            _ZERO_ARRAY = numpy.zeros(())
        return getattr(_ZERO_ARRAY, name)

    return property(getter)


_ORIGINAL: dict[str, Any] = {}
_HOOKS: dict[str, Any] = {
    "__len__": _proxy_len,
    "__int__": _number_hook("integer", 1),
    "__float__": _number_hook("float", 1.0),
    "__setitem__": _proxy_setitem,
    "__array__": _proxy_array,
    "__array_struct__": _array_attr("__array_struct__"),
    "__array_interface__": _array_attr("__array_interface__"),
}
_hook_depth = 0


@contextmanager
def proxy_hooks() -> Iterator[None]:
    """Install the report-and-continue dunders on ``Proxy`` for the duration of a trace."""
    global _hook_depth
    if _hook_depth == 0:
        for name, hook in _HOOKS.items():
            _ORIGINAL[name] = Proxy.__dict__.get(name)
            setattr(Proxy, name, hook)
    _hook_depth += 1
    try:
        yield
    finally:
        _hook_depth -= 1
        if _hook_depth == 0:
            for name, original in _ORIGINAL.items():
                if original is None:
                    delattr(Proxy, name)
                else:
                    setattr(Proxy, name, original)
            _ORIGINAL.clear()
