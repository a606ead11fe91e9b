"""Shape checks for a target's result body, wherever it comes from: a worker (which runs user code
that may have monkey-patched anything) or the cache (a file anyone can edit). A body that fails
is never shown: from a worker it becomes an FXS404 finding, from the cache it is a miss.

>>> payload_problem({"status": "traced", "modules": [], "nodes": 0, "findings": []}) is None
True
>>> payload_problem({"status": "traced", "findings": [{"code": "FXS101", "file": "m.py", "line": 2}]})
"findings[0]: 'severity' is missing"
>>> payload_problem({"status": {"nested": 1}})
"status {'nested': 1} is not one of ['error', 'failed', 'partial', 'skipped', 'traced']"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fxscope.model import outcome
from fxscope.model.codes import SEVERITIES
from fxscope.model.inputs import InferredInputs
from fxscope.model.recipe import Recipe

__all__ = ["STATUSES", "payload_problem"]

STATUSES = frozenset(outcome.STATUSES)
_MODULE_STATUSES = frozenset(outcome.MODULE_STATUSES)
_OPS = frozenset({"placeholder", "get_attr", "call_function", "call_method", "call_module", "output"})


class _Bad(Exception):
    pass


def _one_of(value: Any, allowed: frozenset[str] | tuple[str, ...]) -> bool:
    """Whether ``value`` is one of the ``allowed`` strings (a dict or a list is not: never hashed)."""
    return isinstance(value, str) and value in allowed


def _int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise _Bad(f"{where}: {key!r} is missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise _Bad(f"{where}: {key!r} is a {type(value).__name__}")
    return value


def _location(loc: Any, where: str, required: bool = True) -> None:
    if not isinstance(loc, dict):
        raise _Bad(f"{where}: not an object")
    if required or "file" in loc or "line" in loc:
        _need(loc, "file", str, where)
        if not _int(loc.get("line"), 1):
            raise _Bad(f"{where}: 'line' is not a line number")
    for key in ("column", "end_line", "end_column"):
        if loc.get(key) is not None and not _int(loc[key], 1):
            raise _Bad(f"{where}: {key!r} is not a positive integer")


def _strings(obj: Mapping[str, Any], key: str, where: str) -> None:
    value = obj.get(key)
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise _Bad(f"{where}: {key!r} is not a list of strings")


def _finding(f: Any, where: str) -> None:
    _location(f, where)
    code = _need(f, "code", str, where)
    if not (len(code) == 6 and code.startswith("FXS") and code[3:].isdigit()):
        raise _Bad(f"{where}: code {code!r} is not a finding code")
    if not _one_of(f.get("severity"), SEVERITIES):
        raise _Bad(f"{where}: 'severity' is missing" if "severity" not in f else f"{where}: bad severity")
    _need(f, "message", str, where)
    for key in ("hint", "target"):
        if f.get(key) is not None and not isinstance(f[key], str):
            raise _Bad(f"{where}: {key!r} is not a string")
    if "anchor" in f:
        _location(f["anchor"], f"{where}.anchor")
    for i, rel in enumerate(_list(f, "related", where)):
        _location(rel, f"{where}.related[{i}]")
        if rel.get("message") is not None and not isinstance(rel["message"], str):
            raise _Bad(f"{where}.related[{i}]: 'message' is not a string")
    for i, scope in enumerate(_list(f, "scopes", where)):
        if not isinstance(scope, dict):
            raise _Bad(f"{where}.scopes[{i}]: not an object")
        _need(scope, "path", str, f"{where}.scopes[{i}]")
        _need(scope, "type", str, f"{where}.scopes[{i}]")
    _strings(f, "targets", where)


def _list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list at ``key``: absent is empty, anything else (``null`` too) must be a list."""
    if key not in obj:
        return []
    value = obj[key]
    if not isinstance(value, list):
        raise _Bad(f"{where}: {key!r} is not a list")
    return value


def _module(m: Any, where: str) -> None:
    if not isinstance(m, dict):
        raise _Bad(f"{where}: not an object")
    _need(m, "path", str, where)
    _need(m, "type", str, where)
    if not _one_of(m.get("status"), _MODULE_STATUSES):
        raise _Bad(f"{where}: bad status")
    if m.get("params") is not None and not _int(m["params"], 0):
        raise _Bad(f"{where}: 'params' is not a count")
    _location(m, where, required=False)


