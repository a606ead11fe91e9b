"""Keeping fxscope's own placeholders from causing findings or ending exploration.

When a traced value is used where Python needs a concrete answer (``len()``, ``int()``,
iteration), the tracer reports it and goes on with a placeholder (``1``, one element). What the
model then does with that placeholder is not the model's problem:

- an unpacking ``b, n, h = *x.shape, self.heads`` gets exactly as many elements as it unpacks
  (:func:`unpack_count`), so no "not enough values to unpack" follows;
- an ``assert`` that fails only because of a placeholder is skipped when the forward is explored
  again (:func:`assert_skip` finds the statement, :func:`skipping_asserts` jumps over it);
- any other consequence (an exception in a frame that received a placeholder) is not a finding
  (:func:`is_consequence`).

>>> import dis
>>> def f(x, heads):
...     b, n, h = *x.shape, heads
...     return b
>>> extend = next(i for i in dis.get_instructions(f) if i.opname == "LIST_EXTEND")
>>> unpack_count(f.__code__, extend.offset)
2
"""

from __future__ import annotations

import dis
import sys
import types
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["unpack_count", "is_consequence", "assert_skip", "skipping_asserts"]

_instructions: dict[types.CodeType, list[dis.Instruction]] = {}


def _code_instructions(code: types.CodeType) -> list[dis.Instruction]:
    ins = _instructions.get(code)
    if ins is None:
        if len(_instructions) > 1024:
            _instructions.clear()
        ins = _instructions[code] = list(dis.get_instructions(code))
    return ins


def _at(instructions: list[dis.Instruction], offset: int) -> int:
    for i, ins in enumerate(instructions):
        if ins.offset == offset:
            return i
    return -1


def unpack_count(code: types.CodeType, lasti: int) -> int | None:
    """How many elements the iteration at ``lasti`` must yield for the statement to unpack
    cleanly, or None when it is not an unpacking (a ``for`` loop, ``list(x)``).

    Handles ``a, *rest = x`` (``UNPACK_EX``) and a starred display that is unpacked:
    ``b, n, h = *x.shape, heads`` (``LIST_EXTEND`` ... ``UNPACK_SEQUENCE``)."""
    instructions = _code_instructions(code)
    i = _at(instructions, lasti)
    if i < 0:
        return None
    ins = instructions[i]
    if ins.opname == "UNPACK_EX" and ins.arg is not None:
        return (ins.arg & 0xFF) + (ins.arg >> 8)
    if ins.opname != "LIST_EXTEND" or ins.arg != 1:
        return None
    # Elements before: the BUILD_LIST the display starts with (the iterated expression in
    # between must not build lists of its own).
    before: int | None = None
    for j in range(i - 1, max(i - 32, -1), -1):
        op = instructions[j].opname
        if op == "BUILD_LIST":
            before = instructions[j].arg
            break
        if op in ("LIST_APPEND", "LIST_EXTEND", "BUILD_TUPLE", "BUILD_MAP", "BUILD_SET"):
            return None
    if before is None:
        return None
    after = 0
    for j in range(i + 1, min(i + 64, len(instructions))):
        nxt = instructions[j]
        op = nxt.opname
        if op == "LIST_APPEND" and nxt.arg == 1:
            after += 1
        elif op == "LIST_TO_TUPLE":
            following = instructions[j + 1] if j + 1 < len(instructions) else None
            if following is not None and following.opname == "UNPACK_SEQUENCE" and following.arg is not None:
                n = following.arg - before - after
                return n if n >= 0 else None
            return None
        elif op in ("LIST_EXTEND", "BUILD_LIST", "CALL_FUNCTION_EX") or "JUMP" in op or op.startswith("STORE"):
            return None
    return None


def is_consequence(e: BaseException) -> bool:
    """Exceptions a placeholder can cause: a failing ``assert`` on it, an unpacking of the
    wrong length, an index past its one element."""
    if isinstance(e, AssertionError):
        return True
    if isinstance(e, ValueError) and "values to unpack" in str(e):
        return True
    return isinstance(e, IndexError) and "out of range" in str(e)


def assert_skip(tb: types.TracebackType) -> tuple[types.CodeType, int, int] | None:
    """For an ``AssertionError`` raised by an ``assert`` statement at ``tb``: (code, first line of
    the statement, line of the next statement), or None when it is not an ``assert``."""
    code = tb.tb_frame.f_code
    instructions = _code_instructions(code)
    i = _at(instructions, tb.tb_lasti)
    if i < 0 or instructions[i].opname != "RAISE_VARARGS":
        return None
    if not any(ins.opname == "LOAD_ASSERTION_ERROR" for ins in instructions[max(i - 8, 0):i]):
        return None
    positions = instructions[i].positions
    if positions is None or positions.lineno is None:
        return None
    start, end = positions.lineno, positions.end_lineno or positions.lineno
    for ins in instructions[i + 1:]:
        line = ins.positions.lineno if ins.positions is not None else None
        if line is not None and line > end:
            return code, start, line
    return None


@contextmanager
def skipping_asserts(skips: dict[types.CodeType, dict[int, int]]) -> Iterator[None]:
    """While active, frames of the codes in ``skips`` jump from an assert's first line to the
    next statement (``{code: {assert line: next line}}``). A tracing function already installed
    (coverage, a debugger) keeps running for every other frame."""
    if not skips:
        yield
        return
    previous: Any = sys.gettrace()  # called with the events it gets

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            target = skips[frame.f_code].get(frame.f_lineno)
            if target is not None:
                try:
                    frame.f_lineno = target  # type: ignore[misc]  # settable from a trace function
                except ValueError:  # not a legal jump (e.g. out of a block): run the assert
                    pass
        return local

    def dispatch(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code in skips:
            return local
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(dispatch)
    try:
        yield
    finally:
        sys.settrace(previous)
