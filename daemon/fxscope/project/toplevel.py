"""Which top-level statements of a notebook (or script) fxscope runs to define its classes, from
the AST alone; the worker's safe executor (``fxscope.job.safe_module``) follows this plan.

A notebook is never run as such: its training loops, data loading and downloads must not start
when fxscope builds a class it defines. Of its top-level statements, in order:

- ``import``/``from ... import``, ``def``, ``class`` (with their decorators), ``pass``, docstrings
  and ``try`` blocks made only of those (optional imports) run as Python runs them (``run``),
  unless the definition's default arguments or class body would do work
  (:mod:`fxscope.project.work`);
- assignments (``x = ...``, ``x: T = ...``, ``x += ...``, ``cfg.depth = 2``, ``table["k"] = v``,
  ``Net.forward = forward`` on a class of the module itself, ``f.softargmax = f.softmax`` on an
  imported module) are evaluated by a small interpreter
  that allows only literals, names already set, arithmetic and calls of constructors fxscope makes
  on its own (``assign``), and so are ``parser.add_argument(...)`` statements (an ``argparse``
  parser is built as written and ``parser.parse_args()`` parses an empty command line) and
  ``f("name")`` calls (run when ``f`` is ``torch.fx.wrap`` itself: it changes what fx traces);
- everything else is skipped: loops, ``if``/``with`` blocks, calls (``train()``, ``model.fit()``),
  IPython magics, and a statement that would rebind a module attribute the import set
  (``__name__``). A name a skipped statement binds is undefined from there on.

:func:`dependencies` says which module-level names a class's constructor and forward (and what
they call) use, so that a class using a skipped name is reported instead of failing on it.

>>> tree = ast.parse("import torch\\nx = 3\\nfor i in range(x):\\n    y = i\\nclass A: pass\\n")
>>> [(s.kind, s.names, s.reason) for s in plan(tree)]
[('run', ('torch',), None), ('assign', ('x',), None), ('skip', ('i', 'y'), 'a loop'), ('run', ('A',), None)]
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from fxscope.project._names import dotted_name
from fxscope.project.work import TopLevel, Work, WorkspaceImport, is_main_guard, local_names, script_reason

__all__ = ["Step", "Work", "dependencies", "is_main_guard", "is_script", "plan", "protected_name",
           "runnable_classes", "script_reason"]

_BUILTINS = frozenset(dir(builtins))
#: Module attributes a statement may set (the others are the import's: ``__name__``, ``__spec__``...).
_SETTABLE_DUNDERS = frozenset({"__all__", "__version__", "__author__", "__license__", "__copyright__", "__email__",
                               "__status__", "__credits__", "__maintainer__", "__doc__"})


def protected_name(name: str) -> bool:
    """A module attribute the import sets and fxscope keeps (``__name__``, ``__spec__``, ``__file__``,
    ``__builtins__``, its own records): a statement that would rebind one is not run."""
    return name.startswith("__") and name.endswith("__") and name not in _SETTABLE_DUNDERS
#: Methods of a class that building and tracing it call.
_ENTRY_METHODS = ("__init__", "__post_init__", "__new__", "forward", "__call__", "_forward_impl")


@dataclass(frozen=True)
class Step:
    """One top-level statement: ``index`` in the module body, ``kind`` (``run``, ``assign`` or
    ``skip``), the module-level ``names`` it binds, its 1-based range, and why it is skipped."""

    index: int
    kind: str
    names: tuple[str, ...]
    line: int
    column: int
    end_line: int
    end_column: int
    reason: str | None = None


def _target_names(target: ast.expr) -> Iterator[str]:
    """Module-level names an assignment target binds (``cfg.x = 1`` and ``d[k] = 1`` bind the
    object's name: its value is not what it was)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)
    elif isinstance(target, (ast.Attribute, ast.Subscript)):
        base: ast.expr = target
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if isinstance(base, ast.Name):
            yield base.id


def bound_names(stmt: ast.stmt) -> tuple[str, ...]:
    """Every module-level name ``stmt`` may bind, through compound statements (not into the
    bodies of definitions); a method call statement (``cfg.update(...)``) binds its object.

    >>> bound_names(ast.parse("with open(f) as fh:\\n    data = fh.read()").body[0])
    ('fh', 'data')
    """
    found: dict[str, None] = {}
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop(0)
        names: Iterable[str] = ()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = None
            continue  # its body binds nothing at module level
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in _target_names(t)]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            names = _target_names(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            names = [n for item in node.items if item.optional_vars is not None
                     for n in _target_names(item.optional_vars)]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names = [node.name]
        elif isinstance(node, ast.NamedExpr):
            names = _target_names(node.target)
        elif isinstance(node, ast.Delete):
            names = [n for t in node.targets for n in _target_names(t)]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func,
                                                                                           ast.Attribute):
            names = _target_names(node.value.func)  # cfg.update(...), items.append(...)
        for name in names:
            found[name] = None
        todo.extend(ast.iter_child_nodes(node))
    return tuple(found)


