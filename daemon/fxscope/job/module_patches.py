"""Module patches in a notebook or script: ``f.softargmax = f.softmax``, ``config.DIM = 8``,
``torch.backends.cudnn.benchmark = True``.

The safe executor (:mod:`fxscope.job.safe_module`) makes such an assignment when the object is an
imported module and the value is one its evaluator allows (a name or attribute already set, a
literal, ...): it runs no code of the workspace (a workspace module class's own ``__setattr__`` or
descriptor is refused) and starts no work. Modules of the interpreter and of fxscope itself are
never patched. When the statement is skipped anyway (a value the evaluator refuses, a loop around
it), what it would have set is recorded under ``"<module name>.<attribute>"``, so that a class that
then reads it is FXS407 (info), not an AttributeError at the user's line.

>>> import ast, types
>>> f = types.ModuleType("torch.nn.functional")
>>> patched_attributes(ast.parse("f.softargmax = f.softmax").body[0], {"f": f})
('torch.nn.functional.softargmax',)
>>> refusal(types.ModuleType("builtins")), refusal(f)
('changes a module of the interpreter', None)
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["missing_attribute", "patched_attributes", "refusal"]

#: Modules a patch would change the interpreter (or fxscope's own code in the job) through.
_INTERPRETER_MODULES = frozenset({"builtins", "sys", "importlib", "fxscope"})


def _name(module: types.ModuleType) -> str | None:
    name = vars(module).get("__name__")  # the module's own record: no __getattr__ runs
    return name if isinstance(name, str) else None


def refusal(module: types.ModuleType) -> str | None:
    """Why an attribute of ``module`` is not set by a notebook's statement (None: it may be)."""
    name = _name(module)
    if name is None:
        return "changes a module without a name"
    if name.split(".")[0] in _INTERPRETER_MODULES:
        return "changes a module of the interpreter" if not name.startswith("fxscope") else "changes fxscope itself"
    return None


def _module_of(node: ast.expr, namespace: Mapping[str, Any]) -> types.ModuleType | None:
    """The module a dotted ``node`` names in ``namespace`` through module attributes only (no
    ``__getattr__`` of a module runs), else None."""
    if isinstance(node, ast.Name):
        found = namespace.get(node.id)
    elif isinstance(node, ast.Attribute):
        outer = _module_of(node.value, namespace)
        found = vars(outer).get(node.attr) if outer is not None else None
    else:
        return None
    return found if isinstance(found, types.ModuleType) else None


def _targets(stmt: ast.stmt) -> Iterator[ast.expr]:
    """Assignment targets of ``stmt`` and the blocks in it (not inside definitions)."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign):
            yield from node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            yield node.target
        todo.extend(ast.iter_child_nodes(node))


def patched_attributes(stmt: ast.stmt, namespace: Mapping[str, Any]) -> tuple[str, ...]:
    """``"<module name>.<attribute>"`` of every module attribute ``stmt`` assigns at module level
    (also inside a loop or a block), resolved in ``namespace``."""
    found: dict[str, None] = {}
    todo = list(_targets(stmt))
    while todo:
        target = todo.pop(0)
        if isinstance(target, (ast.Tuple, ast.List)):
            todo.extend(target.elts)
        elif isinstance(target, ast.Attribute):
            module = _module_of(target.value, namespace)
            name = _name(module) if module is not None else None
            if name is not None:
                found[f"{name}.{target.attr}"] = None
    return tuple(found)


def missing_attribute(error: BaseException) -> str | None:
    """``"<module name>.<attribute>"`` of an AttributeError raised reading a module's attribute."""
    module = getattr(error, "obj", None) if isinstance(error, AttributeError) else None
    if not isinstance(module, types.ModuleType):
        return None
    name, attr = _name(module), getattr(error, "name", None)
    return f"{name}.{attr}" if name is not None and isinstance(attr, str) else None
