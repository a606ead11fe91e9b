"""What a module's top level does when imported, from the AST alone: the rule that makes a file a
*script* (imported without its work, see :mod:`fxscope.project.toplevel`).

A top-level statement does **work** when, however it is nested (an assignment, an ``if``, a
``with``, a ``try``, a comprehension, a conditional expression, a lambda, a class body, a default
argument), it would call code defined in the workspace that is not *inert*:

- it calls a workspace function or class (of the file, or imported from another workspace file),
  or a method of one, or of an object built from one (``status = main()``, ``Trainer().fit()``);
- it hands one to other code, which may call it: a call argument (``Thread(target=main)``,
  ``map(train, runs)``, ``sorted(xs, key=score)``), a lambda body, the iterable of a
  comprehension, the context of a ``with``; names bound from such values (``run = main``,
  ``MODELS = {"a": Net}``) count as well;
- or it is a loop (``for``/``while`` at top level: iteration is work whatever it calls).

Decorators are not work (registries: ``@register_model``), nor are reads (``CFG.dim``). The body of
``if __name__ == "__main__":`` never runs on import.

A workspace callable is **inert**, and calling it is not work, when running it cannot start work:

- a function: not a generator or coroutine (its value runs when driven), not decorated by workspace
  code, and its body (nested functions and lambdas included), transitively through the workspace
  callables it names, has no loop or comprehension, no recursion, builds no model (a
  ``torch.nn`` class, ``from_pretrained``), starts no thread or process (``threading``,
  ``multiprocessing``, ``subprocess``, ``os.system``, ``torch.distributed``), runs no dynamic code
  (``eval``, ``exec``, ``globals()``, ``getattr`` of a computed name), and names only inert
  workspace callables;
- a class: constructing it runs only inert code: its bases are ``object``, builtins, typing/enum
  bases or inert workspace classes, no metaclass, decorators only ``dataclass``, and its
  ``__init__``, ``__post_init__``, ``__new__`` and ``__setattr__`` inert. Handed to other code
  (or used at top level, for an instance built there) it must be inert *whole*: every method,
  special methods and properties included, since the receiver may call any.

A call of an inert function that never calls its parameters nor hands them on (``register(cls)``
storing ``cls``) does not hand it its arguments; library calls that keep a callable without
calling it (``functools.partial``, ``lru_cache(8)(f)``, ``torch.jit.script``, ``torch.fx.wrap``)
do not either.

So ``setup_default_logging()`` and ``COMPUTE_DTYPE = _detect_compute_dtype()`` (straight-line code
over library calls) run as Python runs them, while ``main()``, ``Trainer().fit()`` and
``status = train()`` (loops, models) make the file a script. What an inert function does in a
library (a bounded, straight-line sequence of calls) is contained by the worker's sandbox; this
rule is about not *starting* work. The body of a function imported from another workspace file is
read through a :class:`Modules` reader (the worker's); without one, calling one is work, unless
``unread_inert`` (discovery's per-file view, which then lists the classes of a file the worker may
import as a script: those are FXS407 there, never silently missing).

>>> script_reason(ast.parse("def main():\\n    for _ in range(9): pass\\nstatus = main()\\n"))
Work(line=3, column=1, reason='a call of `main`')
>>> script_reason(ast.parse("import os\\ndef _dtype():\\n    return os.environ.get('D', 'f32')\\nD = _dtype()\\n"))
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from fxscope.project._names import dotted_name, dotted_parts

__all__ = ["ModuleReader", "Modules", "TopLevel", "Work", "WorkspaceImport", "is_main_guard", "local_names", "script_reason"]

#: ``(level, module)`` of an import -> whether it imports workspace code.
WorkspaceImport = Callable[[int, str], bool]
#: ``(level, module)`` of a workspace import -> that module's :class:`TopLevel` (None: not read).
ModuleReader = Callable[[int, str], "TopLevel | None"]

_BUILTINS = frozenset(dir(builtins))
#: Builtins whose call runs code chosen at run time.
_DYNAMIC = frozenset({"eval", "exec", "compile", "globals", "locals", "vars", "__import__", "breakpoint", "input"})
#: Library APIs that start concurrent or external execution (dotted prefixes, imports resolved).
_STARTS = ("threading.", "multiprocessing.", "subprocess.", "concurrent.futures.", "torch.multiprocessing.",
           "torch.distributed.", "os.system", "os.popen", "os.fork", "os.exec", "os.spawn", "os.posix_spawn",
           "asyncio.run", "pty.")
#: Bases a construction-only class may have (besides builtins and inert workspace classes).
_SAFE_BASES = frozenset({"typing.NamedTuple", "typing.Generic", "typing.TypedDict", "typing.Protocol", "abc.ABC",
                         "enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"})
_DATACLASS = frozenset({"dataclasses.dataclass"})
#: Methods constructing an instance runs.
_CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__", "__setattr__"})
#: Library calls that keep a callable without calling it (their value is bound from it instead).
_KEEPS = frozenset({"functools.partial", "functools.wraps", "functools.update_wrapper", "functools.lru_cache",
                    "functools.cache", "functools.cached_property", "functools.singledispatch", "property",
                    "staticmethod", "classmethod", "torch.fx.wrap", "torch.compile", "torch.jit.script",
                    "torch.jit.ignore", "torch.jit.unused", "torch.jit.export", "isinstance", "issubclass",
                    "callable", "id", "setattr", "typing.cast", "typing.TypeVar", "dataclasses.field"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Work:
    """The first statement of a module that does work: its 1-based position and what it does."""

    line: int
    column: int
    reason: str


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and any(
        isinstance(b, ast.Constant) and b.value == "__main__" for b in sides)


def _relative_only(level: int, module: str) -> bool:
    return level > 0


def _top_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements through compound statements (not into definitions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, _DEFS):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _top_statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _top_statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _top_statements(case.body)


def local_names(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names bound inside a function (parameters, assignments, imports, loop and ``with``
    targets, nested definitions, comprehension variables), minus those it declares global: what
    it reads under any other name comes from the module (or builtins). A ``nonlocal`` name is
    bound in an enclosing function, so it stays local here."""
    args = func.args
    local = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    local.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    declared: set[str] = set()
    body = func.body if isinstance(func.body, list) else [func.body]
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
        elif isinstance(node, _DEFS):
            local.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            local.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
    return local - declared


