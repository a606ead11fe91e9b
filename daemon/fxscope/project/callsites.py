"""Constructor call sites in a file's source, as recipes with unresolved names (AST only).

A call site is a call of a class-like name (``Net(...)``, ``Config.from_name("7B")``) whose every
argument is a literal, a container of literals, a reference to a name, a call of the same kind,
or a name bound to one of those earlier in the same snippet (a function body, a module, a doctest
or a README code block). Nothing here runs; names are resolved later by discovery, against the
workspace's modules (see :mod:`fxscope.project.recipes`).

Names are kept as :class:`~fxscope.model.recipe.Ref` values whose ``module`` says how to resolve
them: ``""`` (a name of the file's own scope), an absolute import name (``torch.nn``: the snippet
imported it), or a relative one (``.model``).

>>> sites = python_call_sites('''
... from pkg.model import Net, Config
... def test_small():
...     cfg = Config(dim=2 * 32, depth=2)
...     model = Net(cfg, heads=4)
... ''')
>>> [(s.line, s.text) for s in sites]
[(4, 'Config(dim=2 * 32, depth=2)'), (5, 'Net(cfg, heads=4)')]
>>> sites[1].expr.args[0].kwargs
(('dim', Lit(value=64)), ('depth', Lit(value=2)))
>>> [s.text for s in markdown_call_sites("Use it:\\n```python\\nnet = ViT(image_size=256, dim=64)\\n```\\n")]
['ViT(image_size=256, dim=64)']
"""

from __future__ import annotations

import ast
import operator
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from fxscope.model.recipe import Call, DictExpr, Expr, Lit, Ref, RefExpr, Seq, Setattrs, expr_from_json, expr_to_json
from fxscope.project._syntax import nested_blocks, one_line, parse_quietly
from fxscope.project._names import dotted_parts

__all__ = ["CallSite", "Examples", "docstring_examples", "markdown_call_sites", "markdown_examples",
           "python_call_sites", "python_examples"]

#: Bounds that keep summaries small on generated or data-heavy files.
MAX_SITES_PER_FILE = 400
MAX_KEYWORDS_PER_FILE = 2000
MAX_NODES = 200
MAX_TEXT = 160
_MAX_NUMBER = 10**12

#: Builtins applied to literals at extraction time (``int(args.size)`` with a literal default).
_FOLDABLE: dict[str, Callable[..., Any]] = {"int": int, "float": float, "str": str, "bool": bool, "round": round,
                                            "abs": abs, "min": min, "max": max}


def _attribute_of(value: Expr | None, name: str) -> Expr:
    """The value of attribute ``name`` of a snippet value: a keyword of an ``argparse.Namespace``
    / ``SimpleNamespace`` call, or an attribute set after it was made."""
    if isinstance(value, Setattrs):
        for key, item in reversed(value.attrs):
            if key == name:
                return item
        value = value.base
    if isinstance(value, Call) and value.func.path[-1] in ("Namespace", "SimpleNamespace"):
        for key, item in value.kwargs:
            if key == name:
                return item
    raise _Unsafe(name)


#: Methods that only move a model to a device or dtype: the model is what they are called on.
_MOVES = frozenset({"cuda", "cpu", "to", "half", "float", "double", "bfloat16", "to_empty"})

#: Lower-case callables that construct values (containers, partial layers, namespaces).
_CONSTRUCTOR_FUNCTIONS = frozenset({"dict", "list", "tuple", "set", "frozenset", "partial"})

_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}


@dataclass(frozen=True)
class CallSite:
    """A constructor call with only safe arguments: the unresolved call, its 1-based line, how it
    was written (shortened) and where it was found (``call-site``, ``docstring`` or ``readme``).

    ``holes``: the top-level arguments that could not be read statically (``len(vocab)``, a loop's
    result), each as its position or keyword and its source text; a positional one is ``Lit(None)``
    in ``expr``, a keyword one is left out. Discovery fills or drops them."""

    expr: Call
    line: int
    text: str
    kind: str
    holes: tuple[tuple[int | str, str], ...] = ()

    def to_json(self) -> list[Any]:
        """``[expr, line, text, kind, holes]``."""
        return [expr_to_json(self.expr), self.line, self.text, self.kind, [list(h) for h in self.holes]]

    @classmethod
    def from_json(cls, data: Any) -> CallSite:
        """Read :meth:`to_json` output (ValueError when malformed)."""
        expr, line, text, kind, holes = data
        call = expr_from_json(expr)
        if not isinstance(call, Call):
            raise ValueError("a call site is a call")
        return cls(call, int(line), str(text), str(kind),
                   tuple((w if isinstance(w, int) else str(w), str(t)) for w, t in holes))


