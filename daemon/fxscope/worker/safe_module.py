"""Import a notebook (or a script) without running its work: the plan of
:mod:`fxscope.project.toplevel`, carried out in a job's child process.

``run`` statements (imports, definitions, optional-import ``try`` blocks, ``torch.fx.wrap``) run
as Python runs them; an import that fails fails the module (FXS402, as for any file). Assignments
are evaluated by :class:`Evaluator`: literals, names already set, attributes, subscripts,
arithmetic and comparisons, and calls of constructors fxscope makes on its own (configuration
classes: dataclasses, named tuples, ``*Config`` and ``*Args`` classes, transformers configs;
``torch.device``, ``torch.Size``; containers, ``functools.partial``, namespaces;
``math`` functions; ``torch.cuda.is_available()``; an ``argparse`` parser built as written and
parsed from an empty command line, :mod:`fxscope.worker.safe_argparse`). A model (an
``nn.Module``) is never built there: fxscope builds classes itself, on the meta device. Every
other statement is skipped, and so is an assignment the evaluator refuses or whose constructor
raises; a name a skipped statement binds is removed from the module (a module, class or function it names is kept:
``torch.manual_seed(0)`` does not unbind ``torch``). What was skipped is in the module's
``__fxscope_skipped__``.

Example::

    module = load_notebook("/ws/nb/model.ipynb", "nb/model.ipynb")
    module.Net                     # defined; the training loop below it never ran
    module.__fxscope_skipped__     # {"loader": Skipped(line=12, reason="a call of `DataLoader`"), ...}
"""

from __future__ import annotations
import __future__

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
import operator
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fxscope.project.notebooks import Notebook, NotebookError, notebook_tree, read_notebook
from fxscope.project.toplevel import Step, plan
from fxscope.worker.overlay import OverlayLoader, register_source
from fxscope.worker.safe_argparse import ParserRefused, call_parser_method, is_parser_class, is_parser_method

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
#: Functions (not classes) an assignment may call.
_FUNCTIONS: tuple[Any, ...] = (dict, list, tuple, set, frozenset, range, slice, int, float, str, bool, complex, bytes,
                               bytearray,
                               min, max, abs, round, len, sorted, reversed, enumerate, zip, divmod, pow,
                               functools.partial, types.SimpleNamespace, collections.OrderedDict,
                               collections.namedtuple, collections.defaultdict)
#: Read-only torch queries an assignment may call (``device = "cuda" if torch.cuda.is_available() else "cpu"``).
_TORCH_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count", "torch.backends.mps.is_available",
                            "torch.get_default_dtype", "torch.cuda.is_bf16_supported"})
_CONFIG_SUFFIXES = ("Config", "Configuration", "Args", "Arguments", "Params", "Parameters", "Settings", "Options",
                    "HParams", "Hparams", "Hyperparameters")
#: Bounds on values an assignment may compute (``"x" * 10**9`` is not a configuration).
_MAX_ITEMS = 1_000_000
_MAX_EXPONENT = 4096


#: Functions that build a container as large as their argument says.
_MATERIALISING: tuple[Any, ...] = (list, tuple, set, frozenset, sorted, bytes, bytearray, dict, enumerate, zip,
                                   reversed, collections.OrderedDict, collections.defaultdict)