def _is_fx_wrap(stmt: ast.stmt) -> bool:
    """``f("name")``: a call that registers a leaf function when ``f`` is ``torch.fx.wrap`` (the
    executor checks what ``f`` resolves to before running it)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return (dotted_name(call.func) is not None and len(call.args) == 1 and not call.keywords
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str))


def _plain_assignment(stmt: ast.stmt) -> bool:
    """``x = None``, ``x = "a"``: the fallback of an optional import."""
    return (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            and isinstance(stmt.value, ast.Constant))


def _runs(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` runs as written (see the module docstring)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    if isinstance(stmt, ast.Try) or (sys.version_info >= (3, 11) and isinstance(stmt, ast.TryStar)):
        inner = [*stmt.body, *stmt.orelse, *stmt.finalbody, *(s for h in stmt.handlers for s in h.body)]
        return all(_runs(s) or _plain_assignment(s) for s in inner) and all(
            h.type is None or _is_exception_type(h.type) for h in stmt.handlers)
    return False


def _is_exception_type(node: ast.expr) -> bool:
    names = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(n, ast.Name) and n.id in _BUILTINS for n in names)


#: Methods whose call statements build a command-line parser (``parser.add_argument(...)``).
_PARSER_BUILDING = frozenset({"add_argument", "set_defaults"})


def _assignment(stmt: ast.stmt) -> bool:
    if _is_fx_wrap(stmt):
        return True  # evaluated: run when its name is torch.fx.wrap itself
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):  # parser.add_argument("--dim", ...)
        func = stmt.value.func
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in _PARSER_BUILDING
    if isinstance(stmt, ast.Assign):
        return all(_assignable(t) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and _assignable(stmt.target)
    if isinstance(stmt, ast.AugAssign):
        return isinstance(stmt.target, (ast.Name, ast.Attribute, ast.Subscript)) and _assignable(stmt.target)
    return False


def _assignable(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(isinstance(e, ast.Name) for e in target.elts)
    if isinstance(target, ast.Attribute):  # cfg.depth = 2, torch.nn.functional.softargmax = ...
        return dotted_name(target.value) is not None
    if isinstance(target, ast.Subscript):
        return isinstance(target.value, ast.Name)
    return False


_REASONS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((ast.For, ast.AsyncFor, ast.While), "a loop"),
    (ast.If, "an `if` block"),
    ((ast.With, ast.AsyncWith), "a `with` block"),
    (ast.Delete, "a `del`"),
    ((ast.Assign, ast.AnnAssign, ast.AugAssign), "an assignment fxscope does not make"),
)


def _reason(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Call, ast.Await)):
        call = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
        name = dotted_name(call.func) if isinstance(call, ast.Call) else None
        return f"a call of `{name}`" if name else "a call"
    for kinds, text in _REASONS:
        if isinstance(stmt, kinds):
            return text
    if isinstance(stmt, ast.Try):
        return "a `try` block that runs more than imports and definitions"
    return "a statement fxscope does not run"


def plan(tree: ast.Module, magic_lines: Iterable[int] = (), top: TopLevel | None = None) -> tuple[Step, ...]:
    """How each top-level statement of ``tree`` is treated; ``magic_lines`` are the lines where
    IPython syntax was neutralised (always skipped). A definition whose default arguments or class
    body would do work (:mod:`fxscope.project.work`) is skipped, and so is a statement that would
    rebind a module attribute the import set (``__name__ = ...``); ``top``: the module's analysis
    when built with a reader of the workspace modules it imports."""
    magic = frozenset(magic_lines)
    top = top or TopLevel(tree)
    steps = []
    for index, stmt in enumerate(tree.body):
        names = bound_names(stmt)
        where = (stmt.lineno, stmt.col_offset + 1, stmt.end_lineno or stmt.lineno, (stmt.end_col_offset or 0) + 1)
        rebound = next((n for n in names if protected_name(n)), None)
        work = top.definition_work(stmt)
        if stmt.lineno in magic:
            steps.append(Step(index, "skip", names, *where, "an IPython magic or shell command"))
        elif rebound is not None:
            steps.append(Step(index, "skip", names, *where, f"it rebinds `{rebound}`, which the import set"))
        elif work is not None:
            steps.append(Step(index, "skip", names, *where, f"its definition runs work ({work.reason})"))
        elif _runs(stmt):
            steps.append(Step(index, "run", names, *where))
        elif _assignment(stmt):
            steps.append(Step(index, "assign", names, *where))
        else:
            steps.append(Step(index, "skip", names, *where, _reason(stmt)))
    return tuple(steps)


def runnable_classes(tree: ast.Module) -> set[str]:
    """Names of the classes a plan defines (``class`` statements it runs, and those in runnable
    ``try`` blocks): the only ones a notebook can have as targets."""
    found: set[str] = set()
    for step in plan(tree):
        stmt = tree.body[step.index]
        if step.kind == "run" and isinstance(stmt, ast.ClassDef):
            found.add(stmt.name)
        elif step.kind == "run" and isinstance(stmt, ast.Try):
            found.update(s.name for s in stmt.body if isinstance(s, ast.ClassDef))
    return found


# ---------------------------------------------------------------------------------------------
# what a class's build and forward use


def _loads(nodes: Iterable[ast.AST]) -> Iterator[ast.Name]:
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                yield node


def _self_attributes(func: ast.AST) -> set[str]:
    """``X`` of every ``self.X``, ``cls.X`` and ``super().X`` in ``func``."""
    out = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute):
            base = node.value
            if (isinstance(base, ast.Name) and base.id in ("self", "cls")) or (
                    isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super"):
                out.add(node.attr)
    return out


def _functions_of(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def dependencies(tree: ast.Module, name: str) -> dict[str, int]:
    """Module-level names that building and tracing ``name`` may read (a class: its bases,
    decorators and class body, its constructor and forward and the methods they reach through
    ``self``; a function: its body), following the module's own classes and functions they use;
    each with the line of its first use. Builtins are left out unless the module rebinds them.

    >>> tree = ast.parse("DIM = 4\\nDEV = f()\\nclass B:\\n    def forward(self, x):\\n        return x.to(DEV)\\n"
    ...                  "class A:\\n    def __init__(self):\\n        self.b = B()\\n        self.d = DIM\\n"
    ...                  "    def fit(self):\\n        return loader\\n")
    >>> sorted(dependencies(tree, "A"))
    ['B', 'DEV', 'DIM']
    """
    defined: dict[str, ast.stmt] = {}
    module_names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[stmt.name] = stmt
        module_names.update(bound_names(stmt))
    used: dict[str, int] = {}
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in defined:
            continue
        seen.add(current)
        node = defined[current]
        for found in _uses(node, defined):
            if found.id in module_names or found.id not in _BUILTINS:
                used.setdefault(found.id, found.lineno)
                if found.id in defined:
                    todo.append(found.id)
    used.pop(name, None)
    return used


def _uses(node: ast.stmt, defined: dict[str, ast.stmt]) -> Iterator[ast.Name]:
    """Global names read by what building and calling a class (or a function) runs."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local = local_names(node)
        yield from _loads([*node.decorator_list, *node.args.defaults,
                           *(d for d in node.args.kw_defaults if d is not None)])
        yield from (n for n in _loads(node.body) if n.id not in local)
        return
    if not isinstance(node, ast.ClassDef):
        return
    yield from _loads([*node.bases, *node.keywords, *node.decorator_list])
    functions = _functions_of(node)
    for stmt in node.body:  # the class body runs at definition
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _loads([stmt])
        else:
            yield from _loads([*stmt.decorator_list, *stmt.args.defaults,
                               *(d for d in stmt.args.kw_defaults if d is not None)])
    reached: set[str] = set()
    todo = [m for m in _ENTRY_METHODS if m in functions]
    attributes: set[str] = set()
    while todo:
        method = todo.pop()
        if method in reached:
            continue
        reached.add(method)
        func = functions[method]
        local = local_names(func)
        yield from (n for n in _loads(func.body) if n.id not in local)
        attributes |= _self_attributes(func)
        todo.extend(a for a in attributes if a in functions and a not in reached)
    # methods of the module's own base classes reached through self (their entry points too)
    for base in node.bases:
        base_name = dotted_name(base)
        if base_name in defined and isinstance(defined[base_name], ast.ClassDef):
            base_functions = _functions_of(defined[base_name])  # type: ignore[arg-type]
            for method in {*_ENTRY_METHODS, *attributes} & set(base_functions):
                func = base_functions[method]
                local = local_names(func)
                yield from (n for n in _loads(func.body) if n.id not in local)


# ---------------------------------------------------------------------------------------------
# scripts


def is_script(tree: ast.Module, workspace_import: WorkspaceImport | None = None, top: TopLevel | None = None) -> bool:
    """Whether a ``.py`` file does work when imported (:func:`fxscope.project.work.script_reason`:
    outside ``if __name__ == "__main__":`` its top level loops, or calls workspace code that is
    not inert); ``workspace_import`` says which imports bring workspace code (default: relative
    ones; ``top``: its analysis, built with a reader of the modules it imports). Such a file is
    imported like a notebook (see the module docstring).

    >>> is_script(ast.parse("def main():\\n    for _ in range(3): pass\\nstatus = main()\\n"))
    True
    >>> is_script(ast.parse("def setup():\\n    return 2\\nLEVEL = setup()\\n"))
    False
    """
    return script_reason(tree, workspace_import, top) is not None