class _Unsafe(Exception):
    """An expression outside the safe subset."""


def _class_like(parts: list[str]) -> bool:
    """``Net``, ``models.Net``, ``Config.from_name``: a class, or a method of a class."""
    return parts[-1][:1].isupper() or (len(parts) >= 2 and parts[-2][:1].isupper())


def _short(text: str) -> str:
    return one_line(text, MAX_TEXT)


class _Scope:
    """Safe bindings of one snippet (a module, function body, doctest or code block), with the
    module scope as parent for function bodies. A name bound to something unsafe maps to None."""

    def __init__(self, parent: _Scope | None = None) -> None:
        self.parent = parent
        self.values: dict[str, Expr | None] = {}
        self.imports: dict[str, Ref | str] = {}  # name -> Ref, or a module import name
        #: argparse parsers (and their argument groups) -> (dest, default) of each argument
        self.parsers: dict[str, list[tuple[str, Expr]]] = {}

    def parser(self, name: str) -> list[tuple[str, Expr]] | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.parsers:
                return scope.parsers[name]
            if name in scope.values or name in scope.imports:
                return None
            scope = scope.parent
        return None

    def lookup(self, name: str) -> tuple[bool, Expr | None, Ref | str | None]:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.values:
                return True, scope.values[name], None
            if name in scope.imports:
                return True, None, scope.imports[name]
            scope = scope.parent
        return False, None, None


