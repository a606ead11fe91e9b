"""What a class's constructor does with its arguments, read from the AST (nothing runs).

Discovery uses these facts to build a class the repository never constructs with literals:

- the attributes read off each parameter (``config.n_embd``, or ``self.config.n_embd`` after
  ``self.config = config``): an unannotated ``config`` is the workspace configuration class that
  has them all;
- the attributes an instance of a data-like class has (fields, class attributes, ``self.x = ...``
  in its methods): what such a class offers a reader of ``config.x``;
- the calls that pass ``**kwargs`` on (``ResidualFSQ(dim=dim, **kwargs)``,
  ``super().__init__(**kwargs)``): what the callee requires becomes what the class requires;
- values the constructor pins by assertion (``assert self.num_classes == 0``), and parameters
  defaulting to ``None`` that it asserts are given (``assert exists(depth)``).

>>> import ast
>>> tree = ast.parse('''
... class Head(Base):
...     def __init__(self, config, depth=None, **kwargs):
...         super().__init__(width=4, **kwargs)
...         self.config = config
...         assert exists(depth)
...         assert self.num_classes == 0
...         self.proj = Linear(config.dim, self.config.out)
... ''')
>>> uses = init_uses(tree.body[0], tree.body[0].body[0], data_like=False)
>>> uses.reads, uses.passes, uses.pinned, uses.asserted, uses.none_defaults
((('config', ('dim', 'out')),), (('super', ('width',), 0),), (('num_classes', 0),), ('depth',), ('depth',))
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Union

from ._names import dotted_name

__all__ = ["InitUses", "init_uses"]

#: A literal an assertion pins a value to.
Literal = Union[int, float, str, bool]


@dataclass(frozen=True)
class InitUses:
    """What a class's ``__init__`` does with its parameters (see the module docstring); empty
    tuples when it has no ``__init__`` or does none of these."""

    #: Parameters (and dataclass fields) whose default is ``None``.
    none_defaults: tuple[str, ...] = ()
    #: Parameter -> the attribute names the class reads off it, in order of first read.
    reads: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: For a data-like class (a dataclass, a plain class, one named like a configuration): the
    #: attributes an instance has; empty for any other class.
    attributes: tuple[str, ...] = ()
    #: Calls passing ``**kwargs`` on: (callee as written, ``super`` for ``super().__init__``,
    #: the keywords it passes explicitly, how many positional arguments it passes).
    passes: tuple[tuple[str, tuple[str, ...], int], ...] = ()
    #: (name, value) an ``assert self.name == value`` (or ``kwargs["name"] == value``) pins.
    pinned: tuple[tuple[str, Literal], ...] = ()
    #: Parameters defaulting to ``None`` an assertion requires to be given.
    asserted: tuple[str, ...] = ()
    #: Required parameter -> how the body uses it, where that says what it holds: ``"flag"`` (only
    #: tested for truth), ``"iter"`` (iterated), ``"unpack:N"`` (unpacked into N names),
    #: ``"index:N"`` (subscripted with constants up to N - 1); sorted by parameter.
    kinds: tuple[tuple[str, str], ...] = ()

    def kind_of(self, param: str) -> str:
        """How the body uses ``param`` (:attr:`kinds`; empty when it says nothing)."""
        return next((kind for name, kind in self.kinds if name == param), "")

    def reads_of(self, param: str) -> tuple[str, ...]:
        """The attributes the class reads off ``param`` (empty: none, or not a parameter)."""
        return next((names for name, names in self.reads if name == param), ())

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (only the facts that are there); :meth:`from_json` inverts it."""
        out: dict[str, Any] = {}
        if self.none_defaults:
            out["none"] = list(self.none_defaults)
        if self.reads:
            out["reads"] = [[name, list(attrs)] for name, attrs in self.reads]
        if self.attributes:
            out["attrs"] = list(self.attributes)
        if self.passes:
            out["passes"] = [[callee, list(keywords), positional] for callee, keywords, positional in self.passes]
        if self.pinned:
            out["pinned"] = [[name, value] for name, value in self.pinned]
        if self.asserted:
            out["asserted"] = list(self.asserted)
        if self.kinds:
            out["kinds"] = [[name, kind] for name, kind in self.kinds]
        return out

    @classmethod
    def from_json(cls, data: Any) -> InitUses:
        """The facts :meth:`to_json` wrote (empty for anything else)."""
        if not isinstance(data, dict) or not data:
            return _EMPTY
        return cls(tuple(str(n) for n in data.get("none", ())),
                   tuple((str(name), tuple(str(a) for a in attrs)) for name, attrs in data.get("reads", ())),
                   tuple(str(a) for a in data.get("attrs", ())),
                   tuple((str(c), tuple(str(k) for k in kws), int(n)) for c, kws, n in data.get("passes", ())),
                   tuple((str(name), value) for name, value in data.get("pinned", ())),
                   tuple(str(n) for n in data.get("asserted", ())),
                   tuple((str(name), str(kind)) for name, kind in data.get("kinds", ())))


