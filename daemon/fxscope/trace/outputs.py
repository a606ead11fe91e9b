"""A root forward's return value that fx cannot record as the graph's ``output`` node.

fx records what the traced forward returns: traced values, constants, and tuples, lists and dicts
of them. Anything else (a key/value cache object, an instance of a custom class) fails the trace
after the forward has returned, inside fx, with no model frame on the stack. This module calls the
root forward so that the ``return`` statement that ended it is known, finds the part of the value
that has no graph form, and words the finding.

>>> def forward(x):
...     return {"out": x, "state": object()}
>>> returned = call_watching_return(forward, forward.__code__, (1,))
>>> returned.location.line == forward.__code__.co_firstlineno + 1
True
>>> unrecordable_part(returned.value, lambda leaf: isinstance(leaf, int))
('output["state"]', <class 'object'>)
"""

from __future__ import annotations

import dis
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from fxscope.trace.frames import SourceLocation, frame_location, location_at

__all__ = ["ReturnedValue", "call_watching_return", "unrecordable_part", "unrecordable_output_hint"]

#: Python calls the profile hook may see before the forward itself (decorators, fx's wrappers).
_MAX_CALLS_BEFORE_FORWARD = 32


@dataclass(frozen=True)
class ReturnedValue:
    """What a root forward returned, and where: the ``return`` statement that ended it (or the
    ``def`` line when that could not be told)."""

    value: Any
    location: SourceLocation


def call_watching_return(fn: Callable[..., Any], code: types.CodeType | None, args: tuple[Any, ...]) -> ReturnedValue:
    """Call ``fn(*args)``, which runs ``code`` (the forward's own code, under any wrappers), and
    return its value with the location of the ``return`` statement that ended ``code``.

    The forward's frame is caught by a profile hook that removes itself at the forward's first
    call (it sees a handful of calls at most); after the call, the frame's current line is the
    ``return`` it executed. When another profiler is installed (cProfile), the hook is not used
    and the location is the only ``return`` of ``code``, or its ``def`` line."""
    if code is None or sys.getprofile() is not None:
        return ReturnedValue(fn(*args), _static_return(code, fn))
    caught: list[types.FrameType] = []
    budget = [_MAX_CALLS_BEFORE_FORWARD]

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        if frame.f_code is code:
            caught.append(frame)
            sys.setprofile(None)
            return
        budget[0] -= 1
        if budget[0] <= 0:
            sys.setprofile(None)

    sys.setprofile(profile)
    try:
        value = fn(*args)
    finally:
        if sys.getprofile() is profile:
            sys.setprofile(None)
    if not caught:
        return ReturnedValue(value, _static_return(code, fn))
    frame = caught.pop()
    try:
        return ReturnedValue(value, frame_location(frame))
    finally:
        del frame


def _static_return(code: types.CodeType | None, fn: Callable[..., Any]) -> SourceLocation:
    """The one ``return`` of ``code``, else its ``def`` line."""
    if code is None:
        code = getattr(inspect.unwrap(fn), "__code__", None) or fn.__code__
    returns = [ins for ins in dis.get_instructions(code)
               if ins.opname == "RETURN_VALUE" and ins.positions is not None and ins.positions.lineno]
    if len({ins.positions.lineno for ins in returns}) == 1:  # type: ignore[union-attr]
        return location_at(code, returns[0].offset)
    return location_at(code, -1, code.co_firstlineno)


def unrecordable_part(value: Any, recordable: Callable[[Any], bool], path: str = "output"
                      ) -> tuple[str, type] | None:
    """The first part of ``value`` (depth first, in fx's order) that is not a tuple, list or dict
    and that ``recordable`` rejects: its access path from ``output`` and its type. None when
    every part is recordable."""
    if isinstance(value, (tuple, list)):
        fields = getattr(type(value), "_fields", None)  # a named tuple
        for i, item in enumerate(value):
            sub = f"{path}.{fields[i]}" if fields and i < len(fields) else f"{path}[{i}]"
            found = unrecordable_part(item, recordable, sub)
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unrecordable_part(item, recordable, f"{path}[{key!r}]".replace("'", '"'))
            if found is not None:
                return found
        return None
    return None if recordable(value) else (path, type(value))


def unrecordable_output_hint(type_shown: str, takes_use_cache: bool) -> str:
    """How to make the output recordable (``type_shown``: the rejected object's class name)."""
    hint = (f"A graph output can only hold traced values, constants, and tuples, lists and dicts of "
            f"them. Return tensors (or such containers of them) instead of the `{type_shown}` object, "
            "or keep it inside the model.")
    if takes_use_cache:
        hint += (" For a transformers model, pass `use_cache = false` in the target's concrete-args "
                 "(`concrete-args = { use_cache = false }` under [tool.fxscope.targets.NAME]; with "
                 "plain torch.fx: `concrete_args={\"use_cache\": False}`).")
    return hint
