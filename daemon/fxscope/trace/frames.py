"""Which frames are user code, and exact source locations from code positions.

The tracer walks frames itself instead of using ``record_stack_traces`` (which formats a whole
stack per node and doubles trace time). Classification is cached per code object.

>>> import sys
>>> classifier = FrameClassifier(is_user_file=lambda f: f == __file__)
>>> classifier.kind(sys._getframe().f_code) in (USER, LIBRARY, INTERNAL)
True
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Callable, Iterator

__all__ = [
    "SourceLocation",
    "FrameClassifier",
    "INTERNAL",
    "LIBRARY",
    "USER",
    "internal_prefixes",
    "default_is_user_file",
    "location_at",
]

#: Frame kinds. INTERNAL: torch, numpy, the standard library, fxscope itself: never "offending".
#: LIBRARY: third-party model code (site-packages, e.g. transformers). USER: the workspace.
INTERNAL, LIBRARY, USER = 0, 1, 2


@dataclass(frozen=True)
class SourceLocation:
    """A source range: absolute ``file``, 1-based ``line`` and ``column``; ``end_column`` is
    exclusive (one past the last character), like LSP ranges, but 1-based."""

    file: str
    line: int
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    function: str | None = None

    def to_json(self) -> dict:
        """The location as a report-schema dict (None fields omitted)."""
        out: dict = {"file": self.file, "line": self.line}
        for key in ("column", "end_line", "end_column"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


def internal_prefixes() -> tuple[str, ...]:
    """Path prefixes of code that is never the offending frame: torch, numpy, the stdlib, fxscope."""
    prefixes = []
    for name in ("torch", "numpy", "fxscope", "typing_extensions", "sympy"):
        d = _package_dir(name)
        if d:
            prefixes.append(d)
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            prefixes.append(os.path.abspath(p) + os.sep)
    return tuple(dict.fromkeys(prefixes))


def default_is_user_file(filename: str) -> bool:
    """Outside site-packages/dist-packages and not internal."""
    return "site-packages" not in filename and "dist-packages" not in filename


class FrameClassifier:
    """Classifies code objects as INTERNAL, LIBRARY or USER, memoised per code object."""

    def __init__(self, is_user_file: Callable[[str], bool] | None = None) -> None:
        self.is_user_file = is_user_file or default_is_user_file
        self._prefixes = internal_prefixes()
        self._kinds: dict[types.CodeType, int] = {}

    def kind(self, code: types.CodeType) -> int:
        """The kind of ``code`` (memoised)."""
        k = self._kinds.get(code)
        if k is None:
            k = self._classify(code.co_filename)
            self._kinds[code] = k
        return k

    def _classify(self, filename: str) -> int:
        if filename.startswith("<"):
            # Interactive and doctest code is the user's; generated code (fx's eval) is not.
            return USER if filename.startswith(("<doctest", "<stdin>", "<string>")) else INTERNAL
        path = os.path.abspath(filename)
        if path.startswith(self._prefixes):
            return INTERNAL
        return USER if self.is_user_file(path) else LIBRARY

    def model_frames(self, frame: types.FrameType | None, stop: types.FrameType | None = None
                     ) -> Iterator[types.FrameType]:
        """Non-internal frames from ``frame`` outwards, up to (excluding) ``stop``."""
        kind = self.kind
        while frame is not None and frame is not stop:
            if kind(frame.f_code) != INTERNAL:
                yield frame
            frame = frame.f_back


_positions_cache: dict[types.CodeType, list] = {}


def _char_col(filename: str, line: int, byte_col: int) -> int:
    """Convert a UTF-8 byte offset into a character offset on ``line``."""
    text = linecache.getline(filename, line)
    if not text or text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def location_at(code: types.CodeType, lasti: int, lineno: int | None = None) -> SourceLocation:
    """The exact range of the instruction at byte offset ``lasti`` in ``code``."""
    filename = os.path.abspath(code.co_filename)
    positions = _positions_cache.get(code)
    if positions is None:
        positions = list(code.co_positions())
        if len(_positions_cache) > 4096:
            _positions_cache.clear()
        _positions_cache[code] = positions
    idx = lasti // 2
    if 0 <= idx < len(positions):
        line, end_line, col, end_col = positions[idx]
        if line is not None:
            column = end_column = None
            if col is not None:
                column = _char_col(filename, line, col) + 1
            if end_col is not None and end_line is not None:
                end_column = _char_col(filename, end_line, end_col) + 1
            return SourceLocation(filename, line, column, end_line, end_column, code.co_name)
    return SourceLocation(filename, lineno or code.co_firstlineno, function=code.co_name)


_VALUE_OPS: frozenset[int] | None = None


def _value_ops() -> frozenset[int]:
    global _VALUE_OPS
    if _VALUE_OPS is None:
        import dis

        _VALUE_OPS = frozenset(
            op for name, op in dis.opmap.items()
            if name == "GET_ITER" or ("JUMP" in name and "IF" in name)
        )
    return _VALUE_OPS


def _value_lasti(code: types.CodeType, lasti: int) -> int:
    """For ``GET_ITER`` (a ``for``) and conditional jumps (``if``, ``while``, ``and``, ``or``,
    ``assert``), the instruction that produced the value: its range is the iterated or tested
    expression rather than the whole statement or the first operand of a bool op."""
    raw = code.co_code
    if lasti < 2 or lasti + 1 >= len(raw) or raw[lasti] not in _value_ops():
        return lasti
    import dis

    prev = None
    for ins in dis.get_instructions(code):
        if ins.offset >= lasti:
            break
        prev = ins
    return prev.offset if prev is not None else lasti


def frame_location(frame: types.FrameType) -> SourceLocation:
    """The exact range of the instruction a frame is executing."""
    return location_at(frame.f_code, _value_lasti(frame.f_code, frame.f_lasti), frame.f_lineno)


def traceback_location(tb: types.TracebackType) -> SourceLocation:
    """The exact range of the instruction a traceback entry was executing."""
    return location_at(tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno)
