"""Import a notebook (or a script) without running its work: the plan of
:mod:`fxscope.project.toplevel`, carried out in a job's child process.

``run`` statements (imports, definitions, optional-import ``try`` blocks) run as Python runs them;
an import that fails fails the module (FXS402, as for any file). Assignments are evaluated by
:class:`Evaluator`: literals, names already set, attributes, subscripts, arithmetic and
comparisons, and calls of constructors fxscope makes on its own (configuration classes:
dataclasses, named tuples, ``*Config`` and ``*Args`` classes, transformers configs;
``torch.device``, ``torch.Size``; containers, ``functools.partial``, namespaces; ``math``
functions; ``torch.cuda.is_available()``; an ``argparse`` parser built as written and parsed
from an empty command line, :mod:`fxscope.job.safe_argparse`), and ``torch.fx.wrap("name")``
when the name it is called by is ``torch.fx.wrap`` itself. A model (an ``nn.Module``) is never
built there: fxscope builds classes itself, on the meta device.

The evaluator runs none of the workspace's own code, told by what code a class or function
defines, not by names: no function or method of the workspace; no special method, property,
descriptor, ``__getattr__`` or ``__missing__`` of a workspace object (its attributes are read
from its ``__dict__`` and its class's); a workspace configuration class only when its
construction runs code ``dataclasses`` or ``namedtuple`` generated; no callable but safe builtins
(``len``, ``str.lower``) handed to a builtin. Work is bounded by its result, estimated first: an
integer of more than :data:`_MAX_BITS` bits, a sequence of more than :data:`_MAX_ITEMS` items, a
builtin or comparison visiting more than :data:`_MAX_VISITS` elements is refused. A statement
that would rebind a module attribute the import set (``__name__``, ``__spec__``, ...) is skipped.

Every other statement is skipped, and so is an assignment the evaluator refuses or whose
constructor raises; a name a skipped statement binds is removed from the module (a module, class
or function it names is kept: ``torch.manual_seed(0)`` does not unbind ``torch``). What was
skipped is in the module's ``__fxscope_skipped__``.

Example::

    module = load_notebook("/ws/nb/model.ipynb", "nb/model.ipynb")
    module.Net                     # defined; the training loop below it never ran
    module.__fxscope_skipped__     # {"loader": Skipped(line=12, reason="a call of `DataLoader`"), ...}
"""

from __future__ import annotations
import __future__

import abc
import argparse
import ast
import builtins
import collections
import copy
import dataclasses
import enum
import functools
import importlib.util
import inspect
import math
import operator
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fxscope.project.notebooks import Notebook, NotebookError, notebook_tree, read_notebook
from fxscope.project.toplevel import Step, plan, protected_name
from fxscope.project.work import TopLevel
from fxscope.job.module_patches import missing_attribute, patched_attributes, refusal
from fxscope.job.overlay import OverlayLoader, is_user_path, register_source
from fxscope.job.safe_argparse import (ParserRefused, call_parser_class, call_parser_method, is_parser_class,
                                          is_parser_method)

__all__ = ["Evaluator", "NotAllowed", "Skipped", "load_notebook", "notebook_of", "run_safely", "run_script",
           "skipped_of"]

#: The module attribute holding what was skipped (name -> :class:`Skipped`).
SKIPPED = "__fxscope_skipped__"
#: The module attribute holding the notebook a module was made from.
NOTEBOOK = "__fxscope_notebook__"
#: The module attribute holding the module's statements (what :func:`run_safely` ran).
TREE = "__fxscope_tree__"

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                                            ast.Invert: operator.invert}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
#: Functions (not classes) an assignment may call, by identity.
_FUNCTIONS: tuple[Any, ...] = (dict, list, tuple, set, frozenset, range, slice, int, float, str, bool, complex, bytes,
                               bytearray,
                               min, max, abs, round, len, sorted, reversed, enumerate, zip, divmod, pow, sum, any, all,
                               functools.partial, types.SimpleNamespace, collections.OrderedDict,
                               collections.namedtuple, collections.defaultdict)
#: Of those, the ones that only keep what they are given (a callable argument is stored, never called).
_KEEPING: tuple[Any, ...] = (functools.partial, types.SimpleNamespace, collections.namedtuple)
#: Callables that may be handed to a builtin (``sorted(xs, key=len)``, ``defaultdict(list)``).
_SAFE_CALLABLES: tuple[Any, ...] = (len, abs, str, int, float, bool, complex, ord, chr, round, hash, repr, tuple, list,
                                    dict, set, frozenset, sorted, min, max, sum)
#: Types whose values hold nothing of the workspace (containers are walked).
_SCALARS = (type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis))
_CONTAINERS = (list, tuple, set, frozenset, dict, collections.OrderedDict)
#: Read-only torch queries an assignment may call (``device = "cuda" if torch.cuda.is_available() else "cpu"``).
_TORCH_QUERIES = ("torch.cuda.is_available", "torch.cuda.device_count", "torch.backends.mps.is_available",
                  "torch.get_default_dtype", "torch.cuda.is_bf16_supported")