_EMPTY = InitUses()


def _literal(node: ast.expr) -> Literal | None:
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if isinstance(node, ast.UnaryOp) and negative:
        node = node.operand
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool) or isinstance(value, str):
        return None if negative else value
    if isinstance(value, (int, float)):
        return -value if negative else value
    return None


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [s for s in ast.walk(cls) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def init_uses(cls: ast.ClassDef, init: ast.FunctionDef | ast.AsyncFunctionDef | None, *, data_like: bool,
              required: tuple[str, ...] = ()) -> InitUses:
    """The :class:`InitUses` of class ``cls`` whose ``__init__`` is ``init`` (None: it has none)
    and requires ``required``; ``data_like``: whether to record the attributes its instances have."""
    attributes = _attributes(cls) if data_like else ()
    none_defaults = [target.id for target in _fields_defaulting_to_none(cls)]
    if init is None:
        return InitUses(tuple(none_defaults), attributes=attributes) if none_defaults or attributes else _EMPTY
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    params = [a.arg for a in (*positional, *args.kwonlyargs)][1:]  # self dropped
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    none_defaults += [a.arg for a, d in pairs if d is not None and _is_none(d)]
    kwargs = args.kwarg.arg if args.kwarg else None
    return InitUses(tuple(dict.fromkeys(none_defaults)), _reads(cls, init, params), attributes,
                    _passes(init, kwargs) if kwargs else (), _pinned(init, kwargs),
                    _asserted(init, frozenset(none_defaults) & frozenset(params)),
                    tuple(sorted(_kinds(init, frozenset(required)).items())))


def _fields_defaulting_to_none(cls: ast.ClassDef) -> list[ast.Name]:
    return [s.target for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            and _is_none(s.value)]


def _attributes(cls: ast.ClassDef) -> tuple[str, ...]:
    """Class attributes, fields, methods and ``self.x = ...`` targets of any method."""
    found: list[str] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            found.append(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            found += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(stmt.name)
    for method in _methods(cls):
        self_name = method.args.args[0].arg if method.args.args else None
        for node in ast.walk(method):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets = [node.target]
            for target in targets:
                for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                    if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name) \
                            and element.value.id == self_name:
                        found.append(element.attr)
    return tuple(dict.fromkeys(a for a in found if not a.startswith("__")))


def _reads(cls: ast.ClassDef, init: ast.FunctionDef | ast.AsyncFunctionDef,
           params: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Parameter -> attributes read off it: ``p.x`` in ``__init__``, ``self.a.x`` anywhere in the
    class after ``self.a = p`` in ``__init__`` (never ``p.method(...)``: a call reads no setting)."""
    wanted = set(params)
    aliases: dict[str, str] = {}  # self attribute -> the parameter it holds
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in wanted:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    aliases.setdefault(target.attr, node.value.id)
    found: dict[str, list[str]] = {}

    def visit(tree: ast.AST, in_init: bool) -> None:
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load) or id(node) in called:
                continue
            owner = node.value
            param = None
            if in_init and isinstance(owner, ast.Name) and owner.id in wanted:
                param = owner.id
            elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) \
                    and owner.value.id == "self" and owner.attr in aliases:
                param = aliases[owner.attr]
            if param is not None and not node.attr.startswith("__"):
                found.setdefault(param, []).append(node.attr)

    visit(init, True)
    if aliases:
        for method in _methods(cls):
            if method is not init:
                visit(method, False)
    return tuple((p, tuple(dict.fromkeys(found[p]))) for p in params if p in found)


def _passes(init: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    out: list[tuple[str, tuple[str, ...], int]] = []
    for node in ast.walk(init):
        if not isinstance(node, ast.Call):
            continue
        if not any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs for k in node.keywords):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call) \
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
            callee = "super"
        else:
            callee = dotted_name(func) or ""
            if not callee or callee.endswith(".__init__"):
                continue  # `Base.__init__(self, **kwargs)`: its first argument is not one of the callee's
        explicit = tuple(k.arg for k in node.keywords if k.arg is not None)
        positional = sum(1 for a in node.args if not isinstance(a, ast.Starred))
        out.append((callee, explicit, positional))
    return tuple(dict.fromkeys(out))


def _asserts(init: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The conditions of the constructor's assertions, ``and`` split."""
    tests: list[ast.expr] = []
    for node in ast.walk(init):
        if isinstance(node, ast.Assert):
            stack = [node.test]
            while stack:
                test = stack.pop()
                if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
                    stack.extend(test.values)
                else:
                    tests.append(test)
    return tests


def _pinned(init: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str | None) -> tuple[tuple[str, Literal], ...]:
    out: list[tuple[str, Literal]] = []
    for test in _asserts(init):
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            continue
        for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            value = _literal(other)
            name = _pinned_name(side, kwargs)
            if value is not None and name is not None:
                out.append((name, value))
                break
    return tuple(dict.fromkeys(out))


def _pinned_name(node: ast.expr, kwargs: str | None) -> str | None:
    """``x`` of ``self.x``, ``kwargs["x"]``, ``kwargs.get("x")``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    if kwargs is None:
        return None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == kwargs \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == kwargs and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _asserted(init: ast.FunctionDef | ast.AsyncFunctionDef, optional: frozenset[str]) -> tuple[str, ...]:
    """The ``optional`` (``None``-default) parameters an assertion requires: ``assert p``,
    ``assert p is not None``, ``assert exists(p)`` (a one-argument predicate)."""
    if not optional:
        return ()
    out: list[str] = []
    for test in _asserts(init):
        subject: ast.expr | None = None
        if isinstance(test, ast.Name):
            subject = test
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
                and _is_none(test.comparators[0]):
            subject = test.left
        elif isinstance(test, ast.Call) and len(test.args) == 1 and not test.keywords:
            subject = test.args[0]
        if isinstance(subject, ast.Name) and subject.id in optional:
            out.append(subject.id)
    return tuple(dict.fromkeys(out))


#: Builtins whose argument is iterated.
_ITERATING = frozenset({"tuple", "list", "set", "len", "zip", "enumerate", "sorted", "reversed", "sum", "max", "min",
                        "map", "filter", "any", "all", "iter"})


def _kinds(func: ast.FunctionDef | ast.AsyncFunctionDef, params: frozenset[str]) -> dict[str, str]:
    """How an ``__init__`` body uses each of ``params`` (see :attr:`InitUses.kinds`), read
    through ``self.x = param`` too. A parameter passed on under its own name (``Block(flag=flag)``)
    or stored on ``self`` says nothing by itself; a flag is tested for truth and used no other way."""
    if not params:
        return {}
    owner = func.args.args[0].arg if func.args.args else "self"
    parents: dict[int, ast.AST] = {}
    aliases: dict[str, str] = {}  # self.attr -> param
    for node in ast.walk(func):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == owner:
                    aliases.setdefault(target.attr, node.value.id)

    def param_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in params:
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
                and node.value.id == owner:
            return aliases.get(node.attr)
        return None

    def tested(node: ast.AST) -> bool:  # the value only decides a branch (through `not`, `and`, `or`)
        parent = parents.get(id(node))
        while isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
            node, parent = parent, parents.get(id(parent))
        return isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and node is parent.test

    kinds: dict[str, set[str]] = {}
    sizes: dict[str, int] = {}
    for node in ast.walk(func):
        name = param_of(node)
        if name is None:
            continue
        parent = parents.get(id(node))
        kind = "other"
        if tested(node):
            kind = "flag"
        elif isinstance(parent, ast.Assign) and parent.value is node:
            targets = parent.targets
            if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)) \
                    and all(isinstance(e, (ast.Name, ast.Attribute)) for e in targets[0].elts):
                kind = "unpack"
                sizes[name] = max(sizes.get(name, 0), len(targets[0].elts))
            elif all(isinstance(t, ast.Attribute) for t in targets):
                kind = "stored"
        elif isinstance(parent, ast.keyword) and parent.arg == name:
            kind = "stored"
        elif isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.slice, ast.Constant) \
                and type(parent.slice.value) is int and parent.slice.value >= 0:
            kind = "index"
            sizes.setdefault(name, 0)
            sizes[name] = max(sizes[name], parent.slice.value + 1)
        elif isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
            kind = "iter"
        elif isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name) \
                and parent.func.id in _ITERATING:  # `tuple(shifts)`; a splat (`nn.Linear(*pair)`) says no length
            kind = "iter"
        kinds.setdefault(name, set()).add(kind)
    uses: dict[str, str] = {}
    for name, found in kinds.items():
        if "unpack" in found:
            uses[name] = f"unpack:{sizes[name]}"
        elif "index" in found:
            uses[name] = f"index:{sizes[name]}"
        elif "iter" in found:
            uses[name] = "iter"
        elif "flag" in found and found <= {"flag", "stored"}:
            uses[name] = "flag"
    return uses