class _Converter:
    """Turns AST expressions into recipe expressions under a scope, counting nodes."""

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope
        self.nodes = 0

    def ref(self, parts: list[str]) -> Ref:
        known, value, imported = self.scope.lookup(parts[0])
        if known and imported is None:
            raise _Unsafe(parts[0])  # a local value, not a name to import
        if isinstance(imported, Ref):
            return Ref(imported.module, (*imported.path, *parts[1:]))
        if isinstance(imported, str):  # `import torch.nn as nn` -> nn.Linear
            if len(parts) < 2:
                raise _Unsafe(parts[0])
            return Ref(imported, tuple(parts[1:]))
        return Ref("", tuple(parts))

    def expr(self, node: ast.expr) -> Expr:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Unsafe("too large")
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 200):
                return Lit(value)
            raise _Unsafe("constant")
        if isinstance(node, ast.IfExp):  # `3 if not learn_sigma else 6` with a known test: its branch
            test = self.expr(node.test)
            if not isinstance(test, Lit):
                raise _Unsafe("condition")
            return self.expr(node.body if test.value else node.orelse)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.expr(node.operand)
            if not isinstance(inner, Lit):
                raise _Unsafe("not")
            return Lit(not inner.value)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
            left, right = self.expr(node.left), self.expr(node.comparators[0])
            if not (isinstance(left, Lit) and isinstance(right, Lit)):
                raise _Unsafe("comparison")
            try:
                return Lit(bool(_COMPARISONS[type(node.ops[0])](left.value, right.value)))
            except TypeError:
                raise _Unsafe("comparison") from None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.expr(node.operand)
            if isinstance(inner, Lit) and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                return Lit(-inner.value if isinstance(node.op, ast.USub) else inner.value)
            raise _Unsafe("unary")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self.arithmetic(node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            kind = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}[type(node)]
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise _Unsafe("starred")
            return Seq(kind, tuple(self.expr(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _Unsafe("dict splat")
            return DictExpr(tuple((self.expr(k), self.expr(v)) for k, v in zip(node.keys, node.values)
                                  if k is not None))
        if isinstance(node, ast.Name):
            known, bound, imported = self.scope.lookup(node.id)
            if known and imported is None:
                if bound is None:
                    raise _Unsafe(node.id)
                return bound
            return RefExpr(self.ref([node.id]))
        if isinstance(node, ast.Attribute):
            parts = dotted_parts(node)
            if parts is None:
                raise _Unsafe("attribute")
            if len(parts) == 2:
                known, bound, imported = self.scope.lookup(parts[0])
                if known and imported is None:  # `args.dim` of a namespace bound in the snippet
                    return _attribute_of(bound, parts[1])
            return RefExpr(self.ref(parts))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in _MOVES:
                return self.expr(node.func.value)  # `Net(...).cuda()`: fxscope builds on its own device
            folded = self.fold(node)
            if folded is not None:
                return folded
            return self.call(node)
        raise _Unsafe(type(node).__name__)

    def fold(self, node: ast.Call) -> Lit | None:
        """``int("32")``, ``float(x)``, ``max(a, b)`` of literals: the value."""
        if not isinstance(node.func, ast.Name) or node.func.id not in _FOLDABLE or node.keywords:
            return None
        known, _, _ = self.scope.lookup(node.func.id)
        if known:
            return None  # a local name shadowing the builtin
        args = [self.expr(a) for a in node.args]
        if not args or not all(isinstance(a, Lit) for a in args):
            raise _Unsafe("fold")
        try:
            value = _FOLDABLE[node.func.id](*(a.value for a in args))  # type: ignore[union-attr]
        except (TypeError, ValueError, OverflowError):
            raise _Unsafe("fold") from None
        if not isinstance(value, (int, float, str, bool)) or (isinstance(value, (int, float)) and abs(value) > _MAX_NUMBER):
            raise _Unsafe("fold")
        return Lit(value)

    def arithmetic(self, node: ast.BinOp) -> Lit:
        left, right = self.expr(node.left), self.expr(node.right)
        if not (isinstance(left, Lit) and isinstance(right, Lit)):
            raise _Unsafe("arithmetic")
        a, b = left.value, right.value
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if not numeric or (isinstance(node.op, ast.Pow) and abs(b) > 64):  # type: ignore[arg-type]
            raise _Unsafe("arithmetic")
        try:
            value = _BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError):
            raise _Unsafe("arithmetic") from None
        if isinstance(value, complex) or abs(value) > _MAX_NUMBER:
            raise _Unsafe("arithmetic")
        return Lit(value)

    def call(self, node: ast.Call, holes: list[tuple[int | str, ast.expr]] | None = None) -> Call:
        """The call; with ``holes``, an argument outside the safe subset is recorded there (its
        position or keyword) instead of making the whole call unsafe (``Lit(None)`` holds a
        positional one's place, a keyword one is left out)."""
        parts = dotted_parts(node.func)
        if parts is None or not (_class_like(parts) or parts[-1] in _CONSTRUCTOR_FUNCTIONS):
            raise _Unsafe("callee")  # a function call: never a constructor fxscope would run
        func = self.ref(parts)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unsafe("*args")

        def argument(where: int | str, value: ast.expr) -> Expr | None:
            if holes is None:
                return self.expr(value)
            try:
                return self.expr(value)
            except _Unsafe as e:
                if str(e) == "too large":
                    raise
                holes.append((where, value))
                return None

        args = tuple(Lit(None) if a is None else a for a in (argument(i, a) for i, a in enumerate(node.args)))
        kwargs: list[tuple[str, Expr]] = []
        splats: list[Expr] = []
        for kw in node.keywords:
            if kw.arg is None:
                splat = self.expr(kw.value)
                if splat != DictExpr(()):  # `**kwargs` of a function called without extra keywords
                    splats.append(splat)
            else:
                value = argument(kw.arg, kw.value)
                if value is not None:
                    kwargs.append((kw.arg, value))
        return Call(func, args, tuple(kwargs), tuple(splats))



class _Extractor:
    """Walks statements in order, keeping each snippet's safe bindings and recording call sites.

    A parameter of a function is its default; one without a default is what the snippet passes
    for it (the first call of the module-level function whose argument is safe), else the value
    of that key in the snippet's dict of literals that names most of the function's parameters
    (``model_and_diffusion_defaults()``): a first walk gathers those, a second one uses them."""

    def __init__(self, source: str, kind: str, line_offset: int = 0,
                 passed: dict[str, dict[str, Expr]] | None = None,
                 mappings: list[dict[str, Expr]] | None = None) -> None:
        self.source = source
        self.kind = kind
        self.offset = line_offset
        self.sites: list[CallSite] = []
        self.seen: set[tuple[int, str]] = set()
        self.docstrings: list[tuple[str, int]] = []
        #: (keyword, literal value, line) of every call's literal keyword arguments
        self.keywords: list[tuple[str, int | float | str | bool, int]] = []
        #: what an earlier walk found: function -> parameter -> value passed; dicts of literals
        self.given = passed or {}
        self.given_mappings = mappings or []
        #: what this walk finds for the next one
        self.passed: dict[str, dict[str, Expr]] = {}
        self.mappings: list[dict[str, Expr]] = []
        #: module-level functions: name -> (parameters in order, those without a default)
        self.functions: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        #: whether a site had an argument this walk could not read (a next walk may)
        self.missed = False

    # -- statements ------------------------------------------------------------------------
    def block(self, body: Iterable[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            if len(self.sites) >= MAX_SITES_PER_FILE:
                return
            self.statement(stmt, scope)

    def statement(self, stmt: ast.stmt, scope: _Scope) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.docstring(stmt)
            inner = self.parameters(stmt, scope)
            self.block(stmt.body, inner)
            scope.values[stmt.name] = None
            return
        if isinstance(stmt, ast.ClassDef):
            self.docstring(stmt)
            self.block(stmt.body, _Scope(scope))
            scope.values.pop(stmt.name, None)
            scope.imports[stmt.name] = Ref("", (stmt.name,))  # resolved in the file's scope
            return
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    scope.imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    scope.imports[head] = head
            return
        if isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                if alias.name != "*":
                    scope.imports[alias.asname or alias.name] = Ref(module, (alias.name,))
            return
        self.calls_in(stmt, scope)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.add_argument(stmt.value, scope)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute):
            self.set_attribute(stmt.targets[0], stmt.value, scope)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.assign(stmt, scope)
        elif isinstance(stmt, ast.AugAssign):
            self.unbind(stmt.target, scope)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.unbind(stmt.target, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self.unbind(item.optional_vars, scope)
        if isinstance(stmt, ast.If):
            taken = self.condition(stmt.test, scope)
            if taken is not None:  # the branch that runs binds names; the other is still read for sites
                self.block(stmt.body if taken else stmt.orelse, scope)
                self.block(stmt.orelse if taken else stmt.body, _Scope(scope))
                return
        for block in nested_blocks(stmt):
            self.block(block, scope)

    def condition(self, test: ast.expr, scope: _Scope) -> bool | None:
        """Whether an ``if`` runs its body, when its test is known (``if channel_mult == "":`` with
        the parameter's default); None when it is not."""
        try:
            value = _Converter(scope).expr(test)
        except (_Unsafe, RecursionError):
            return None
        return bool(value.value) if isinstance(value, Lit) else None

    def parameters(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> _Scope:
        """The scope of a function's body: each parameter bound to its default (evaluated where
        the function is defined), to what the snippet passes for it, or to nothing (None);
        ``**kwargs`` to an empty dict (the function called with no extra keywords)."""
        inner = _Scope(scope)
        args = stmt.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = [*zip(positional, defaults), *zip(args.kwonlyargs, args.kw_defaults)]
        module_level = scope.parent is None
        names = tuple(a.arg for a, _ in pairs)
        open_ = frozenset(a.arg for a, d in pairs if d is None)
        if module_level:
            if stmt.name in self.functions:
                self.functions[stmt.name] = ((), frozenset())  # defined twice: which one runs is not known
            else:
                self.functions[stmt.name] = (names, open_)
        given = self.given.get(stmt.name, {}) if module_level else {}
        mapping = self.mapping_for(open_) if module_level and open_ else {}
        for arg, default in pairs:
            value: Expr | None = None
            if default is not None:
                try:
                    value = _Converter(scope).expr(default)
                except (_Unsafe, RecursionError):
                    value = None
            elif arg.arg in given:
                value = given[arg.arg]
            elif arg.arg in mapping:
                value = mapping[arg.arg]
            inner.values[arg.arg] = value
        if args.vararg is not None:
            inner.values[args.vararg.arg] = None
        if args.kwarg is not None:
            inner.values[args.kwarg.arg] = DictExpr(())
        return inner

    def mapping_for(self, params: frozenset[str]) -> dict[str, Expr]:
        """The dict of literals of the snippet that gives most of ``params`` (two at least, and at
        least half of them), the first of those on a tie; empty when none does."""
        best: dict[str, Expr] = {}
        best_count = 0
        for mapping in self.given_mappings:
            count = len(params & mapping.keys())
            if count > best_count:
                best, best_count = mapping, count
        return best if best_count >= 2 and 2 * best_count >= len(params) else {}

    def passes(self, node: ast.Call, scope: _Scope) -> None:
        """Record what a call of a module-level function of the snippet passes for its parameters
        that have no default (the first safe value of each), and every dict of literals."""
        if isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args and len(self.mappings) < 64:
            mapping: dict[str, Expr] = {}
            for kw in node.keywords:
                if kw.arg is not None and isinstance(kw.value, (ast.Constant, ast.UnaryOp, ast.Tuple)):
                    try:
                        mapping[kw.arg] = _Converter(scope).expr(kw.value)
                    except (_Unsafe, RecursionError):
                        pass
            if len(mapping) >= 2:
                self.mappings.append(mapping)
            return
        if not isinstance(node.func, ast.Name) or node.func.id not in self.functions:
            return
        known, _, imported = scope.lookup(node.func.id)
        if imported is not None:
            return  # rebound by an import
        names, open_ = self.functions[node.func.id]
        given = self.passed.setdefault(node.func.id, {})
        pairs: list[tuple[str, ast.expr]] = [(names[i], a) for i, a in enumerate(node.args)
                                             if i < len(names) and not isinstance(a, ast.Starred)]
        pairs += [(kw.arg, kw.value) for kw in node.keywords if kw.arg is not None]
        for name, value in pairs:
            if name in open_ and name not in given:
                parsed = self.parsed_args(value, scope)  # `main(parser.parse_args())`
                try:
                    given[name] = parsed if parsed is not None else _Converter(scope).expr(value)
                except (_Unsafe, RecursionError):
                    pass

    def assign(self, stmt: ast.Assign | ast.AnnAssign, scope: _Scope) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value: Expr | None = None
        parser: list[tuple[str, Expr]] | None = None
        if stmt.value is not None:
            parser = self.parser_made(stmt.value, scope)
            value = self.parsed_args(stmt.value, scope)
            if value is None and parser is None:
                try:
                    value = _Converter(scope).expr(stmt.value)
                except (_Unsafe, RecursionError):
                    value = None
        for target in targets:
            if isinstance(target, ast.Name):
                scope.imports.pop(target.id, None)
                scope.parsers.pop(target.id, None)
                scope.values[target.id] = value
                if parser is not None:
                    del scope.values[target.id]
                    scope.parsers[target.id] = parser
            else:
                self.unbind(target, scope)

    # -- argparse: `args = parser.parse_args()` is a namespace of the arguments' defaults ---------
    def parser_made(self, node: ast.expr, scope: _Scope) -> list[tuple[str, Expr]] | None:
        """A new parser (``argparse.ArgumentParser(...)``) or a group of a known one."""
        if not isinstance(node, ast.Call):
            return None
        parts = dotted_parts(node.func) or []
        if parts and parts[-1] == "ArgumentParser":
            return []
        if len(parts) == 2 and parts[1] in ("add_argument_group", "add_mutually_exclusive_group"):
            return scope.parser(parts[0])
        return None

    def parsed_args(self, node: ast.expr, scope: _Scope) -> Expr | None:
        """``parser.parse_args()`` / ``parser.parse_known_args()[0]`` of a known parser: an
        ``argparse.Namespace`` of every argument's default."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == 0:
            node = node.value
        if not isinstance(node, ast.Call) or node.args:
            return None
        parts = dotted_parts(node.func) or []
        if len(parts) != 2 or parts[1] not in ("parse_args", "parse_known_args"):
            return None
        arguments = scope.parser(parts[0])
        if not arguments:
            return None
        return Call(Ref("argparse", ("Namespace",)), kwargs=tuple(dict(arguments).items()))

    def add_argument(self, call: ast.Call, scope: _Scope) -> None:
        parts = dotted_parts(call.func) or []
        arguments = scope.parser(parts[0]) if len(parts) == 2 and parts[1] == "add_argument" else None
        if arguments is None:
            return
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        dest_node = keywords.get("dest")
        long = [f for f in flags if f.startswith("--")] or [f for f in flags if not f.startswith("-")] or flags
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        elif long:
            dest = long[0].lstrip("-").replace("-", "_")
        else:
            return
        if not dest.isidentifier():
            return
        action = keywords.get("action")
        action_name = action.value if isinstance(action, ast.Constant) else None
        default: Expr = Lit({"store_true": False, "store_false": True}.get(str(action_name)))
        if "default" in keywords:
            try:
                default = _Converter(scope).expr(keywords["default"])
            except (_Unsafe, RecursionError):
                default = Lit(None)
        kind = keywords.get("type")
        if isinstance(kind, ast.Name) and kind.id in ("int", "float") and isinstance(default, Lit) \
                and isinstance(default.value, str):  # argparse converts a string default with type=
            try:
                default = Lit(_FOLDABLE[kind.id](default.value))
            except ValueError:
                default = Lit(None)
        arguments.append((dest, default))
        if isinstance(default, Lit) and isinstance(default.value, (int, float, str, bool)) \
                and len(self.keywords) < MAX_KEYWORDS_PER_FILE:  # `--ngpu 1`: the workspace's value for ngpu
            self.keywords.append((dest, default.value, call.lineno + self.offset))

    def set_attribute(self, target: ast.Attribute, value: ast.expr, scope: _Scope) -> None:
        """``config.n_layer = 2`` on a name bound to a safe value: that value with the attribute."""
        if not isinstance(target.value, ast.Name):
            self.unbind(target, scope)
            return
        name = target.value.id
        known, base, imported = scope.lookup(name)
        if not known or imported is not None or base is None or isinstance(base, (Lit, Seq, DictExpr, RefExpr)):
            self.unbind(target, scope)
            return
        try:
            attribute = _Converter(scope).expr(value)
        except (_Unsafe, RecursionError):
            self.unbind(target, scope)
            return
        attrs = base.attrs if isinstance(base, Setattrs) else ()
        inner = base.base if isinstance(base, Setattrs) else base
        kept = tuple((k, v) for k, v in attrs if k != target.attr)
        scope.values[name] = Setattrs(inner, (*kept, (target.attr, attribute)))

    def unbind(self, target: ast.AST, scope: _Scope) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                scope.imports.pop(node.id, None)
                scope.values[node.id] = None

    # -- calls -----------------------------------------------------------------------------
    def calls_in(self, stmt: ast.stmt, scope: _Scope) -> None:
        todo: list[ast.AST] = [stmt]
        changed: list[ast.Name] = []
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Call):
                self.record(node, scope)
                self.keywords_of(node)
                self.passes(node, scope)
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    changed.append(node.func.value)  # `ds.append(...)`, `cfg.update(...)`: may change it
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.stmt):  # nested statements are walked in order
                    todo.append(child)
        for name in changed:
            known, value, imported = scope.lookup(name.id)
            if known and imported is None and value is not None and not isinstance(value, (Lit, RefExpr)):
                self.unbind(name, scope)

    def keywords_of(self, node: ast.Call) -> None:
        if len(self.keywords) >= MAX_KEYWORDS_PER_FILE:
            return
        for kw in node.keywords:
            value = kw.value
            negative = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
            if negative:
                value = value.operand  # type: ignore[attr-defined]
            if kw.arg and isinstance(value, ast.Constant) and isinstance(value.value, (int, float, str, bool)):
                literal = value.value
                if isinstance(literal, str) and len(literal) > 100:
                    continue
                if negative:
                    if not isinstance(literal, (int, float)) or isinstance(literal, bool):
                        continue
                    literal = -literal
                self.keywords.append((kw.arg, literal, node.lineno + self.offset))

    def record(self, node: ast.Call, scope: _Scope) -> None:
        parts = dotted_parts(node.func)
        if parts is None or not _class_like(parts):
            return
        if not node.args and not node.keywords and parts[-1][:1].isupper():
            return  # `Net()`: the defaults, which are tried anyway
        holes: list[tuple[int | str, ast.expr]] = []
        try:
            call = _Converter(scope).call(node, holes)
        except (_Unsafe, RecursionError):
            self.missed = True
            return
        if holes:
            self.missed = True
            # most of what it passes must be the repository's: else it says little more than a guess
            if len(holes) >= len(call.args) + len(call.kwargs) - sum(isinstance(h, int) for h, _ in holes):
                return
        text = _short(ast.get_source_segment(self.source, node) or ast.unparse(node))
        line = node.lineno + self.offset
        if (line, text) in self.seen:
            return
        self.seen.add((line, text))
        written = tuple((where, _short(ast.get_source_segment(self.source, value) or ast.unparse(value)))
                        for where, value in holes)
        self.sites.append(CallSite(call, line, text, self.kind, written))

    def docstring(self, node: ast.AST) -> None:
        body = getattr(node, "body", None)
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str) and ">>>" in body[0].value.value):
            self.docstrings.append((body[0].value.value, body[0].lineno))



@dataclass(frozen=True)
class Examples:
    """What a file says about building things: its call sites and every literal keyword argument
    of any call in it (``name``, value, line), the workspace's vocabulary of parameter values."""

    sites: tuple[CallSite, ...] = ()
    keywords: tuple[tuple[str, int | float | str | bool, int], ...] = ()

    def __add__(self, other: Examples) -> Examples:
        return Examples((self.sites + other.sites)[:MAX_SITES_PER_FILE],
                        (self.keywords + other.keywords)[:MAX_KEYWORDS_PER_FILE])


#: Walks of one snippet at most: the first, then with what calls of its functions pass (a
#: script's ``main(args)`` that calls a factory ``create(args.size)``: one more).
_MAX_WALKS = 3


def _walk(tree: ast.Module, source: str, kind: str, offset: int = 0) -> _Extractor:
    """The extractor after walking ``tree``, again while a site missed an argument and calls of the
    snippet's functions (or its dicts of literals) gave parameters values a walk had not used."""
    extractor = _Extractor(source, kind, offset)
    for _ in range(_MAX_WALKS):
        try:
            extractor.block(tree.body, _Scope())
        except RecursionError:
            pass
        learned = {f: p for f, p in extractor.passed.items() if p}
        if not extractor.missed or (learned == extractor.given and extractor.mappings == extractor.given_mappings):
            break
        extractor = _Extractor(source, kind, offset, learned, extractor.mappings)
    return extractor


def _snippet(source: str, kind: str, offset: int) -> Examples:
    tree = parse_quietly(source)
    if tree is None:
        return Examples()
    extractor = _walk(tree, source, kind, offset)
    return Examples(tuple(extractor.sites), tuple(extractor.keywords))


def python_examples(source: str, tree: ast.Module | None = None) -> Examples:
    """Call sites and keywords of a Python file: code (``call-site``) and doctests (``docstring``)."""
    tree = tree if tree is not None else parse_quietly(source)
    if tree is None:
        return Examples()
    extractor = _walk(tree, source, "call-site")
    inner, extractor.docstrings = extractor.docstrings, []
    extractor.docstring(tree)  # the module's docstring first
    extractor.docstrings += inner
    found = Examples(tuple(extractor.sites), tuple(extractor.keywords))
    for text, line in extractor.docstrings:
        found = found + docstring_examples(text, line)
    return found


def python_call_sites(source: str, tree: ast.Module | None = None) -> list[CallSite]:
    """The call sites of :func:`python_examples`."""
    return list(python_examples(source, tree).sites)


_PROMPT = re.compile(r"^\s*(>>>|\.\.\.)( |$)")


def docstring_examples(text: str, first_line: int) -> Examples:
    """Call sites of the ``>>>`` examples of a docstring starting at ``first_line``: the example
    lines (prompts removed) form one snippet; other lines are blanked to keep line numbers."""
    lines = [(_PROMPT.sub("", line, count=1) if _PROMPT.match(line) else "") for line in text.splitlines()]
    return _snippet("\n".join(lines), "docstring", first_line - 1)


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


def markdown_examples(text: str) -> Examples:
    """Call sites of the Python code blocks of a Markdown file (fences tagged ``python``/``py``
    or untagged; an untagged block that does not parse as Python is skipped). Each block is one
    snippet; ``>>>`` prompts inside a block are removed."""
    found = Examples()
    lines = text.splitlines()
    i = 0
    while i < len(lines) and len(found.sites) < MAX_SITES_PER_FILE:
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, language = match.group(2), match.group(3).lower()
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence[0] * len(fence)):
            end += 1
        if language in ("python", "py", "python3", "pycon", "ipython", ""):
            body = [(_PROMPT.sub("", line, count=1) if _PROMPT.match(line) else line)
                    for line in lines[start:end]]
            block = "\n".join(body)
            if "(" in block:
                found = found + _snippet(textwrap.dedent(block), "readme", start)
        i = end + 1
    return found


def markdown_call_sites(text: str) -> list[CallSite]:
    """The call sites of :func:`markdown_examples`."""
    return list(markdown_examples(text).sites)