#: ``math`` functions whose cost grows with their integer arguments: bounded separately.
_MATH_GROWING = frozenset({"factorial", "comb", "perm", "prod", "lcm"})
_CONFIG_SUFFIXES = ("Config", "Configuration", "Args", "Arguments", "Params", "Parameters", "Settings", "Options",
                    "HParams", "Hparams", "Hyperparameters")
#: Bounds on the work of one statement: items of a container it builds, bits of an integer it
#: computes, elements a builtin or a comparison may visit (``"x" * 10**9``, ``x = x ** 4096``
#: repeated, ``max`` over a nested list of lists are not configurations).
_MAX_ITEMS = 1_000_000
_MAX_BITS = 1 << 16
_MAX_VISITS = 1_000_000
#: Construction methods a dataclass or named tuple generates (code compiled from ``<string>``).
_CONSTRUCTION = ("__new__", "__init__", "__post_init__", "__init_subclass__", "__setattr__", "__call__")


#: Functions that build a container as large as their argument says.
_MATERIALISING: tuple[Any, ...] = (list, tuple, set, frozenset, sorted, bytes, bytearray, dict, enumerate, zip,
                                   reversed, collections.OrderedDict, collections.defaultdict)


def _too_many(value: Any) -> bool:
    """An argument that would make a container larger than :data:`_MAX_ITEMS`."""
    if type(value) is int:
        return value > _MAX_ITEMS
    return type(value) is range and len(value) > _MAX_ITEMS


class NotAllowed(Exception):
    """An assignment computes its value with something fxscope does not run (the message says what)."""


@dataclass(frozen=True)
class Skipped:
    """A top-level statement that did not run: its 1-based range, why, and its file."""

    line: int
    column: int
    end_line: int
    end_column: int
    reason: str
    file: str = ""


def _module_dict(name: str) -> dict[str, Any] | None:
    module = sys.modules.get(name)
    return vars(module) if issubclass(type(module), types.ModuleType) else None


def _one_of(kind: Any, kinds: Sequence[Any]) -> bool:
    """``kind in kinds`` by identity (a metaclass's own ``__eq__`` is not run)."""
    return any(kind is k for k in kinds)


def _torch_attr(dotted: str) -> Any:
    """The object ``dotted`` names in the torch that is imported (None when not imported)."""
    obj: Any = sys.modules.get("torch")
    for part in dotted.split(".")[1:]:
        if obj is None:
            return None
        obj = inspect.getattr_static(obj, part, None)
    return obj


