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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Union

from ._names import dotted_name
from .callsites import CallSite, markdown_examples, python_examples
from .config_files import is_config_file, yaml_examples
from .forward_calls import ForwardSite, forward_sites, markdown_forward_sites
from .files import is_racy
from .notebooks import CellIndex, NotebookError, is_notebook, notebook_tree, read_notebook
from .toplevel import is_main_guard, is_script, plan
from ._uses import InitUses, init_uses
from .policy import is_config_name
from .work import TopLevel

__all__ = ["SUMMARY_FORMAT", "ClassInfo", "Summary", "cache_stats", "clear_cache", "file_kind", "is_example_text", "is_markdown",
           "summary_of_bytes", "summary_of_file", "summary_of_text"]

#: Version of :meth:`Summary.to_json`; persisted summaries of another version are not used.
SUMMARY_FORMAT = 16  # 16: the parameters' kinds are part of InitUses

#: Markdown files longer than this are not read for examples.
MAX_MARKDOWN_CHARS = 1 << 20

#: How a module-level name is bound. ("class", name) | ("def", name, line) | ("module", "a.b")
#: | ("from", level, "a.b", name) | ("alias", "a.b.C") | ("other",)
Binding = tuple[Union[str, int], ...]

#: An import statement: (level, module, names); names is None for ``import a.b``.
ImportRecord = tuple[int, str, Union[tuple[str, ...], None]]


@dataclass(frozen=True)
class ClassInfo:
    """A module-level class: its base expressions as dotted strings (``None`` when not a plain
    name/attribute), the lines of functions defined in its body, the abstract method names and the
    required parameters of its own ``__init__`` (``None`` when it defines none; a dataclass or
    named tuple without one requires its fields that have no default). ``annotations``: the
    dotted type annotation of each ``__init__`` parameter or field that has one (``Optional[X]``
    is ``X``); ``config_class``: the value of a ``config_class = X`` attribute (transformers)."""

    name: str
    line: int
    bases: tuple[str | None, ...]
    members: dict[str, int]
    abstract: frozenset[str]
    init_required: tuple[str, ...] | None
    annotations: dict[str, str] = field(default_factory=dict)
    config_class: str | None = None
    #: Literal defaults of the ``__init__`` parameters and fields that have one (int, float, str, bool).
    defaults: dict[str, int | float | str | bool] = field(default_factory=dict)
    #: ``init_required`` are the class's own fields (a dataclass): a dataclass base's come first.
    fields_init: bool = False
    #: For an ``__init__`` taking only ``**kwargs``: the names its body reads from them without a
    #: default (``kwargs["dim"]``, ``kwargs.get("dim")``); None for any other constructor.
    kwargs_reads: tuple[str, ...] | None = None
    #: Required ``__init__`` parameters its body uses as sizes (``nn.Linear(dim, dim)``, ``range(n)``,
    #: ``torch.zeros(size, 4)``, ``dim * 4``): ints, as a reader of the class would take them.
    int_params: tuple[str, ...] = ()
    #: What the constructor does with its arguments (attributes it reads off them, ``**kwargs`` it
    #: passes on, values it asserts; see :mod:`fxscope.project._uses`).
    uses: InitUses = InitUses()

    @property
    def param_uses(self) -> dict[str, str]:
        """How the ``__init__`` body uses each required parameter (:attr:`InitUses.kinds`)."""
        return dict(self.uses.kinds)