def _too_many(value: Any) -> bool:
    """An argument that would make a container larger than :data:`_MAX_ITEMS`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value > _MAX_ITEMS
    return isinstance(value, range) and len(value) > _MAX_ITEMS


class NotAllowed(Exception):
    """An assignment computes its value with something fxscope does not run (the message says what)."""


@dataclass(frozen=True)
class Skipped:
    """A top-level statement that did not run: its 1-based range and why."""

    line: int
    column: int
    end_line: int
    end_column: int
    reason: str


def _is_torch_module_class(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and inspect.isclass(obj) and issubclass(obj, torch.nn.Module)


def _is_config_class(cls: type) -> bool:
    """A class whose construction only records settings: a dataclass, a named tuple, a class named
    like a configuration, a transformers ``PretrainedConfig``, an enum, ``torch.device`` and
    ``torch.Size`` (never a tensor or a module)."""
    torch = sys.modules.get("torch")
    if _is_torch_module_class(cls) or (torch is not None and issubclass(cls, torch.Tensor)):
        return False
    if torch is not None and cls in (torch.device, torch.Size):
        return True
    if dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return True
    if issubclass(cls, enum.Enum) or cls.__name__.endswith(_CONFIG_SUFFIXES):
        return True
    return any(base.__name__ == "PretrainedConfig" and (base.__module__ or "").startswith("transformers")
               for base in cls.__mro__)


def _qualified(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{module}.{name}" if module and module != "builtins" else str(name)


class Evaluator:
    """Evaluates the value of an assignment in ``namespace`` (see the module docstring); raises
    :class:`NotAllowed` for anything else and :class:`NameError` for a name not set."""

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def value(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NotAllowed(f"`{_text(node)}` is computed by code fxscope does not run")
        return method(node)

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
        return getattr(self.value(node.value), node.attr)

    def _Subscript(self, node: ast.Subscript) -> Any:
        container = self.value(node.value)
        if not isinstance(container, (dict, list, tuple, str, range)):
            raise NotAllowed(f"`{_text(node)}` indexes a `{type(container).__name__}`")
        return container[self.value(node.slice)]

    def _Slice(self, node: ast.Slice) -> Any:
        return slice(*(None if part is None else self.value(part) for part in (node.lower, node.upper, node.step)))

    def _Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self._items(node.elts))

    def _List(self, node: ast.List) -> Any:
        return list(self._items(node.elts))

    def _Set(self, node: ast.Set) -> Any:
        return set(self._items(node.elts))

    def _items(self, elts: list[ast.expr]) -> list[Any]:
        if any(isinstance(e, ast.Starred) for e in elts):
            raise NotAllowed("a starred item")
        return [self.value(e) for e in elts]

    def _Dict(self, node: ast.Dict) -> Any:
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                mapping = self.value(value)
                if not isinstance(mapping, dict):
                    raise NotAllowed("`**` of something that is not a dict")
                out.update(mapping)
            else:
                out[self.value(key)] = self.value(value)
        return out

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self.value(node.operand))

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_EXPONENT:
            raise NotAllowed(f"`{_text(node)}` is too large")
        if isinstance(node.op, ast.Mult):  # "x" * 10**9, [0] * 10**9
            sequence, count = (left, right) if isinstance(left, (str, bytes, list, tuple)) else (right, left)
            if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int) \
                    and count * max(len(sequence), 1) > _MAX_ITEMS:
                raise NotAllowed(f"`{_text(node)}` is too large")
        if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > _MAX_EXPONENT:
            raise NotAllowed(f"`{_text(node)}` is too large")
        return _BINOPS[type(node.op)](left, right)

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for item in node.values:
            result = self.value(item)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _Compare(self, node: ast.Compare) -> Any:
        left = self.value(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.value(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.value(node.body) if self.value(node.test) else self.value(node.orelse)

    def _JoinedStr(self, node: ast.JoinedStr) -> Any:
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, 115, 114):
                    raise NotAllowed("a formatted f-string field")
                item = self.value(value.value)
                if not isinstance(item, (str, int, float, bool, type(None))):
                    raise NotAllowed("an f-string of something that is not a literal")
                parts.append(repr(item) if value.conversion == 114 else str(item))
            else:
                parts.append(str(self.value(value)))
        return "".join(parts)

    def _Call(self, node: ast.Call) -> Any:
        func = self.value(node.func)
        self._check_callable(func, node)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise NotAllowed("a call with `*args`")
            args.append(self.value(arg))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                mapping = self.value(keyword.value)
                if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
                    raise NotAllowed("`**` of something that is not a dict of names")
                kwargs.update(mapping)
            else:
                kwargs[keyword.arg] = self.value(keyword.value)
        if any(func is f for f in _MATERIALISING) and any(_too_many(a) for a in (*args, *kwargs.values())):
            raise NotAllowed(f"`{_text(node)}` is too large")
        if is_parser_method(func):
            try:
                return call_parser_method(func, args, kwargs)
            except ParserRefused as e:
                raise NotAllowed(str(e)) from None
        return func(*args, **kwargs)

    def _check_callable(self, func: Any, node: ast.Call) -> None:
        if any(func is allowed for allowed in _FUNCTIONS) or is_parser_class(func) or is_parser_method(func):
            return
        if inspect.isclass(func):
            if _is_torch_module_class(func):
                raise NotAllowed(f"`{_text(node)}` builds a model (fxscope builds classes itself)")
            if _is_config_class(func):
                return
            raise NotAllowed(f"`{_qualified(func)}` is not a constructor fxscope calls on its own")
        if isinstance(func, (types.BuiltinFunctionType, types.FunctionType)):
            if getattr(func, "__module__", None) == "math" or _qualified(func) in _TORCH_QUERIES:
                return
        if inspect.ismethod(func) and inspect.isclass(func.__self__) and _is_config_class(func.__self__) \
                and not any(word in func.__name__.lower() for word in ("pretrained", "load", "download", "hub", "url")):
            return  # Config.from_name("7B"), GPTConfig.small()
        raise NotAllowed(f"a call of `{_text(node.func)}`")


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
        _bind(stmt.target, evaluator._BinOp(ast.BinOp(ast.Constant(current), stmt.op, stmt.value)), namespace,
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
        namespace[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = list(value) if isinstance(value, (tuple, list)) else None
        if items is None or len(items) != len(target.elts):
            raise NotAllowed("an unpacking of something that is not a sequence of that length")
        for element, item in zip(target.elts, items, strict=True):
            _bind(element, item, namespace, evaluator)
    elif isinstance(target, ast.Attribute):
        obj = evaluator.value(target.value)
        own_class = inspect.isclass(obj) and obj.__module__ == namespace.get("__name__")
        if not (own_class or _mutable_value(obj)) or target.attr.startswith("__"):
            raise NotAllowed(f"`{_text(target)}` changes a `{type(obj).__name__}`")
        setattr(obj, target.attr, value)
    elif isinstance(target, ast.Subscript):
        obj = evaluator.value(target.value)
        if not isinstance(obj, (dict, list)):
            raise NotAllowed(f"`{_text(target)}` changes a `{type(obj).__name__}`")
        obj[evaluator.value(target.slice)] = value
    else:
        raise NotAllowed("an assignment target fxscope does not set")


def _mutable_value(obj: Any) -> bool:
    """A configuration object an assignment may change (``cfg.depth = 2``); a class of the module
    itself may get a method from a later cell too (``Net.forward = forward``)."""
    if isinstance(obj, (types.SimpleNamespace, argparse.Namespace, dict)):
        return True
    return not inspect.isclass(obj) and not inspect.ismodule(obj) and _is_config_class(type(obj))


def _definition(value: Any) -> bool:
    """Modules, classes and functions: what a skipped statement never unbinds (``torch.manual_seed(0)``
    does not make ``torch`` unknown)."""
    return inspect.ismodule(value) or inspect.isclass(value) or inspect.isroutine(value)


def run_safely(tree: ast.Module, namespace: dict[str, Any], filename: str,
               magic_lines: frozenset[int] = frozenset()) -> dict[str, Skipped]:
    """Run the plan of ``tree`` in ``namespace`` (a module's ``__dict__``); returns what was
    skipped, by the name it would have bound. An import that fails, and a definition that fails
    other than on a skipped name, raise as they would on import."""
    skipped: dict[str, Skipped] = {}
    evaluator = Evaluator(namespace)
    flags = 0  # the module's `from __future__ import ...`, for the statements after it

    def skip(step: Step, reason: str) -> None:
        record = Skipped(step.line, step.column, step.end_line, step.end_column, reason)
        for name in step.names:
            if step.kind != "run" and name in namespace and _definition(namespace[name]):
                continue  # `torch.manual_seed(0)` leaves `torch` as it was
            namespace.pop(name, None)
            skipped[name] = record

    for step in plan(tree, magic_lines):
        stmt = tree.body[step.index]
        if step.kind == "skip":
            skip(step, step.reason or "a statement fxscope does not run")
            continue
        if step.kind == "run":
            try:
                code = compile(ast.Module([stmt], []), filename, "exec", flags=flags, dont_inherit=True)
                exec(code, namespace)  # noqa: S102 - a statement of the plan's own
                flags |= _future_flags(stmt)
            except NameError as e:
                name = getattr(e, "name", None)
                if name not in skipped or isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    raise
                skip(step, f"it uses `{name}`, which fxscope did not set either")
                continue
            for name in step.names:
                skipped.pop(name, None)
            continue
        try:
            _assign(stmt, namespace, evaluator)
        except NameError as e:
            name = getattr(e, "name", None)
            reason = f"it uses `{name}`, which fxscope did not set" if name else str(e)
            skip(step, reason)
            continue
        except NotAllowed as e:
            skip(step, str(e))
            continue
        except Exception as e:  # noqa: BLE001 - a constructor that raises: the statement is skipped
            skip(step, f"it raised {type(e).__name__}: {_one_line(str(e))}")
            continue
        for name in step.names:
            skipped.pop(name, None)
    return {name: record for name, record in skipped.items() if name not in namespace}


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


def run_script(tree: ast.Module, module: types.ModuleType, path: str) -> None:
    """Run a ``.py`` script's statements (:func:`fxscope.project.toplevel.is_script`) in
    ``module`` through the safe executor."""
    module.__dict__[TREE] = tree
    module.__dict__[SKIPPED] = run_safely(tree, module.__dict__, path)


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

