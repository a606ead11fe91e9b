"""Which frames are user code, and exact source locations from code positions.

The tracer walks frames itself instead of using ``record_stack_traces`` (which formats a whole
stack per node and doubles trace time). Classification is cached per file name.

>>> import sys
>>> classifier = FrameClassifier(is_user_file=lambda f: f == __file__)
>>> classifier.kind(sys._getframe().f_code) in (USER, LIBRARY, INTERNAL)
True
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = [
    "SourceLocation",
    "FrameClassifier",
    "INTERNAL",
    "LIBRARY",
    "USER",
    "internal_prefixes",
    "default_is_user_file",
    "location_at",
    "char_column",
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

    def to_json(self) -> dict[str, Any]:
        """The location as a report-schema dict (None fields omitted)."""
        out: dict[str, Any] = {"file": self.file, "line": self.line}
        for key in ("column", "end_line", "end_column"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def _package_dir(name: str) -> str | None:
    """The directory of package ``name`` (with a trailing separator), or the file of a
    single-file module such as ``typing_extensions`` (whose directory is site-packages)."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path:
        return None
    path = os.path.abspath(path)
    if os.path.splitext(os.path.basename(path))[0] != "__init__":
        return os.path.splitext(path)[0]  # `.../typing_extensions` matches .py and .pyc
    return os.path.dirname(path) + os.sep


def _internal_package_prefixes() -> tuple[str, ...]:
    prefixes = []
    for name in ("torch", "numpy", "fxscope", "typing_extensions", "sympy"):
        d = _package_dir(name)
        if d:
            prefixes.append(d)
    return tuple(dict.fromkeys(prefixes))


@functools.lru_cache(maxsize=None)
def _stdlib_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys(
        os.path.abspath(paths[key]) + os.sep for key in ("stdlib", "platstdlib") if paths.get(key)
    ))


@functools.lru_cache(maxsize=None)
def _site_prefixes() -> tuple[str, ...]:
    """Third-party install dirs; in most installs they lie *inside* the stdlib dir."""
    import site

    paths = sysconfig.get_paths()
    dirs = [paths.get("purelib"), paths.get("platlib")]
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - some embedded interpreters
        pass
    return tuple(dict.fromkeys(os.path.abspath(d) + os.sep for d in dirs if d))


def internal_prefixes() -> tuple[str, ...]:
    """Path prefixes of code that is never the offending frame: torch, numpy, the stdlib, fxscope.
    (Site-packages dirs under the stdlib prefix are not internal: see :class:`FrameClassifier`.)"""
    return tuple(dict.fromkeys(_internal_package_prefixes() + _stdlib_prefixes()))


def default_is_user_file(filename: str) -> bool:
    """Outside site-packages/dist-packages and not internal."""
    return "site-packages" not in filename and "dist-packages" not in filename


class FrameClassifier:
    """Classifies code objects as INTERNAL, LIBRARY or USER by file, memoised per file name."""

    _shared: "FrameClassifier | None" = None

    @classmethod
    def shared(cls, is_user_file: Callable[[str], bool] | None = None) -> "FrameClassifier":
        """A new classifier for ``is_user_file``; for the default rule, one per process (its
        cache survives tracer after tracer)."""
        if is_user_file is not None:
            return cls(is_user_file)
        if FrameClassifier._shared is None:
            FrameClassifier._shared = cls()
        return FrameClassifier._shared

    def __init__(self, is_user_file: Callable[[str], bool] | None = None) -> None:
        self.is_user_file = is_user_file or default_is_user_file
        self._stdlib = _stdlib_prefixes()
        self._site = _site_prefixes()
        #: file name -> kind. Keyed by name, not by code object: a code object's hash is
        #: recomputed from its contents on every lookup, a string's is cached.
        self._kinds: dict[str, int] = {}

    def kind(self, code: types.CodeType) -> int:
        """The kind of ``code`` (memoised per file)."""
        filename = code.co_filename
        k = self._kinds.get(filename)
        if k is None:
            k = self._kinds[filename] = self._classify(filename)
        return k

    def file_kind(self, filename: str) -> int:
        """The kind of the code in ``filename`` (a stack frame's file; memoised)."""
        k = self._kinds.get(filename)
        if k is None:
            k = self._kinds[filename] = self._classify(filename)
        return k

    def _classify(self, filename: str) -> int:
        if filename.startswith("<"):
            # Interactive and doctest code is the user's; generated code (fx's eval) is not. With
            # a workspace (an is_user_file rule), no pseudo-file is: its caller is the location.
            if self.is_user_file is not default_is_user_file:
                return INTERNAL
            return USER if filename.startswith(("<doctest", "<stdin>", "<string>")) else INTERNAL
        path = os.path.abspath(filename)
        # Recomputed per new file (rare): numpy may be imported after this classifier was made.
        if path.startswith(_internal_package_prefixes()):
            return INTERNAL
        if path.startswith(self._stdlib) and not path.startswith(self._site):
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


_positions_cache: dict[types.CodeType, list[Any]] = {}


def char_column(filename: str, line: int, byte_col: int) -> int:
    """Convert a UTF-8 byte offset on ``line`` of ``filename`` into a character offset (0-based)."""
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
                column = char_column(filename, line, col) + 1
            if end_col is not None and end_line is not None:
                end_column = char_column(filename, end_line, end_col) + 1
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
