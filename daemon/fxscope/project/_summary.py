"""Per-file AST summaries (names bound at module level, classes, imports), cached by content.

Discovery never keeps whole ASTs: it keeps one small immutable :class:`Summary` per distinct file
content in a module-level LRU, so re-discovering after one edit parses only the edited file.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Union

from .files import is_racy

__all__ = ["SUMMARY_FORMAT", "ClassInfo", "Summary", "cache_stats", "clear_cache", "summary_of_bytes",
           "summary_of_file", "summary_of_text"]

#: Version of :meth:`Summary.to_json`; persisted summaries of another version are not used.
SUMMARY_FORMAT = 2

#: How a module-level name is bound. ("class", name) | ("def", name, line) | ("module", "a.b")
#: | ("from", level, "a.b", name) | ("alias", "a.b.C") | ("other",)
Binding = tuple[Union[str, int], ...]

#: An import statement: (level, module, names); names is None for ``import a.b``.
ImportRecord = tuple[int, str, Union[tuple[str, ...], None]]


@dataclass(frozen=True)
class ClassInfo:
    """A module-level class: its base expressions as dotted strings (``None`` when not a plain
    name/attribute), the lines of functions defined in its body, the abstract method names and the
    required parameters of its own ``__init__`` (``None`` when it defines none)."""

    name: str
    line: int
    bases: tuple[str | None, ...]
    members: dict[str, int]
    abstract: frozenset[str]
    init_required: tuple[str, ...] | None


@dataclass(frozen=True)
class Summary:
    """What discovery needs from one file; ``error`` is (line, column, message) when it does not parse."""

    bindings: dict[str, Binding]
    stars: tuple[tuple[int, str], ...]
    classes: dict[str, ClassInfo]
    imports: tuple[ImportRecord, ...]
    error: tuple[int, int, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_json` inverts it (summaries are persisted by content)."""
        return {
            "bindings": {k: list(v) for k, v in self.bindings.items()},
            "stars": [list(s) for s in self.stars],
            "classes": {k: [c.line, list(c.bases), c.members, sorted(c.abstract),
                            None if c.init_required is None else list(c.init_required)]
                        for k, c in self.classes.items()},
            "imports": [[lvl, mod, None if names is None else list(names)] for lvl, mod, names in self.imports],
            "error": None if self.error is None else list(self.error),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary:
        """Rebuild a summary from :meth:`to_json` output."""
        classes = {
            name: ClassInfo(name, int(line), tuple(bases), dict(members), frozenset(abstract),
                            None if init is None else tuple(init))
            for name, (line, bases, members, abstract, init) in data["classes"].items()
        }
        return cls(
            {k: tuple(v) for k, v in data["bindings"].items()},
            tuple((int(level), str(module)) for level, module in data["stars"]),
            classes,
            tuple((int(lvl), str(mod), None if names is None else tuple(names))
                  for lvl, mod, names in data["imports"]),
            None if data["error"] is None else (int(data["error"][0]), int(data["error"][1]), str(data["error"][2])),
        )


# ---------------------------------------------------------------------------------------------
# extraction


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # Generic[T], nn.ModuleList[...]
        node = node.value
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_abstract(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for deco in func.decorator_list:
        name = _dotted(deco.func if isinstance(deco, ast.Call) else deco) or ""
        if name.rsplit(".", 1)[-1] in ("abstractmethod", "abstractproperty"):
            return True
    return False


def _required(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Required parameters of an ``__init__`` (``self`` dropped). One that takes nothing but
    ``*args``/``**kwargs`` forwards what it is given (to a base, a wrapped module): it needs
    arguments, named by its star parameters (``("*args", "**kwargs")``)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    if len(positional) <= 1 and not args.kwonlyargs and (args.vararg or args.kwarg):
        return tuple(f"{stars}{a.arg}" for stars, a in (("*", args.vararg), ("**", args.kwarg)) if a)
    defaults_from = len(positional) - len(args.defaults)
    required = [a.arg for i, a in enumerate(positional) if i < defaults_from][1:]  # drop self
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    return tuple(required)


def _class_body(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _class_body(stmt.body)
            yield from _class_body(stmt.orelse)
        else:
            yield stmt


def _class_info(node: ast.ClassDef) -> ClassInfo:
    members: dict[str, int] = {}
    abstract: set[str] = set()
    init: tuple[str, ...] | None = None
    for stmt in _class_body(node.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[stmt.name] = stmt.lineno
            if _is_abstract(stmt):
                abstract.add(stmt.name)
            else:
                abstract.discard(stmt.name)
            if stmt.name == "__init__":
                init = _required(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and (isinstance(stmt, ast.Assign) or stmt.value is not None):
                    members[target.id] = stmt.lineno
                    abstract.discard(target.id)
    bases = tuple(_dotted(b) for b in node.bases)
    return ClassInfo(node.name, node.lineno, bases, members, frozenset(abstract), init)


class _Collector:
    """Walks module-level statements (through if/try/with/for/while bodies, not into defs)."""

    def __init__(self) -> None:
        self.bindings: dict[str, Binding] = {}
        self.stars: list[tuple[int, str]] = []
        self.classes: dict[str, ClassInfo] = {}

    def visit(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.ClassDef):
            self.classes[stmt.name] = _class_info(stmt)
            self.bindings[stmt.name] = ("class", stmt.name)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bindings[stmt.name] = ("def", stmt.name, stmt.lineno)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.bindings[alias.asname] = ("module", alias.name)
                else:
                    head = alias.name.split(".")[0]
                    self.bindings[head] = ("module", head)
        elif isinstance(stmt, ast.ImportFrom):
            module = stmt.module or ""
            for alias in stmt.names:
                if alias.name == "*":
                    self.stars.append((stmt.level, module))
                else:
                    self.bindings[alias.asname or alias.name] = ("from", stmt.level, module, alias.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assignment(stmt)
        elif isinstance(stmt, ast.Try) or (sys.version_info >= (3, 11) and isinstance(stmt, ast.TryStar)):
            for handler in stmt.handlers:
                self.visit(handler.body)  # fallbacks first: the try body's bindings win
            self.visit(stmt.body)
            self.visit(stmt.orelse)
            self.visit(stmt.finalbody)
        elif isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            self.visit(stmt.orelse)  # `if __name__ == "__main__":` never runs on import
        elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            self.visit(stmt.body)
            self.visit(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.visit(stmt.body)

    def assignment(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        alias = _dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        for target in targets:
            simple = isinstance(stmt, ast.Assign) and isinstance(target, ast.Name) and alias is not None
            for name in _bound_names(target):
                self.bindings[name] = ("alias", alias) if simple and alias is not None else ("other",)


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and any(
        isinstance(b, ast.Constant) and b.value == "__main__" for b in sides)


def _bound_names(target: ast.expr) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


_BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def _imports(tree: ast.Module) -> tuple[ImportRecord, ...]:
    """Every import statement, at any depth (functions, classes, if/try blocks). Imports are
    statements, so only statement lists are walked, never expressions (4x faster than ast.walk)."""
    records: list[ImportRecord] = []
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            records.extend((0, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            records.append((node.level, node.module or "", tuple(a.name for a in node.names)))
        else:
            for name in _BLOCK_FIELDS:
                block = getattr(node, name, None)
                if isinstance(block, list):
                    stack.extend(reversed(block))
    return tuple(dict.fromkeys(records))


def summarize(source: str | bytes) -> Summary:
    """Parse ``source`` and extract its :class:`Summary` (never raises for bad code)."""
    _STATS["parses"] += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = exc.offset or 1
        return Summary({}, (), {}, (), (max(1, line), max(1, column), exc.msg or str(exc)))
    except (ValueError, RecursionError, MemoryError) as exc:
        return Summary({}, (), {}, (), (1, 1, str(exc) or type(exc).__name__))
    collector = _Collector()
    collector.visit(tree.body)
    return Summary(collector.bindings, tuple(collector.stars), collector.classes, _imports(tree))


# ---------------------------------------------------------------------------------------------
# cache

_MAX_ENTRIES = 8192
_LOCK = threading.Lock()
_BY_CONTENT: OrderedDict[bytes, Summary] = OrderedDict()
_BY_STAT: OrderedDict[tuple[str, int, int, int], bytes] = OrderedDict()
_STATS = {"parses": 0, "hits": 0}


def _remember(cache: OrderedDict[Any, Any], key: object, value: object) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _MAX_ENTRIES:
        cache.popitem(last=False)


def _by_content(data: bytes, source: str | bytes | None = None) -> tuple[bytes, Summary]:
    digest = hashlib.blake2b(data, digest_size=20).digest()
    with _LOCK:
        found = _BY_CONTENT.get(digest)
        if found is not None:
            _BY_CONTENT.move_to_end(digest)
            _STATS["hits"] += 1
            return digest, found
    summary = summarize(data if source is None else source)
    with _LOCK:
        _remember(_BY_CONTENT, digest, summary)
    return digest, summary


def summary_of_bytes(data: bytes) -> Summary:
    """Summary of a file's bytes (cached by content hash)."""
    return _by_content(data)[1]


def summary_of_text(text: str) -> Summary:
    """Summary of unsaved editor contents (cached by content hash)."""
    return _by_content(text.encode("utf-8", "surrogatepass"), text)[1]


def summary_of_file(path: Path) -> Summary | None:
    """Summary of a file on disk (cached by path, mtime, size, inode once the file is older than
    :data:`~fxscope.project.files.RACY_NS`; then by content); ``None`` if unreadable."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino)
    with _LOCK:
        digest = _BY_STAT.get(key)
        found = _BY_CONTENT.get(digest) if digest is not None else None
        if digest is not None and found is not None:
            _BY_STAT.move_to_end(key)
            _BY_CONTENT.move_to_end(digest)
            _STATS["hits"] += 1
            return found
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    digest, summary = _by_content(data)
    if not is_racy(stat.st_mtime_ns):  # else the next save may keep this signature: read it again
        with _LOCK:
            _remember(_BY_STAT, key, digest)
    return summary


def clear_cache() -> None:
    """Forget every cached summary (tests, memory pressure)."""
    with _LOCK:
        _BY_CONTENT.clear()
        _BY_STAT.clear()


def cache_stats() -> dict[str, int]:
    """Counters: ``parses`` (files actually parsed), ``hits``, ``entries``."""
    with _LOCK:
        return {**_STATS, "entries": len(_BY_CONTENT)}