def _plain_module(m: Any) -> bool:
    """A well-formed module entry without a location (most of a model's), checked without
    building messages; anything else is described by :func:`_module`."""
    if type(m) is not dict or type(m.get("path")) is not str or type(m.get("type")) is not str:
        return False
    params = m.get("params")
    return (_one_of(m.get("status"), _MODULE_STATUSES) and (params is None or type(params) is int and params >= 0)
            and all(key not in m for key in ("file", "line", "column", "end_line", "end_column")))


def _graph(g: Any, where: str) -> None:
    if not isinstance(g, dict):
        raise _Bad(f"{where}: not an object")
    _need(g, "module", str, where)
    if g.get("analysis") is not None and not isinstance(g["analysis"], str):
        raise _Bad(f"{where}: 'analysis' is not a string")
    if g.get("ends") is not None:
        _location(g["ends"], f"{where}.ends", required=False)
    for i, node in enumerate(_need(g, "nodes", list, where)):
        if not _plain_node(node):  # the common case is checked without building messages
            _node(node, f"{where}.nodes[{i}]")


def _plain_node(node: Any) -> bool:
    """A well-formed node (a graph has thousands): strings, a known op and, if located, a file
    and a line number; anything else is described by :func:`_node`."""
    if type(node) is not dict or not _one_of(node.get("op"), _OPS):
        return False
    for key in ("name", "target", "scope", "scope_type"):
        if type(node.get(key)) is not str:
            return False
    if "file" not in node and "line" not in node:
        located = True
    else:
        file, line = node.get("file"), node.get("line")
        located = type(file) is str and type(line) is int and line >= 1
    return located and all(node.get(k) is None for k in ("column", "end_line", "end_column"))


def _node(node: Any, at: str) -> None:
    if not isinstance(node, dict):
        raise _Bad(f"{at}: not an object")
    for key in ("name", "target", "scope", "scope_type"):
        _need(node, key, str, at)
    if not _one_of(node.get("op"), _OPS):
        raise _Bad(f"{at}: bad op")
    _location(node, at, required=False)


def _summary(body: Mapping[str, Any], key: str, counts: tuple[str, ...]) -> None:
    """An analysis summary (``compile``, ``export``): an object whose counts are counts."""
    value = body.get(key)
    if value is None:
        return
    if not isinstance(value, dict):
        raise _Bad(f"{key!r} is not an object")
    for name in counts:
        if value.get(name) is not None and not _int(value[name], 0):
            raise _Bad(f"{key}.{name} is not a count")
    duration = value.get("duration_ms")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
        raise _Bad(f"{key}.duration_ms is not a number")


def payload_problem(body: Any) -> str | None:
    """Why ``body`` is not a well-formed target result (the report schema's target and finding
    shapes, plus ``files``, ``output`` and ``warnings``), or ``None`` when it is one."""
    try:
        if not isinstance(body, dict):
            raise _Bad(f"a {type(body).__name__}, not an object")
        if not _one_of(body.get("status"), STATUSES):
            raise _Bad(f"status {body.get('status')!r} is not one of {sorted(STATUSES)}")
        if "nodes" in body and not _int(body["nodes"], 0):
            raise _Bad("'nodes' is not a count")
        for i, f in enumerate(_list(body, "findings", "result")):
            _finding(f, f"findings[{i}]")
        for i, m in enumerate(_list(body, "modules", "result")):
            if not _plain_module(m):
                _module(m, f"modules[{i}]")
        for i, g in enumerate(_list(body, "graphs", "result")):
            _graph(g, f"graphs[{i}]")
        files = body.get("files")
        if files is not None and not (isinstance(files, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
            raise _Bad("'files' is not a map of paths to hashes")
        if body.get("build") is not None:
            try:
                Recipe.from_json(body["build"])
            except ValueError as e:
                raise _Bad(f"'build' is not a recipe ({e})") from None
        for key in ("output", "torch", "device", "build_key"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise _Bad(f"{key!r} is not a string")
        if body.get("inputs") is not None:
            try:
                InferredInputs.from_json(body["inputs"])
            except (ValueError, TypeError, AttributeError) as e:
                raise _Bad(f"'inputs' are not example inputs ({e})") from None
        _summary(body, "compile", ("graphs", "breaks", "recompiles"))
        _summary(body, "export", ("problems",))
        _strings(body, "warnings", "result")
    except _Bad as bad:
        return str(bad)
    except (TypeError, ValueError, AttributeError, RecursionError) as e:  # a shape no check foresaw
        return f"malformed ({type(e).__name__}: {e})"
    return None
