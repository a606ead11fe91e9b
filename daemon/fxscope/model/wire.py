"""Strict reading of JSON written by another process (a job's child, which runs model code that may
have patched anything) or by anyone (a cache entry edited by hand): the readers of the typed
outcome use these checks, and a value of the wrong shape raises :class:`WireError` naming where.

>>> need({"line": "3"}, "line", int, "findings[0]")
Traceback (most recent call last):
...
fxscope.model.wire.WireError: findings[0]: 'line' is a str
>>> count({"nodes": -1}, "nodes", "result")
Traceback (most recent call last):
...
fxscope.model.wire.WireError: result: 'nodes' is not a count
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

__all__ = ["WireError", "count", "is_count", "items", "need", "only", "opt", "opt_position", "position",
           "strings"]


class WireError(ValueError):
    """A JSON value that is not what its reader expects; the message says where and why."""


def is_count(value: Any, minimum: int = 0) -> TypeGuard[int]:
    """Whether ``value`` is an int (not a bool) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, which must be there and of ``kind`` (a bool is no int)."""
    if key not in obj:
        raise WireError(f"{where}: {key!r} is missing")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise WireError(f"{where}: {key!r} is a {type(value).__name__}")
    return value


def opt(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` when present and not null (then of ``kind``), else None."""
    return None if obj.get(key) is None else need(obj, key, kind, where)


def count(obj: Mapping[str, Any], key: str, where: str, default: int = 0) -> int:
    """A non-negative int at ``key`` (``default`` when absent or null)."""
    value = obj.get(key)
    if value is None:
        return default
    if not is_count(value):
        raise WireError(f"{where}: {key!r} is not a count")
    return value


def position(obj: Mapping[str, Any], key: str, where: str) -> int:
    """A 1-based line or column at ``key`` (required)."""
    value = obj.get(key)
    if not is_count(value, 1):
        raise WireError(f"{where}: {key!r} is missing" if key not in obj else f"{where}: {key!r} is not a line number"
                        if key == "line" else f"{where}: {key!r} is not a positive integer")
    return value


def opt_position(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    """A 1-based line or column at ``key``, or None when absent or null."""
    return None if obj.get(key) is None else position(obj, key, where)


def items(obj: Mapping[str, Any], key: str, where: str) -> Sequence[Any]:
    """The list at ``key``: absent is empty, anything else (null too) must be a list."""
    if key not in obj:
        return ()
    value = obj[key]
    if not isinstance(value, list):
        raise WireError(f"{where}: {key!r} is not a list")
    return value


def strings(obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """The list of strings at ``key`` (absent or null: empty)."""
    value = obj.get(key)
    if value is None:
        return ()
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise WireError(f"{where}: {key!r} is not a list of strings")
    return tuple(value)


def only(obj: Any, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    """``obj``, which must be an object with no key outside ``allowed``."""
    if not isinstance(obj, dict):
        raise WireError(f"{where}: a {type(obj).__name__}, not an object")
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        raise WireError(f"{where}: unknown field {unknown[0]!r}")
    return obj