def _is_torch_module_class(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(type(obj), type) and issubclass(obj, torch.nn.Module)


_TRUSTED_METACLASSES: tuple[type, ...] = (type, abc.ABCMeta, enum.EnumMeta)
#: Descriptors of the language itself (their ``__get__`` is C code).
_BUILTIN_DESCRIPTORS: tuple[type, ...] = (types.FunctionType, classmethod, staticmethod, property,
                                          types.MemberDescriptorType, types.GetSetDescriptorType,
                                          types.WrapperDescriptorType, types.MethodDescriptorType,
                                          types.ClassMethodDescriptorType, types.BuiltinFunctionType)
#: Classmethod names that fetch rather than configure (``from_pretrained``).
_FETCHING = ("pretrained", "load", "download", "hub", "url", "file")


class _Workspace:
    """Tells the workspace's code from the rest, by what runs, not by names: a function whose code
    was compiled from a workspace file, or from no file (``exec`` of a string); a class that
    defines one, or was defined by the module being run, or whose module is a workspace file."""

    def __init__(self, namespace: Mapping[str, Any], is_user_file: Callable[[str], bool] | None) -> None:
        self.module = namespace.get("__name__")
        self.is_user_file = is_user_file or is_user_path
        self._classes: dict[int, tuple[type, bool]] = {}  # by id: a class's own __hash__ is not run

    def code(self, func: Any) -> bool:
        """Whether calling ``func`` (a Python function) runs workspace code."""
        code = func.__code__ if type(func) is types.FunctionType else None
        if code is None:
            return False
        filename = code.co_filename
        return filename.startswith("<") or self.is_user_file(os.path.abspath(filename))

    def cls(self, cls: type) -> bool:
        """Whether ``cls`` (or its metaclass) is the workspace's (see the class docstring)."""
        known = self._classes.get(id(cls))
        if known is None:
            self._classes[id(cls)] = (cls, True)  # while classifying: a class reached again is the workspace's
            known = self._classes[id(cls)] = (cls, self._classify(cls))
        return known[1]

    def _classify(self, cls: type) -> bool:
        meta = type(cls)
        if not _one_of(meta, _TRUSTED_METACLASSES) and not self._plain_metaclass(meta):
            return True
        for klass in _mro(cls):
            attrs = vars(klass)
            name = attrs.get("__module__")
            if type(name) is not str:  # a C type: where its name says (type's own getter, C code)
                name = _TYPE_MODULE.__get__(klass)
            if type(name) is not str or name == self.module:
                return True
            module = _module_dict(name)
            if module is None and name != "builtins":
                return True  # a module that is not imported: made by exec, or a faked name
            file = module.get("__file__") if module is not None else None
            if type(file) is str and self.is_user_file(os.path.abspath(file)):
                return True
            for value in attrs.values():
                inner = value.__func__ if _one_of(type(value), (classmethod, staticmethod)) else value
                if type(inner) is property:
                    inner = inner.fget
                if type(inner) is types.FunctionType and self.code(inner) and not _generated(klass, inner):
                    return True
                if not _one_of(type(value), _BUILTIN_DESCRIPTORS) and self.cls(type(value)) \
                        and hasattr(type(value), "__get__"):
                    return True  # a descriptor of the workspace's
        return False

    def _plain_metaclass(self, meta: type) -> bool:
        """A library metaclass (torch's, typing's): defines no workspace code."""
        return not any(type(v) is types.FunctionType and self.code(v)
                       for klass in _mro(meta) for v in vars(klass).values())

    def object(self, value: Any) -> bool:
        """Whether using ``value`` (its operators, attributes, length, truth) may run workspace code."""
        return self.cls(value) if issubclass(type(value), type) else self.cls(type(value))


def _generated(klass: type, func: types.FunctionType) -> bool:
    """A method a dataclass or named tuple generated for ``klass`` (compiled from ``<string>``)."""
    if func.__code__.co_filename != "<string>":
        return False
    attrs = vars(klass)
    return "__dataclass_fields__" in attrs or ("_fields" in attrs and issubclass(klass, tuple))


def _is_config_class(cls: type) -> bool:
    """A class whose construction only records settings: a dataclass, a named tuple, a class named
    like a configuration, a transformers ``PretrainedConfig``, an enum, ``torch.device`` and
    ``torch.Size`` (never a tensor or a module)."""
    torch = sys.modules.get("torch")
    if _is_torch_module_class(cls) or (torch is not None and issubclass(cls, torch.Tensor)):
        return False
    if torch is not None and _one_of(cls, (torch.device, torch.Size)):
        return True
    mro = _mro(cls)
    if any("__dataclass_fields__" in vars(k) for k in mro) or (issubclass(cls, tuple) and any("_fields" in vars(k)
                                                                                            for k in mro)):
        return True
    if issubclass(cls, enum.Enum) or vars(type)["__name__"].__get__(cls).endswith(_CONFIG_SUFFIXES):
        return True
    configs = _module_dict("transformers.configuration_utils")
    base = configs.get("PretrainedConfig") if configs is not None else None
    return isinstance(base, type) and issubclass(cls, base)


class Evaluator:
    """Evaluates the value of an assignment in ``namespace`` (see the module docstring); raises
    :class:`NotAllowed` for anything else and :class:`NameError` for a name not set.
    ``is_user_file`` tells workspace files (default: the worker's)."""

    def __init__(self, namespace: Mapping[str, Any], is_user_file: Callable[[str], bool] | None = None) -> None:
        self.namespace = namespace
        self.workspace = _Workspace(namespace, is_user_file)

    def value(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NotAllowed(f"`{_text(node)}` is computed by code fxscope does not run")
        return method(node)

    # -- what values may meet -------------------------------------------------------------------

    def inert(self, values: Sequence[Any], node: ast.AST, callables: bool = True) -> None:
        """Refuse values whose use would run workspace code (an object of a workspace class, nested
        anywhere in containers) or visit more than :data:`_MAX_VISITS` elements; with
        ``callables=False``, also any callable but :data:`_SAFE_CALLABLES` and methods of plain
        data at the top level (a builtin would call it)."""
        budget = _MAX_VISITS
        todo = list(values)
        if not callables:
            for value in values:
                if callable(value) and not self._safe_callable(value):
                    raise NotAllowed(f"`{_text(node)}` hands a callable to a builtin, which would call it")
        seen: set[int] = set()
        while todo:
            value = todo.pop()
            kind = type(value)
            if _one_of(kind, _SCALARS):
                try:
                    budget -= len(value) if _one_of(kind, (range, str, bytes)) else 1
                except OverflowError:  # range(10**20)
                    budget = -1
            elif _one_of(kind, _CONTAINERS) or kind is collections.defaultdict:
                budget -= len(value) + 1
                if id(value) in seen and budget > 0:
                    continue  # counted again (a builtin visits it again), walked once
                seen.add(id(value))
                todo.extend(value.items() if issubclass(kind, dict) else value)
                if kind is collections.defaultdict and not self._safe_callable(value.default_factory):
                    raise NotAllowed(f"`{_text(node)}` uses a `defaultdict` whose factory is the workspace's")
            elif _one_of(kind, (types.SimpleNamespace, argparse.Namespace)):
                budget -= 1
                todo.extend(vars(value).values())
            elif self.workspace.object(value):
                raise NotAllowed(f"`{_text(node)}` would run `{kind.__name__}`'s own code")
            else:
                budget -= 1
            if budget < 0:
                raise NotAllowed(f"`{_text(node)}` is too large")

    def _safe_callable(self, value: Any) -> bool:
        if value is None or any(value is c for c in _SAFE_CALLABLES):
            return True
        if type(value) is types.BuiltinMethodType and _one_of(type(value.__self__), (*_SCALARS, *_CONTAINERS)):
            return True  # str.upper of a string, d.get of a dict (walked as an argument)
        if type(value) is types.MethodDescriptorType and _one_of(value.__objclass__, (*_SCALARS, *_CONTAINERS)):
            return True  # str.lower
        name = _math_function(value)
        return name is not None and name not in _MATH_GROWING

    # -- nodes ----------------------------------------------------------------------------------

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.namespace:
            return self.namespace[node.id]
        if hasattr(builtins, node.id):
            return getattr(builtins, node.id)
        raise NameError(f"name '{node.id}' is not defined", name=node.id)

    def _Attribute(self, node: ast.Attribute) -> Any:
        if node.attr.startswith("__"):
            raise NotAllowed(f"`{_text(node)}` reads a private attribute")
        obj = self.value(node.value)
        if type(obj) is types.ModuleType:
            attrs = vars(obj)
            if node.attr in attrs:
                return attrs[node.attr]
            file = attrs.get("__file__")
            if attrs.get("__name__") == self.workspace.module or type(file) is not str \
                    or self.workspace.is_user_file(os.path.abspath(file)):
                raise NotAllowed(f"`{_text(node)}` is not set in a workspace module")  # its __getattr__ is not run
            return getattr(obj, node.attr)  # a library module's lazy attribute
        if self.workspace.object(obj):
            return _static_attribute(obj, node.attr, node, self.workspace)
        return getattr(obj, node.attr)

    def _Subscript(self, node: ast.Subscript) -> Any:
        container = self.value(node.value)
        if not _one_of(type(container), (dict, list, tuple, str, range, bytes, collections.OrderedDict)):
            raise NotAllowed(f"`{_text(node)}` indexes a `{type(container).__name__}`")
        key = self.value(node.slice)
        self.inert([key], node)
        return container[key]

    def _Slice(self, node: ast.Slice) -> Any:
        parts = [None if part is None else self.value(part) for part in (node.lower, node.upper, node.step)]
        self.inert(parts, node)
        return slice(*parts)

    def _Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self._items(node.elts))

    def _List(self, node: ast.List) -> Any:
        return list(self._items(node.elts))

    def _Set(self, node: ast.Set) -> Any:
        items = self._items(node.elts)
        self.inert(items, node)  # hashing
        return set(items)

    def _items(self, elts: list[ast.expr]) -> list[Any]:
        if any(isinstance(e, ast.Starred) for e in elts):
            raise NotAllowed("a starred item")
        return [self.value(e) for e in elts]

    def _Dict(self, node: ast.Dict) -> Any:
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                mapping = self.value(value)
                if type(mapping) is not dict:
                    raise NotAllowed("`**` of something that is not a dict")
                out.update(mapping)
            else:
                found = self.value(key)
                self.inert([found], node)  # hashing
                out[found] = self.value(value)
        return out

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.value(node.operand)
        self.inert([operand], node)
        return _UNARY[type(node.op)](operand)

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        return self.operate(node.op, left, right, node)

    def operate(self, op: ast.operator, left: Any, right: Any, node: ast.AST) -> Any:
        """``left op right`` when its result is bounded (see :data:`_MAX_BITS`, :data:`_MAX_ITEMS`)."""
        sequences = (list, tuple, str, bytes)
        copies = isinstance(op, (ast.Add, ast.Mult)) and all(_one_of(type(v), (*sequences, int, bool))
                                                              for v in (left, right))
        if not copies:  # `[grid] * 1000` copies references: it never looks into `grid`
            self.inert([left, right], node)
        _bounded(op, left, right, node)
        return _BINOPS[type(op)](left, right)

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for item in node.values:
            result = self.value(item)
            self.inert([result], node)  # its truth
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _Compare(self, node: ast.Compare) -> Any:
        left = self.value(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.value(comparator)
            self.inert([left, right], node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        test = self.value(node.test)
        self.inert([test], node)
        return self.value(node.body) if test else self.value(node.orelse)

    def _JoinedStr(self, node: ast.JoinedStr) -> Any:
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, 115, 114):
                    raise NotAllowed("a formatted f-string field")
                item = self.value(value.value)
                if not _one_of(type(item), (str, int, float, bool, type(None))):
                    raise NotAllowed("an f-string of something that is not a literal")
                parts.append(repr(item) if value.conversion == 114 else str(item))
            else:
                parts.append(str(self.value(value)))
        return "".join(parts)

    def _Call(self, node: ast.Call) -> Any:
        func = self.value(node.func)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise NotAllowed("a call with `*args`")
            args.append(self.value(arg))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                mapping = self.value(keyword.value)
                if type(mapping) is not dict or not all(type(k) is str for k in mapping):
                    raise NotAllowed("`**` of something that is not a dict of names")
                kwargs.update(mapping)
            else:
                kwargs[keyword.arg] = self.value(keyword.value)
        if is_parser_class(func) or is_parser_method(func):
            try:
                return (call_parser_class if is_parser_class(func) else call_parser_method)(func, args, kwargs)
            except ParserRefused as e:
                raise NotAllowed(str(e)) from None
        self._check_call(func, args, kwargs, node)
        return func(*args, **kwargs)

    def _check_call(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> None:
        """Refuse a call that would run workspace code, build a model, or do unbounded work."""
        values = [*args, *kwargs.values()]
        if any(func is f for f in _FUNCTIONS):
            if any(func is f for f in _MATERIALISING) and any(_too_many(a) for a in values):
                raise NotAllowed(f"`{_text(node)}` is too large")
            if func is pow or func is divmod:
                if len(args) == 2 and not kwargs:
                    self.inert(args, node)
                    _bounded(ast.Pow() if func is pow else ast.FloorDiv(), args[0], args[1], node)
            if func is functools.partial:
                self.inert(values[1:], node)
                return  # keeps its function; calling the partial is another call (refused)
            keeps = any(func is f for f in _KEEPING)
            self.inert(values, node, callables=keeps)
            return
        if issubclass(type(func), type):
            if not _one_of(type(func), _TRUSTED_METACLASSES) and self.workspace.cls(type(func)):
                raise NotAllowed(f"`{_text(node.func)}` is built by a metaclass of the workspace's")
            if _is_torch_module_class(func):
                raise NotAllowed(f"`{_text(node)}` builds a model (fxscope builds classes itself)")
            if not _is_config_class(func):
                raise NotAllowed(f"`{_text(node.func)}` is not a constructor fxscope calls on its own")
            if self.workspace.cls(func):
                self._config_construction(func, node)
                self.inert(values, node) if not _dataclass_only(func) else self._stored(values, node)
            else:
                self.inert(values, node)
            return
        math_name = _math_function(func)
        if math_name is not None:
            self.inert(values, node, callables=False)
            if math_name in _MATH_GROWING and any(type(v) is int and v.bit_length() > 12 for v in values):
                raise NotAllowed(f"`{_text(node)}` is too large")
            if math_name == "prod" and (not values or not _one_of(type(values[0]), (list, tuple, range))):
                raise NotAllowed(f"`{_text(node)}` multiplies something that is not a sequence")
            if math_name == "prod" and sum(_bits(v) for v in values[0]) > _MAX_BITS:
                raise NotAllowed(f"`{_text(node)}` is too large")
            return
        if any(func is _torch_attr(name) for name in _TORCH_QUERIES) and not values:
            return
        owner: Any = func.__self__ if type(func) is types.MethodType else None
        if owner is not None and issubclass(type(owner), type) \
                and not self.workspace.cls(owner) and _is_config_class(owner) \
                and not any(word in func.__name__.lower() for word in _FETCHING):
            self.inert(values, node, callables=False)
            return  # a library configuration's classmethod: GPT2Config.from_dict({...})
        raise NotAllowed(f"a call of `{_text(node.func)}`")

    def _stored(self, values: Sequence[Any], node: ast.AST) -> None:
        """Arguments a dataclass's generated ``__init__`` only stores: sized, not used."""
        for value in values:
            if _one_of(type(value), _CONTAINERS):
                self.inert([value], node)

    def _config_construction(self, cls: type, node: ast.Call) -> None:
        """Refuse building a workspace configuration class whose construction runs its own code
        (an ``__init__``, ``__post_init__``, ``__new__`` it wrote; a ``default_factory`` of the
        workspace's)."""
        for klass in _mro(cls):
            if _one_of(klass, _PLAIN_BASES):
                continue
            if not self.workspace.cls(klass):  # its __init__ may call what the workspace's subclass overrides
                raise NotAllowed(f"building `{_text(node.func)}` runs `{klass.__name__}`'s constructor on a class of "
                                 "the workspace's")
            attrs = vars(klass)
            for name in _CONSTRUCTION:
                func = attrs.get(name)
                plain = type(func) is types.FunctionType
                if func is not None and (not plain or self.workspace.code(func)) and not (plain and _generated(klass, func)):
                    raise NotAllowed(f"building `{_text(node.func)}` runs its own `{name}`")
            for field in (attrs.get("__dataclass_fields__") or {}).values():
                factory = field.default_factory
                if factory is not dataclasses.MISSING and not self._safe_callable(factory):
                    raise NotAllowed(f"building `{_text(node.func)}` calls the `default_factory` of `{field.name}`")


def _math_function(value: Any) -> str | None:
    """The name of a function of the ``math`` module, if ``value`` is one (by identity)."""
    if type(value) is not types.BuiltinFunctionType or value.__self__ is not math:
        return None
    name: str = value.__name__
    return name if vars(math).get(name) is value else None


def _dataclass_only(cls: type) -> bool:
    return any("__dataclass_fields__" in vars(k) for k in _mro(cls)) or issubclass(cls, tuple)


def _bits(value: Any) -> int:
    return value.bit_length() if type(value) is int else 64


def _bounded(op: ast.operator, left: Any, right: Any, node: ast.AST) -> None:
    """Refuse ``left op right`` when its result would exceed :data:`_MAX_BITS` (integers) or
    :data:`_MAX_ITEMS` (sequences), estimated before computing it."""
    too_large = NotAllowed(f"`{_text(node)}` is too large")
    ints = _one_of(type(left), (int, bool)) and _one_of(type(right), (int, bool))
    if isinstance(op, ast.Pow) and ints:
        if right > 0 and abs(left) > 1 and right * max(abs(left).bit_length(), 1) > _MAX_BITS:
            raise too_large
    elif isinstance(op, ast.Pow) and type(right) in (int, float) and abs(right) > _MAX_BITS:
        raise too_large
    elif isinstance(op, ast.LShift) and ints:
        if right > 0 and left and left.bit_length() + right > _MAX_BITS:
            raise too_large
    elif isinstance(op, ast.Mult):
        if ints and left.bit_length() + right.bit_length() > _MAX_BITS:
            raise too_large
        sequences = (str, bytes, list, tuple, bytearray)
        sequence, count = (left, right) if _one_of(type(left), sequences) else (right, left)
        if _one_of(type(sequence), sequences) and _one_of(type(count), (int, bool)) \
                and count * max(len(sequence), 1) > _MAX_ITEMS:
            raise too_large
    elif isinstance(op, ast.Add) and _one_of(type(left), (str, bytes, list, tuple)) and type(left) is type(right):
        if len(left) + len(right) > _MAX_ITEMS:
            raise too_large


def _static_attribute(obj: Any, name: str, node: ast.AST, workspace: _Workspace) -> Any:
    """``obj.name`` for an object (or class) of the workspace, without running any of its code:
    a value stored in it or its class, a method (bound, not called), a library's own property
    (``Mode.TRAIN.value``); never a property of the workspace's, another descriptor,
    ``__getattr__`` or ``__getattribute__``."""
    is_class = issubclass(type(obj), type)
    mro = _mro(obj if is_class else type(obj))
    for klass in mro:
        attrs = vars(klass)
        if any(hook in attrs for hook in ("__getattribute__", "__getattr__")) and klass is not object:
            raise NotAllowed(f"`{_text(node)}` reads an object that computes its attributes")
    found: Any = _MISSING
    for klass in mro:
        if name in vars(klass):
            found = vars(klass)[name]
            break
    data_descriptor = found is not _MISSING and any("__set__" in vars(k) or "__delete__" in vars(k)
                                                    for k in _mro(type(found)))
    if not is_class and not data_descriptor:
        try:
            own = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            own = None
        if type(own) is dict and name in own:
            return own[name]
    if found is _MISSING:
        raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
    if type(found) is types.MemberDescriptorType and not is_class:
        return found.__get__(obj, type(obj))  # a __slots__ field
    if type(found) is classmethod:
        return types.MethodType(found.__func__, obj if is_class else type(obj))
    if type(found) is staticmethod:
        return found.__func__
    if type(found) is types.FunctionType:
        return found if is_class else types.MethodType(found, obj)
    if type(found) is property and is_class:
        return found
    if not is_class and _one_of(type(found), _LIBRARY_PROPERTIES):
        getters = [getattr(found, part, None) for part in ("fget", "func")]
        if not any(type(g) is not types.FunctionType or workspace.code(g) for g in getters if g is not None):
            return found.__get__(obj, type(obj))  # a library's getter: enum members' .value and .name
    if any("__get__" in vars(k) for k in _mro(type(found))):
        raise NotAllowed(f"`{_text(node)}` is a property or descriptor (its code is not run)")
    return found


_MISSING = object()
#: Bases a workspace configuration class may have besides its own (their construction calls nothing it overrides).
_PLAIN_BASES: tuple[type, ...] = (object, tuple, enum.Enum, enum.IntEnum, enum.Flag, enum.IntFlag, int, str, abc.ABC,
                                 getattr(enum, "ReprEnum", object), getattr(enum, "StrEnum", object))
_TYPE_MODULE: Any = vars(type)["__module__"]
_TYPE_MRO: Any = vars(type)["__mro__"]
#: Property types whose getter, when a library's own function, is what runs on a read.
_LIBRARY_PROPERTIES: tuple[type, ...] = (property, types.DynamicClassAttribute, getattr(enum, "property", property),
                                         functools.cached_property)


def _mro(cls: type) -> tuple[type, ...]:
    """``cls.__mro__`` read by type's own getter (a metaclass's descriptor is not run)."""
    found: tuple[type, ...] = _TYPE_MRO.__get__(cls)
    return found


def _text(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - only for a message
        return type(node).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _assign(stmt: ast.stmt, namespace: dict[str, Any], evaluator: Evaluator) -> None:
    """Carry out an assignment the evaluator allows (raises NotAllowed, NameError or what a
    constructor raises)."""
    if isinstance(stmt, ast.Expr):  # parser.add_argument("--dim", type=int, default=64)
        evaluator.value(stmt.value)
        return
    if isinstance(stmt, ast.AugAssign):  # x += 1, cfg.depth *= 2
        load = copy.copy(stmt.target)
        load.ctx = ast.Load()
        current = evaluator.value(load)
        _bind(stmt.target, evaluator.operate(stmt.op, current, evaluator.value(stmt.value), stmt), namespace,
              evaluator)
        return
    targets: Sequence[ast.expr]
    if isinstance(stmt, ast.AnnAssign):
        assert stmt.value is not None
        targets, value = [stmt.target], evaluator.value(stmt.value)
    else:
        assert isinstance(stmt, ast.Assign)
        targets, value = stmt.targets, evaluator.value(stmt.value)
    for target in targets:
        _bind(target, value, namespace, evaluator)


def _bind(target: ast.expr, value: Any, namespace: dict[str, Any], evaluator: Evaluator) -> None:
    if isinstance(target, ast.Name):
        if protected_name(target.id):
            raise NotAllowed(f"it rebinds `{target.id}`, which the import set")
        namespace[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = list(value) if _one_of(type(value), (tuple, list)) else None
        if items is None or len(items) != len(target.elts):
            raise NotAllowed("an unpacking of something that is not a sequence of that length")
        for element, item in zip(target.elts, items, strict=True):
            _bind(element, item, namespace, evaluator)
    elif isinstance(target, ast.Attribute):
        obj = evaluator.value(target.value)
        if target.attr.startswith("__"):
            raise NotAllowed(f"`{_text(target)}` sets a private attribute")
        if isinstance(obj, types.ModuleType):  # f.softargmax = f.softmax: a patch of an imported module
            why = refusal(obj)
            if why is not None or vars(obj).get("__name__") == namespace.get("__name__"):
                raise NotAllowed(f"`{_text(target)}` {why or 'changes the module being run'}")
            if evaluator.workspace.object(obj):
                _check_setattr(obj, target)
            setattr(obj, target.attr, value)
            return
        if issubclass(type(obj), type):  # Net.forward = forward, on a class of the module itself
            if not (_one_of(type(obj), _TRUSTED_METACLASSES) and vars(obj).get("__module__") == namespace.get("__name__")):
                raise NotAllowed(f"`{_text(target)}` changes a class fxscope did not define here")
            type.__setattr__(obj, target.attr, value)
            return
        if not _mutable_value(obj):
            raise NotAllowed(f"`{_text(target)}` changes a `{type(obj).__name__}`")
        if evaluator.workspace.object(obj):
            _check_setattr(obj, target)
        setattr(obj, target.attr, value)
    elif isinstance(target, ast.Subscript):
        obj = evaluator.value(target.value)
        if not _one_of(type(obj), (dict, list)):
            raise NotAllowed(f"`{_text(target)}` changes a `{type(obj).__name__}`")
        key = evaluator.value(target.slice)
        evaluator.inert([key], target)
        obj[key] = value
    else:
        raise NotAllowed("an assignment target fxscope does not set")


def _check_setattr(obj: Any, target: ast.Attribute) -> None:
    """Refuse setting an attribute of a workspace object when its own code would run: a
    ``__setattr__`` it wrote, a property setter or another descriptor."""
    for klass in _mro(type(obj)):
        attrs = vars(klass)
        hook = attrs.get("__setattr__")
        if klass is not object and hook is not None and not (type(hook) is types.FunctionType
                                                              and _generated(klass, hook)):
            raise NotAllowed(f"`{_text(target)}` runs `{type(obj).__name__}.__setattr__`")
        found = attrs.get(target.attr, _MISSING)
        if found is not _MISSING:
            if any("__set__" in vars(k) for k in _mro(type(found))) and type(found) is not types.MemberDescriptorType:
                raise NotAllowed(f"`{_text(target)}` runs a property setter or descriptor")
            break


def _mutable_value(obj: Any) -> bool:
    """A configuration object an assignment may change (``cfg.depth = 2``)."""
    if _one_of(type(obj), (types.SimpleNamespace, argparse.Namespace, dict)):
        return True
    if not _one_of(type(type(obj)), _TRUSTED_METACLASSES):
        return False  # a metaclass of its own: nothing about the object is read
    return not issubclass(type(obj), (type, types.ModuleType)) and _is_config_class(type(obj))


def _definition(value: Any) -> bool:
    """Modules, classes and functions: what a skipped statement never unbinds (``torch.manual_seed(0)``
    does not make ``torch`` unknown)."""
    return issubclass(type(value), (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                                    types.MethodType, functools.partial))


def _is_fx_wrap(func: Any) -> bool:
    """``torch.fx.wrap`` itself (whatever name it was reached by)."""
    fx = _module_dict("torch.fx")
    return fx is not None and func is fx.get("wrap")


def _wrap_candidate(stmt: ast.stmt) -> bool:
    """``<name>("literal")``: a call that is ``torch.fx.wrap`` when its name resolves to it."""
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and len(stmt.value.args) == 1
            and not stmt.value.keywords and isinstance(stmt.value.args[0], ast.Constant)
            and isinstance(stmt.value.args[0].value, str))


def _execute(stmt: ast.stmt, namespace: dict[str, Any], filename: str, flags: int) -> None:
    """Run one statement of a module's plan as Python runs it, in its ``namespace``."""
    code = compile(ast.Module([stmt], []), filename, "exec", flags=flags, dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - a statement the plan runs


def run_safely(tree: ast.Module, namespace: dict[str, Any], filename: str,
               magic_lines: frozenset[int] = frozenset(),
               is_user_file: Callable[[str], bool] | None = None, top: TopLevel | None = None) -> dict[str, Skipped]:
    """Run the plan of ``tree`` in ``namespace`` (a module's ``__dict__``); returns what was
    skipped, by the name it would have bound. An import that fails, and a definition that fails
    other than on a skipped name, raise as they would on import. ``is_user_file`` tells
    workspace files (default: the worker's); ``top``: the module's analysis (see
    :func:`~fxscope.project.toplevel.plan`)."""
    skipped: dict[str, Skipped] = {}
    evaluator = Evaluator(namespace, is_user_file)
    flags = 0  # the module's `from __future__ import ...`, for the statements after it

    def skip(step: Step, reason: str, cause: str | None = None) -> None:
        record = Skipped(step.line, step.column, step.end_line, step.end_column, reason, filename)
        for key in patched_attributes(tree.body[step.index], namespace):  # f.softargmax, as a class reads it
            skipped.setdefault(key, record)
        for name in step.names:
            if step.kind != "run" and name in namespace and _definition(namespace[name]):
                continue  # `torch.manual_seed(0)` leaves `torch` as it was
            if name == cause and name in skipped:
                continue  # `x = x ** 9`, `parser.add_argument(...)` after `x`, `parser` were refused: the first says why
            namespace.pop(name, None)
            skipped[name] = record

    for step in plan(tree, magic_lines, top):
        stmt = tree.body[step.index]
        if step.kind == "skip":
            skip(step, step.reason or "a statement fxscope does not run")
            continue
        if step.kind == "run":
            try:
                _execute(stmt, namespace, filename, flags)  # a statement of the plan's own
                flags |= _future_flags(stmt)
            except (NameError, AttributeError) as e:  # a name, or a module patch (`f.softargmax`), not set
                name = getattr(e, "name", None) if isinstance(e, NameError) else missing_attribute(e)
                if name not in skipped or isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    raise
                skip(step, _unset(name, skipped, " either"), name)
                continue
            for name in step.names:
                skipped.pop(name, None)
            continue
        try:
            if _wrap_candidate(stmt) and _is_fx_wrap(evaluator.value(stmt.value.func)):  # type: ignore[attr-defined]
                _execute(stmt, namespace, filename, flags)  # torch.fx.wrap("name") itself, at module level
                continue
            _assign(stmt, namespace, evaluator)
        except NameError as e:
            name = getattr(e, "name", None)
            reason = _unset(name, skipped) if name else str(e)
            skip(step, reason, name)
            continue
        except NotAllowed as e:
            skip(step, str(e))
            continue
        except Exception as e:  # noqa: BLE001 - a constructor that raises: the statement is skipped
            skip(step, f"it raised {type(e).__name__}: {_one_line(str(e))}")
            continue
        for name in (*step.names, *patched_attributes(stmt, namespace)):
            skipped.pop(name, None)
    return {name: record for name, record in skipped.items() if name not in namespace}


def _unset(name: str, skipped: Mapping[str, Skipped], either: str = "") -> str:
    """Why a statement that reads the unset ``name`` is skipped: with the first reason of the chain."""
    record = skipped.get(name)
    if record is None:
        return f"it uses `{name}`, which fxscope did not set{either}"
    if record.reason.startswith("it uses `"):
        return record.reason
    return f"it uses `{name}`, which fxscope did not set{either} ({record.reason})"


def _future_flags(stmt: ast.stmt) -> int:
    """The compiler flags of a ``from __future__ import ...`` statement (0 for any other)."""
    if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
        return 0
    features = (getattr(__future__, alias.name, None) for alias in stmt.names)
    return functools.reduce(operator.or_, (f.compiler_flag for f in features if f is not None), 0)


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class NotebookLoader(OverlayLoader):
    """Loads a notebook as a module through the safe executor: its bytes (or the editor's buffer)
    are what the cache hashes, its code cells what runs."""

    def exec_module(self, module: types.ModuleType) -> None:
        data = self.get_data(self.path)  # records the digest of what was read
        try:
            nb = read_notebook(data)
        except NotebookError as e:
            raise ImportError(f"{os.path.basename(self.path)}: {e}", path=self.path) from None
        parsed = notebook_tree(nb)  # a cell that does not parse is left out (discovery reports it)
        register_source(self.path, parsed.source)
        module.__dict__[NOTEBOOK] = nb
        module.__dict__[TREE] = parsed.tree
        module.__dict__[SKIPPED] = run_safely(parsed.tree, module.__dict__, self.path, nb.magic_lines)


def run_script(tree: ast.Module, module: types.ModuleType, path: str, top: TopLevel | None = None,
               is_user_file: Callable[[str], bool] | None = None) -> None:
    """Run a ``.py`` script's statements (:func:`fxscope.project.toplevel.is_script`) in
    ``module`` through the safe executor (``top``: its analysis; ``is_user_file``: see
    :func:`run_safely`)."""
    module.__dict__[TREE] = tree
    module.__dict__[SKIPPED] = run_safely(tree, module.__dict__, path, top=top, is_user_file=is_user_file)


def load_notebook(path: str, name: str) -> types.ModuleType:
    """Import the notebook at ``path`` (absolute) as module ``name`` (registered in
    ``sys.modules``), its directory first on ``sys.path`` as in Jupyter (once per process)."""
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(name, path, loader=NotebookLoader(name, path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def notebook_of(module: Any) -> Notebook | None:
    """The notebook a module was loaded from (None for any other module)."""
    nb = getattr(module, NOTEBOOK, None)
    return nb if isinstance(nb, Notebook) else None


def skipped_of(module: Any) -> dict[str, Skipped]:
    """What the safe executor skipped in ``module`` (empty for a module imported normally)."""
    found = getattr(module, SKIPPED, None)
    return found if isinstance(found, dict) else {}