class TopLevel:
    """The workspace callables of one module and whether each is inert (see the module docstring);
    ``workspace_import`` says which imports bring workspace code (default: relative ones)."""

    def __init__(self, tree: ast.Module, workspace_import: WorkspaceImport | None = None,
                 read_module: ModuleReader | None = None, unread_inert: bool = False) -> None:
        self.tree = tree
        self.read_module = read_module
        #: what a workspace callable imported from a module that is not read is taken for
        self.unread_inert = unread_inert
        is_workspace = workspace_import or _relative_only
        self.is_workspace_import = is_workspace
        #: a name imported from a workspace module -> (level, module, its name there)
        self.origins: dict[str, tuple[int, str, str]] = {}
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.imported: set[str] = set()  # names bound by imports of workspace code (bodies unknown)
        self.aliases: dict[str, str] = {}  # name -> dotted library name it was imported as
        self.star_workspace = False
        self.bound: set[str] = set()
        for stmt in _top_statements(tree.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.classes.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    name = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else name
                    if is_workspace(0, alias.name):
                        self.imported.add(name)
                        self.origins[name] = (0, alias.name if alias.asname else name, "")
                    else:
                        self.aliases[name] = target
            elif isinstance(stmt, ast.ImportFrom):
                module = stmt.module or ""
                workspace = is_workspace(stmt.level, module)
                for alias in stmt.names:
                    if alias.name == "*":
                        self.star_workspace |= workspace
                    elif workspace:
                        self.imported.add(alias.asname or alias.name)
                        self.origins[alias.asname or alias.name] = (stmt.level, module, alias.name)
                    elif stmt.level == 0:
                        self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            targets: list[ast.expr] = []
            if isinstance(stmt, ast.Assign):
                targets = stmt.targets
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                targets = [stmt.target]
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            for assigned in targets:
                self.bound.update(n.id for n in ast.walk(assigned) if isinstance(n, ast.Name))
            if isinstance(stmt, _DEFS):
                self.bound.add(stmt.name)
        self.bound |= set(self.aliases) | self.imported
        #: module-level names bound from workspace callables (``run = main``): inert or not
        self.derived: dict[str, bool] = {}
        #: derived names bound to an instance of an inert workspace class: that class
        self.instances: dict[str, str] = {}
        self._inert: dict[str, bool] = {}
        self._methods: dict[tuple[str, str], bool] = {}
        self._whole: dict[str, bool] = {}  # classes whose every method is inert
        self._facts: dict[int, tuple[ast.stmt, frozenset[str], bool]] = {}
        self._stack: list[str] = []

    # -- names --------------------------------------------------------------------------------

    def is_workspace(self, name: str) -> bool:
        """Whether the module-level ``name`` is (or was bound from) workspace code."""
        if name in self.functions or name in self.classes or name in self.imported or name in self.derived:
            return True
        return self.star_workspace and name not in self.bound and name not in _BUILTINS

    def library(self, node: ast.expr) -> str | None:
        """The dotted library name an expression refers to (imports resolved), if any."""
        parts = dotted_parts(node)
        if parts is None:
            return None
        head = parts[0]
        if head in self.aliases:
            return ".".join([self.aliases[head], *parts[1:]])
        if head in _BUILTINS and not self.is_workspace(head) and head not in self.bound:
            return ".".join(parts)
        return None

    def inert(self, name: str) -> bool:
        """Whether calling (or constructing) the workspace callable ``name`` cannot start work."""
        if name in self.derived:
            return self.derived[name]
        if name in self.imported:
            return self._imported(name, TopLevel.inert)
        if name not in self.functions and name not in self.classes:
            return False  # a name a workspace star import may bind
        if name in self._inert:
            return self._inert[name]
        if name in self._stack:
            return False  # recursion
        self._stack.append(name)
        try:
            result = (all(self._function_inert(f) for f in self.functions.get(name, ()))
                      and all(self._class_inert(c) for c in self.classes.get(name, ())))
        finally:
            self._stack.pop()
        self._inert[name] = result  # False through a cycle: the name is on it (recursive)
        return result

    def _imported(self, name: str, check: Callable[[TopLevel, str], bool]) -> bool:
        """``check`` of a name imported from another workspace module, in that module (False when
        it cannot be read: its code is unknown)."""
        origin = self.origins.get(name)
        if origin is not None and self.read_module is None:
            return self.unread_inert
        if origin is None or self.read_module is None or name in self._stack or not origin[2]:
            return False  # a module itself is not called
        self._stack.append(name)
        try:
            module = self.read_module(origin[0], origin[1])
            return module is not None and check(module, origin[2])
        finally:
            self._stack.pop()

    def attribute_inert(self, name: str, attr: str) -> bool:
        """Whether calling ``name.attr``, ``name`` a workspace module imported here
        (``import pkg.util as util``, ``from .utils import logging``), cannot start work."""
        origin = self.origins.get(name)
        if origin is not None and self.read_module is None:
            return self.unread_inert
        if origin is None or self.read_module is None or name in self._stack:
            return False
        level, module, inner = origin
        path = f"{module}.{inner}" if inner and module else inner or module
        self._stack.append(name)
        try:
            found = self.read_module(level, path)
            if found is not None:
                return found.inert(attr)
            package = self.read_module(level, module) if inner else None  # re-exported: `from .utils import logging`
            return package is not None and inner in package.origins and package.attribute_inert(inner, attr)
        finally:
            self._stack.pop()

    def handed_inert(self, name: str) -> bool:
        """Whether code given ``name`` cannot start work with it: an inert function, an inert class
        whose methods are all inert (the receiver may call any), or an instance of one."""
        if name in self.imported:
            return self._imported(name, TopLevel.handed_inert)
        if not self.inert(name):
            return False
        owner = name if name in self.classes else self.instances.get(name)
        if owner is None:
            return True
        known = self._whole.get(owner)
        if known is None:
            known = self._whole[owner] = all(
                self.method_inert(owner, stmt.name) for c in self.classes.get(owner, ())
                for stmt in c.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)))
        return known

    # -- inert callables ------------------------------------------------------------------------

    def _function_inert(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        if isinstance(func, ast.AsyncFunctionDef):
            return False
        if any(self._names_workspace(d) for d in func.decorator_list):
            return False
        local = local_names(func)
        aliases: dict[str, str] = {}
        for node in (n for stmt in func.body for n in ast.walk(stmt)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                level = node.level if isinstance(node, ast.ImportFrom) else 0
                for alias in node.names:
                    source = f"{module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
                    if self.is_workspace_import(level, module or alias.name):
                        return False  # workspace code imported where it runs: not read here
                    aliases[alias.asname or alias.name.split(".")[0]] = source if alias.asname or isinstance(
                        node, ast.ImportFrom) else alias.name.split(".")[0]
        defaults = [*func.args.defaults, *(d for d in func.args.kw_defaults if d is not None)]
        for node in (n for root in [*defaults, *func.body] for n in ast.walk(root)):
            if isinstance(node, (*_LOOPS, *_COMPREHENSIONS, ast.Yield, ast.YieldFrom, ast.Await)):
                return False
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
                if self.is_workspace(node.id) and not self.inert(node.id):
                    return False
            if isinstance(node, ast.Call) and self._starts_work(node, local, aliases):
                return False
        return True

    def opaque(self, name: str) -> bool:
        """Whether the workspace function ``name`` never calls its parameters or hands them to
        other code (``register(cls)`` that stores ``cls``): what it is given is not run."""
        functions = self.functions.get(name)
        if not functions or name in self.classes:
            return False
        for func in functions:
            args = func.args
            params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
            for node in (n for stmt in func.body for n in ast.walk(stmt)):
                if not isinstance(node, ast.Call):
                    continue
                root = _root(node.func)
                if isinstance(root, ast.Name) and root.id in params:
                    return False
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(argument)):
                        return False
        return True

    def _starts_work(self, call: ast.Call, local: set[str], aliases: dict[str, str]) -> bool:
        """A library call that builds a model, starts a thread or process, or runs dynamic code."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("from_pretrained", "create_model", "load_state_dict"):
            return True
        if isinstance(func, ast.Name) and func.id not in local and func.id in _DYNAMIC | {"getattr"}:
            return func.id != "getattr" or not (len(call.args) >= 2 and isinstance(call.args[1], ast.Constant))
        parts = dotted_parts(func)
        if parts is None:
            return False
        if parts[0] in aliases:
            name: str | None = ".".join([aliases[parts[0]], *parts[1:]])
        elif parts[0] in local:
            return False
        else:
            name = self.library(func)
        if name is None:
            return False
        if name.startswith(_STARTS):
            return True
        last = name.rsplit(".", 1)[-1]
        return name.startswith(("torch.nn.", "torchvision.models.", "timm.", "transformers.")) and last[:1].isupper()

    def _class_inert(self, cls: ast.ClassDef) -> bool:
        if cls.keywords:
            return False  # a metaclass runs at construction
        for deco in cls.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if self.library(target) not in _DATACLASS:
                return False
        for base in cls.bases:
            base = base.value if isinstance(base, ast.Subscript) else base  # Generic[T]
            name = dotted_name(base)
            if name is None:
                return False
            if name in self.functions or name in self.classes or name in self.imported:
                if not self.inert(name):
                    return False
                continue
            resolved = self.library(base)
            if resolved is None or not (resolved in _SAFE_BASES or resolved in _BUILTINS):
                return False
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if stmt.name in _CONSTRUCTION and not self._function_inert(stmt):
                    return False
            elif isinstance(stmt, ast.ClassDef):
                continue
            else:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and (
                            node.id in ("property", "cached_property")
                            or (self.is_workspace(node.id) and not self.inert(node.id))):
                        return False  # a descriptor, or a default factory of workspace code
        return True

    def _names_workspace(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and self.is_workspace(n.id)
                   for n in ast.walk(node))

    def method_inert(self, cls: str, method: str) -> bool:
        """Whether ``cls.method(...)`` (a class of the module, inert) runs only inert code."""
        known = self._methods.get((cls, method))
        if known is None:
            self._methods[(cls, method)] = False  # a method reached again through itself: recursion
            known = self._methods[(cls, method)] = self._method_inert(cls, method)
        return known

    def _method_inert(self, cls: str, method: str) -> bool:
        if not self.inert(cls):
            return False
        for definition in self.classes.get(cls, ()):
            for stmt in definition.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == method:
                    return self._function_inert(stmt)
            for base in definition.bases:
                name = dotted_name(base)
                if name in self.classes:
                    return self.method_inert(name, method)
        return False

    # -- top-level statements -----------------------------------------------------------------

    def statement_work(self, stmt: ast.stmt) -> Work | None:
        """Whether running ``stmt`` at module level does work (see the module docstring); then
        record the names it binds from workspace callables."""
        found = self._statement(stmt)
        self._record(stmt, found is None)
        return found

    def definition_work(self, stmt: ast.stmt) -> Work | None:
        """The work a ``def`` or ``class`` statement does when it runs (default arguments, class
        bodies; not decorators), or None."""
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._statement(stmt)
        return None

    def _record(self, stmt: ast.stmt, harmless: bool) -> None:
        if isinstance(stmt, _DEFS) or isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return
        value = getattr(stmt, "value", None)
        refs = [n for n in self.facts(stmt)[0] if self.is_workspace(n)]
        if not refs:
            return
        inert = harmless and all(self.handed_inert(r) for r in refs)
        instance = None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes:
            instance = value.func.id
        for node in _assigned(stmt):
            self.derived[node] = self.derived.get(node, True) and inert
            if instance is not None and inert:
                self.instances[node] = instance
            else:
                self.instances.pop(node, None)

    def facts(self, stmt: ast.stmt) -> tuple[frozenset[str], bool]:
        """The names ``stmt`` reads, and whether it holds a loop statement (one walk, remembered)."""
        known = self._facts.get(id(stmt))
        if known is None:
            loads: set[str] = set()
            loop = False
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name):
                    if isinstance(node.ctx, ast.Load):
                        loads.add(node.id)
                elif isinstance(node, _LOOPS):
                    loop = True
            known = self._facts[id(stmt)] = (stmt, frozenset(loads), loop)
        return known[1], known[2]

    def _statement(self, stmt: ast.stmt) -> Work | None:
        if not isinstance(stmt, _DEFS):
            loads, loop = self.facts(stmt)
            if not loop and not any(self.is_workspace(n) for n in loads):
                return None  # work needs a loop or the workspace's code
        if isinstance(stmt, ast.If) and is_main_guard(stmt.test):
            return self._block(stmt.orelse)
        if isinstance(stmt, _LOOPS):
            return _work(stmt, "a loop")
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defaults = [*stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d is not None)]
            return self._expressions(defaults)
        if isinstance(stmt, ast.ClassDef):
            found = self._expressions([*stmt.bases, *(k.value for k in stmt.keywords)])
            return found or self._block(stmt.body, record=False)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                found = self._expression(item.context_expr, handed=True)
                if found:
                    return found
            return self._block(stmt.body)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return None
        blocks = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
        blocks += [h.body for h in getattr(stmt, "handlers", ())]
        blocks += [c.body for c in getattr(stmt, "cases", ())]
        expressions = [n for n in ast.iter_child_nodes(stmt) if isinstance(n, ast.expr)]
        expressions += [c.guard for c in getattr(stmt, "cases", ()) if c.guard is not None]
        expressions += [h.type for h in getattr(stmt, "handlers", ()) if h.type is not None]
        found = self._expressions(expressions)
        if found:
            return _work(stmt, found.reason)
        for block in blocks:
            found = self._block(block)
            if found:
                return found
        return None

    def _block(self, body: Iterable[ast.stmt], record: bool = True) -> Work | None:
        for inner in body:
            found = self._statement(inner)
            if record:
                self._record(inner, found is None)
            if found:
                return found
        return None

    def _expressions(self, nodes: Iterable[ast.expr]) -> Work | None:
        for node in nodes:
            found = self._expression(node)
            if found:
                return found
        return None

    def _expression(self, root: ast.expr, handed: bool = False) -> Work | None:
        """Work done by evaluating ``root``; ``handed``: its value is given to other code."""
        if isinstance(root, ast.Name) and isinstance(root.ctx, ast.Load):
            if handed and self.is_workspace(root.id) and not self.handed_inert(root.id):
                return _work(root, f"it hands `{root.id}` to code that may call it")
            if root.id in self.instances and not self.handed_inert(root.id):
                return _work(root, f"it uses `{root.id}`, whose methods do work")  # its properties, operators
            return None
        if isinstance(root, ast.Lambda):
            if not handed:
                return None  # kept, not called: the name it is bound to is workspace code
            local = local_names(root)
            for node in ast.walk(root.body):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local \
                        and self.is_workspace(node.id) and not self.inert(node.id):
                    return _work(root, f"a lambda that calls `{node.id}`")
            return None
        if isinstance(root, ast.Call):
            found = self._callee(root)
            if found:
                return found
            func = root.func.func if isinstance(root.func, ast.Call) else root.func  # lru_cache(8)(f)
            keeps = self.library(func) in _KEEPS or (
                isinstance(root.func, ast.Name) and root.func.id in self.functions and self.opaque(root.func.id))
            arguments = [*root.args, *(k.value for k in root.keywords)]
            for argument in arguments:
                found = self._expression(argument.value if isinstance(argument, ast.Starred) else argument,
                                         handed=not keeps)
                if found:
                    return found
            return None
        if isinstance(root, _COMPREHENSIONS):
            for generator in root.generators:
                found = self._expression(generator.iter, handed=True)
                if found:
                    return found
        if handed and isinstance(root, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred, ast.IfExp,
                                        ast.BoolOp, ast.NamedExpr)):
            children = [n for n in ast.iter_child_nodes(root) if isinstance(n, ast.expr)]
            if isinstance(root, ast.IfExp):
                children = [root.body, root.orelse]
                found = self._expression(root.test)
                if found:
                    return found
            for child in children:
                found = self._expression(child, handed=True)
                if found:
                    return found
            return None
        if handed and isinstance(root, (ast.Attribute, ast.Subscript)):
            base = _root(root)
            if isinstance(base, ast.Name) and self.is_workspace(base.id) and not self.handed_inert(base.id):
                return _work(root, f"it hands `{_text(root)}` to code that may call it")
        for node in ast.iter_child_nodes(root):
            if isinstance(node, ast.expr):
                found = self._expression(node)
                if found:
                    return found
            elif isinstance(node, ast.comprehension):
                found = self._expressions([node.iter, *node.ifs])
                if found:
                    return found
        return None

    def _callee(self, call: ast.Call) -> Work | None:
        """Work done by calling ``call.func`` itself (its arguments are checked by the caller)."""
        func = call.func
        if isinstance(func, ast.Name):
            if self.is_workspace(func.id) and not self.inert(func.id):
                return _work(call, f"a call of `{func.id}`")
            return None
        if isinstance(func, ast.Lambda):
            found = self._expression(func, handed=True)
            return _work(call, f"a call of a lambda ({found.reason})") if found else None
        base = _root(func)
        if isinstance(base, ast.Call):  # Trainer().fit(): the construction, then the method
            found = self._expression(base)
            if found:
                return found
            inner = base.func
            if isinstance(inner, ast.Name) and self.is_workspace(inner.id):
                method = func.attr if isinstance(func, ast.Attribute) and func.value is base else None
                if method is None or not self.method_inert(inner.id, method):
                    return _work(call, f"a call of `{_text(func)}`")
            return self._expression(func) if func is not base else None
        if isinstance(base, ast.Name) and self.is_workspace(base.id):
            if isinstance(func, ast.Attribute) and func.value is base:
                owner = base.id if base.id in self.classes else self.instances.get(base.id)
                if owner is not None and self.method_inert(owner, func.attr):
                    return None
                if base.id in self.imported and self.attribute_inert(base.id, func.attr):
                    return None
            return _work(call, f"a call of `{_text(func)}`")
        return self._expression(func)


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _assigned(stmt: ast.stmt) -> Iterator[str]:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _root(node.func)  # registry.update(...), items.append(main)
            if isinstance(base, ast.Name):
                yield base.id


def _text(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _work(node: ast.stmt | ast.expr, reason: str) -> Work:
    return Work(node.lineno, node.col_offset + 1, reason)


def script_reason(tree: ast.Module, workspace_import: WorkspaceImport | None = None,
                  top: TopLevel | None = None) -> Work | None:
    """The first top-level statement of ``tree`` that does work (None: importing it as Python
    starts none; see the module docstring); ``top``: its analysis, when built with a reader of the
    workspace modules it imports (:class:`Modules`)."""
    top = top or TopLevel(tree, workspace_import)
    for stmt in tree.body:
        found = top.statement_work(stmt)
        if found:
            return found
    return None


class Modules:
    """The :class:`TopLevel` of workspace modules, read on demand (each file parsed once), so that
    a call of a function imported from another workspace file is judged by that function's body.
    ``find`` maps an absolute module name to its workspace file (None: not the workspace's),
    ``read`` gives a file's source."""

    def __init__(self, find: Callable[[str], str | None], read: Callable[[str], bytes | str | None],
                 workspace_import: WorkspaceImport | None = None) -> None:
        self.find = find
        self.read = read
        self.workspace_import = workspace_import
        self._parsed: dict[str, TopLevel | None] = {}
        self._trees: dict[str, tuple[bytes | str, ast.Module]] = {}

    def tree(self, path: str, source: bytes | str) -> ast.Module:
        """``source`` (the file at ``path``) parsed, once: the import that runs it and the
        judging of the files that import it share one tree (raises SyntaxError as ``ast.parse``)."""
        known = self._trees.get(path)
        if known is not None and known[0] == source:
            return known[1]
        tree = ast.parse(source, path)
        self._trees[path] = (source, tree)
        return tree

    def toplevel(self, tree: ast.Module, name: str, is_package: bool, path: str | None = None) -> TopLevel:
        """The :class:`TopLevel` of module ``name`` (``tree``), reading what it imports on demand;
        with its ``path``, the one its importers read, when they read this tree."""
        known = self._parsed.get(path) if path is not None else None
        if known is not None and known.tree is tree:
            return known
        top = TopLevel(tree, self.workspace_import, self.reader(name if is_package else name.rpartition(".")[0]))
        if path is not None:
            self._parsed[path] = top
        return top

    def reader(self, package: str) -> ModuleReader:
        """Reads the workspace modules imported from a module of ``package``."""

        def read(level: int, module: str) -> TopLevel | None:
            try:
                name = importlib.util.resolve_name("." * level + module, package) if level else module
            except (ImportError, ValueError):
                return None
            return self.module(name)

        return read

    def module(self, name: str) -> TopLevel | None:
        """The :class:`TopLevel` of workspace module ``name`` (None when not found or not parsed)."""
        path = self.find(name)
        if path is None:
            return None
        if path not in self._parsed:
            self._parsed[path] = None  # an import cycle reads nothing more
            source = self.read(path)
            try:
                tree = self.tree(path, source) if source is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                self._parsed[path] = self.toplevel(tree, name, path.endswith("__init__.py"), path)
        return self._parsed[path]