@dataclass(frozen=True)
class Summary:
    """What discovery needs from one file; ``error`` is (line, column, message) when it does not parse."""

    bindings: dict[str, Binding]
    stars: tuple[tuple[int, str], ...]
    classes: dict[str, ClassInfo]
    imports: tuple[ImportRecord, ...]
    error: tuple[int, int, str] | None = None
    #: Constructor call sites with safe arguments (see :mod:`fxscope.project.callsites`).
    calls: tuple[CallSite, ...] = ()
    #: Every literal keyword argument of any call: (name, value, line).
    keywords: tuple[tuple[str, int | float | str | bool, int], ...] = ()
    #: A notebook's code cells (lines are the notebook's code lines, see
    #: :mod:`fxscope.project.notebooks`); empty for any other file.
    cells: CellIndex = CellIndex()
    #: Forward calls on literal tensors, and shapes forward annotations give (see
    #: :mod:`fxscope.project.forward_calls`).
    forwards: tuple[ForwardSite, ...] = ()

    def cell_of(self, line: int) -> tuple[int, int] | None:
        """(cell number, line in the cell) of a notebook's code ``line``; None for a ``.py`` file."""
        return self.cells.locate(line)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_json` inverts it (summaries are persisted by content)."""
        return {
            "bindings": {k: list(v) for k, v in self.bindings.items()},
            "stars": [list(s) for s in self.stars],
            "classes": {k: [c.line, list(c.bases), c.members, sorted(c.abstract),
                            None if c.init_required is None else list(c.init_required),
                            c.annotations, c.config_class, c.defaults, c.fields_init,
                            None if c.kwargs_reads is None else list(c.kwargs_reads), list(c.int_params),
                            c.uses.to_json()]
                        for k, c in self.classes.items()},
            "imports": [[lvl, mod, None if names is None else list(names)] for lvl, mod, names in self.imports],
            "error": None if self.error is None else list(self.error),
            "calls": [c.to_json() for c in self.calls],
            "keywords": [list(k) for k in self.keywords],
            "cells": self.cells.to_json(),
            "forwards": [f.to_json() for f in self.forwards],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary:
        """Rebuild a summary from :meth:`to_json` output."""
        classes = {
            name: ClassInfo(name, int(line), tuple(bases), dict(members), frozenset(abstract),
                            None if init is None else tuple(init), dict(annotations),
                            None if config_class is None else str(config_class), dict(defaults), bool(fields_init),
                            None if reads is None else tuple(str(r) for r in reads), tuple(str(p) for p in ints),
                            InitUses.from_json(uses))
            for name, (line, bases, members, abstract, init, annotations, config_class, defaults, fields_init, reads,
                       ints, uses) in data["classes"].items()
        }
        return cls(
            {k: tuple(v) for k, v in data["bindings"].items()},
            tuple((int(level), str(module)) for level, module in data["stars"]),
            classes,
            tuple((int(lvl), str(mod), None if names is None else tuple(names))
                  for lvl, mod, names in data["imports"]),
            None if data["error"] is None else (int(data["error"][0]), int(data["error"][1]), str(data["error"][2])),
            tuple(CallSite.from_json(c) for c in data["calls"]),
            tuple((str(name), value, int(line)) for name, value, line in data["keywords"]),
            CellIndex.from_json(data.get("cells") or ()),
            tuple(ForwardSite.from_json(f) for f in data.get("forwards") or ()),
        )


# ---------------------------------------------------------------------------------------------
# extraction


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # Generic[T], nn.ModuleList[...]
        node = node.value
    return dotted_name(node)


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


#: Decorators and bases whose classes get an ``__init__`` taking their annotated fields.
_FIELD_DECORATORS = frozenset({"dataclass", "dataclasses.dataclass", "attr.s", "attr.attrs", "attrs.define",
                               "attr.define", "define", "attrs.frozen", "frozen"})
_FIELD_BASES = frozenset({"NamedTuple", "typing.NamedTuple", "BaseModel", "pydantic.BaseModel"})


def _annotation(node: ast.expr | None) -> str | None:
    """The class an annotation names: ``Config``, ``pkg.Config``, ``"Config"``, ``Optional[X]``,
    ``X | None``, ``Union[X, None]``; None for anything else."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
        return text if all(p.isidentifier() for p in text.split(".")) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [n for n in (node.left, node.right) if not (isinstance(n, ast.Constant) and n.value is None)]
        return _annotation(sides[0]) if len(sides) == 1 else None
    if isinstance(node, ast.Subscript):
        outer = _dotted(node.value) or ""
        if outer.rsplit(".", 1)[-1] in ("Optional", "Union"):
            inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            kept = [n for n in inner if not (isinstance(n, ast.Constant) and n.value is None)]
            return _annotation(kept[0]) if kept else None  # Union[A, B]: A, as good as any
        return None
    return _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


def _literal(node: ast.expr | None) -> int | float | str | bool | None:
    """The value of a literal default (``3``, ``-1e-5``, ``"gelu"``, ``True``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        inner = node.operand.value
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value if not isinstance(node.value, str) or len(node.value) <= 100 else None
    return None


def _has_default_field(value: ast.expr | None) -> bool:
    """Whether a field's value gives it a default (``= 3``, ``field(default=...)``)."""
    if value is None:
        return False
    if isinstance(value, ast.Call) and (_dotted(value.func) or "").rsplit(".", 1)[-1] in ("field", "Field", "ib", "attrib"):
        return any(k.arg in ("default", "default_factory", "factory") for k in value.keywords) or bool(value.args)
    return True


def _class_info(node: ast.ClassDef) -> ClassInfo:
    members: dict[str, int] = {}
    abstract: set[str] = set()
    init: tuple[str, ...] | None = None
    annotations: dict[str, str] = {}
    fields: list[str] = []  # annotated class attributes without a default, in order
    config_class: str | None = None
    defaults: dict[str, int | float | str | bool] = {}
    reads: tuple[str, ...] | None = None
    ints: tuple[str, ...] = ()
    init_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for stmt in _class_body(node.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[stmt.name] = stmt.lineno
            if _is_abstract(stmt):
                abstract.add(stmt.name)
            else:
                abstract.discard(stmt.name)
            if stmt.name == "__init__":
                init_node = stmt
                init = _required(stmt)
                if init and init[-1].startswith("**"):
                    reads = _kwargs_reads(stmt, init[-1][2:], defaults)
                ints = _int_params(stmt, frozenset(init))
                for arg in [*stmt.args.posonlyargs, *stmt.args.args, *stmt.args.kwonlyargs]:
                    found = _annotation(arg.annotation)
                    if found:
                        annotations[arg.arg] = found
                positional = [*stmt.args.posonlyargs, *stmt.args.args]
                pairs = [*zip(positional[len(positional) - len(stmt.args.defaults):], stmt.args.defaults),
                         *zip(stmt.args.kwonlyargs, stmt.args.kw_defaults)]
                for arg, default in pairs:
                    value = _literal(default)
                    if value is not None:
                        defaults[arg.arg] = value
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and (isinstance(stmt, ast.Assign) or stmt.value is not None):
                    members[target.id] = stmt.lineno
                    abstract.discard(target.id)
                    if target.id == "config_class" and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                        config_class = _dotted(stmt.value)
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                kind = _dotted(stmt.annotation) or ""
                if kind.rsplit(".", 1)[-1] not in ("ClassVar", "InitVar"):
                    found = _annotation(stmt.annotation)
                    if found and stmt.target.id not in annotations:
                        annotations[stmt.target.id] = found
                    if not _has_default_field(stmt.value):
                        fields.append(stmt.target.id)
                    elif _literal(stmt.value) is not None:
                        defaults.setdefault(stmt.target.id, _literal(stmt.value))  # type: ignore[arg-type]
    bases = tuple(_dotted(b) for b in node.bases)
    decorators = {_dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
    fields_init = init is None and bool(decorators & _FIELD_DECORATORS or set(bases) & _FIELD_BASES)
    if fields_init:
        init = tuple(fields)
    data_like = fields_init or not bases or any(is_config_name((b or "").rsplit(".", 1)[-1]) for b in (node.name, *bases))
    uses = init_uses(node, init_node, data_like=data_like, required=init if init_node and init else ())
    return ClassInfo(node.name, node.lineno, bases, members, frozenset(abstract), init, annotations, config_class,
                     defaults, fields_init, reads, ints, uses)


#: Callables whose arguments are sizes: torch.nn layers and tensor factories, ``range``.
_SIZED = frozenset({"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "RMSNorm", "BatchNorm1d",
                    "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "MultiheadAttention", "TransformerEncoderLayer",
                    "TransformerDecoderLayer", "PixelShuffle", "Upsample", "MaxPool1d", "MaxPool2d", "AvgPool1d",
                    "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "zeros", "ones", "empty", "randn", "rand",
                    "full", "arange", "eye", "range"})
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift)


def _int_params(func: ast.FunctionDef | ast.AsyncFunctionDef, params: frozenset[str]) -> tuple[str, ...]:
    """The ``params`` an ``__init__`` body uses as sizes (see :attr:`ClassInfo.int_params`)."""
    found: list[str] = []

    def sizes(node: ast.expr) -> None:  # a name in an argument, through arithmetic only
        if isinstance(node, ast.Name) and node.id in params:
            found.append(node.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):
            sizes(node.left)
            sizes(node.right)

    for node in ast.walk(func):
        if isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1] in _SIZED:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                sizes(arg)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):
            sides = (node.left, node.right)
            if any(isinstance(s, ast.Constant) and type(s.value) is int for s in sides):
                for side in sides:
                    if isinstance(side, ast.Name) and side.id in params:
                        found.append(side.id)
    return tuple(dict.fromkeys(found))


def _kwargs_reads(func: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str,
                  defaults: dict[str, int | float | str | bool]) -> tuple[str, ...]:
    """The names an ``__init__`` reads from its ``**kwargs`` without a default (``kwargs["dim"]``,
    ``kwargs.get("dim")``); those read with a literal default go into ``defaults``."""
    found: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
                and node.value.id == kwargs and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            found.append(node.slice.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == kwargs and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value
            value = _literal(node.args[1]) if len(node.args) > 1 else None
            if len(node.args) == 1:
                found.append(name)
            elif value is not None:
                defaults.setdefault(name, value)
    return tuple(dict.fromkeys(n for n in found if n.isidentifier()))


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
        elif isinstance(stmt, ast.If) and is_main_guard(stmt.test):
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
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                info = self.classes.get(target.value.id)  # `Net.forward = forward`: a method from a later cell
                if info is not None and self.bindings.get(info.name) == ("class", info.name):
                    members = {**info.members, target.attr: stmt.lineno}
                    abstract = info.abstract - {target.attr}
                    self.classes[info.name] = replace(info, members=members, abstract=abstract)
            simple = isinstance(stmt, ast.Assign) and isinstance(target, ast.Name) and alias is not None
            for name in _bound_names(target):
                self.bindings[name] = ("alias", alias) if simple and alias is not None else ("other",)


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
    """Parse ``source`` and extract its :class:`Summary` (never raises for bad code). A script
    (:func:`~fxscope.project.toplevel.is_script`) binds only what the statements fxscope runs bind."""
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
    text = source if isinstance(source, str) else source.decode("utf-8", "replace")
    # Other files are not read here: their functions are taken for inert, so a class the worker's
    # fuller view skips is still a target (FXS407 there), never silently missing.
    return _summary(text, tree, runs_only=is_script(tree, top=TopLevel(tree, unread_inert=True)))


def _summary(text: str, tree: ast.Module, *, runs_only: bool, magic_lines: frozenset[int] = frozenset(),
             error: tuple[int, int, str] | None = None, cells: CellIndex = CellIndex()) -> Summary:
    """The summary of a parsed module; ``runs_only``: bindings and classes only of the statements
    the safe executor runs (a notebook, a script)."""
    collector = _Collector()
    if runs_only:
        collector.visit(tree.body[step.index] for step in plan(tree, magic_lines) if step.kind != "skip")
    else:
        collector.visit(tree.body)
    examples = python_examples(text, tree)
    return Summary(collector.bindings, tuple(collector.stars), collector.classes, _imports(tree), error,
                   calls=examples.sites, keywords=examples.keywords, cells=cells,
                   forwards=tuple(forward_sites(text, tree)))


def summarize_notebook(source: str | bytes) -> Summary:
    """The summary of a Jupyter notebook: its code cells as one module (a cell that does not
    parse is left out and is the summary's ``error``); lines are the notebook's code lines."""
    _STATS["parses"] += 1
    try:
        nb = read_notebook(source)
    except NotebookError as exc:
        return Summary({}, (), {}, (), (1, 1, str(exc)))
    parsed = notebook_tree(nb)
    error = parsed.errors[0] if parsed.errors else None
    return _summary(nb.code, parsed.tree, runs_only=True, magic_lines=nb.magic_lines, error=error,
                    cells=nb.index)


def summarize_markdown(source: str | bytes) -> Summary:
    """The summary of a Markdown file: only the call sites of its Python code blocks."""
    _STATS["parses"] += 1
    text = source if isinstance(source, str) else source.decode("utf-8", "replace")
    if len(text) > MAX_MARKDOWN_CHARS:
        return Summary({}, (), {}, ())
    examples = markdown_examples(text)
    return Summary({}, (), {}, (), calls=examples.sites, keywords=examples.keywords,
                   forwards=tuple(markdown_forward_sites(text)))


def summarize_yaml(source: str | bytes) -> Summary:
    """The summary of a YAML config file: the constructions its model mappings describe and its
    plain keyword values (see :mod:`fxscope.project.config_files`)."""
    _STATS["parses"] += 1
    text = source if isinstance(source, str) else source.decode("utf-8", "replace")
    sites, keywords = yaml_examples(text)
    return Summary({}, (), {}, (), calls=sites, keywords=keywords)


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


def is_markdown(path: str | Path) -> bool:
    """Whether a workspace file is read as Markdown (its code blocks) rather than Python."""
    return str(path).endswith(".md")


def is_example_text(path: str | Path) -> bool:
    """Whether a workspace file is read only for the constructions it shows (a Markdown file's
    code blocks, a YAML config's model mappings): no module, no binding, no target."""
    return is_markdown(path) or is_config_file(str(path))


def file_kind(path: str | Path) -> str:
    """How a workspace file is read: ``md`` (Markdown: its code blocks), ``yaml`` (a config's
    model mappings), ``nb`` (a notebook's code cells) or ``py``."""
    if is_markdown(path):
        return "md"
    if is_config_file(str(path)):
        return "yaml"
    return "nb" if is_notebook(path) else "py"


_SUMMARIZE = {"py": summarize, "md": summarize_markdown, "yaml": summarize_yaml, "nb": summarize_notebook}


def _by_content(data: bytes, source: str | bytes | None = None, kind: str = "py") -> tuple[bytes, Summary]:
    digest = hashlib.blake2b(data, digest_size=20, person=kind.encode()).digest()
    with _LOCK:
        found = _BY_CONTENT.get(digest)
        if found is not None:
            _BY_CONTENT.move_to_end(digest)
            _STATS["hits"] += 1
            return digest, found
    text = data if source is None else source
    summary = _SUMMARIZE[kind](text)
    with _LOCK:
        _remember(_BY_CONTENT, digest, summary)
    return digest, summary


def summary_of_bytes(data: bytes, kind: str = "py") -> Summary:
    """Summary of a file's bytes (cached by content hash); ``kind`` as :func:`file_kind` says."""
    return _by_content(data, kind=kind)[1]


def summary_of_text(text: str, kind: str = "py") -> Summary:
    """Summary of unsaved editor contents (cached by content hash)."""
    return _by_content(text.encode("utf-8", "surrogatepass"), text, kind)[1]


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
    digest, summary = _by_content(data, kind=file_kind(path))
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
