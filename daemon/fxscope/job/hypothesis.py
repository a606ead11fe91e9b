"""A build made with invented values is a hypothesis: is a failure to trace it the build's fault?

When fxscope builds a class with values it made up (:data:`fxscope.model.recipe.INVENTED_KINDS`:
the workspace's values for those parameter names elsewhere, or small placeholders), a failure
while tracing may come from the made-up value rather than from the user's code: an int passed
where the code unpacks a pair (``H, W = self.input_resolution``), a width that does not divide by
the number of heads. Such a build is rejected (the worker tries the next candidate, and says
"could not build" with what was tried when none is left), never reported at the user's line.

The test, for each error of the trace that is not fx-specific (FXS101-106, a traced value used
as Python data, are fx's by definition; only "any other exception", FXS107, can be the build's):

- when example inputs can be derived (configured ones, or a transformers model's from its
  config), the same forward runs eagerly on the same build: if it
  raises the same exception, the failure is the build's (plain Python fails too); if it runs,
  the error is fx's and stays;
- otherwise, the evidence of the failing line: a type or value error (``TypeError``,
  ``ValueError``, ``IndexError``, ``ZeroDivisionError``, ``AssertionError``, a shape
  ``RuntimeError``) raised on a line that reads an invented argument, by its parameter name or as
  an attribute of a module holding that invented value; the fields of an invented configuration
  object (``config=GPTConfig(n_head=2)``: ``n_head``, and a dataclass's unset defaults) count as
  invented arguments.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import sys
from typing import Any, Mapping

from fxscope.model.recipe import Call, Expr, Lit, Recipe, Ref, Seq

__all__ = ["build_fault"]

#: Exceptions plain Python raises when a value has the wrong type or size.
_VALUE_ERRORS = re.compile(r"^(TypeError|ValueError|IndexError|ZeroDivisionError|AssertionError|KeyError)\b")
_SHAPE_ERROR = re.compile(r"^RuntimeError\b.*\b(shape|size|dimension|mat1|mat2|divisible)", re.IGNORECASE)
#: A message about an fx proxy is fx's by definition (a traced value used as Python data).
_PROXY = re.compile(r"\bProxy\b|\bproxy\b|symbolically traced")


def _literal(expr: Expr) -> Any:
    """The Python value of a literal argument (None when it is not plain data)."""
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Seq) and all(isinstance(i, Lit) for i in expr.items):
        values = [i.value for i in expr.items if isinstance(i, Lit)]
        return tuple(values) if expr.kind == "tuple" else values if expr.kind == "list" else None
    return None


def _loaded(ref: Ref) -> Any:
    """The object ``ref`` names in a module the build already imported (None otherwise: nothing
    is imported here)."""
    obj: Any = sys.modules.get(ref.module)
    for name in ref.path:
        obj = getattr(obj, name, None)
    return obj


def _with_fields(invented: dict[str, Expr]) -> dict[str, Expr]:
    """``invented`` and, for an invented configuration object (``config=GPTConfig(n_head=2)``), its
    fields: those the construction sets, and a dataclass's literal defaults (``n_embd: int = None``
    left unset is as made up as the rest: the repository's own config would set it)."""
    out = dict(invented)
    for expr in invented.values():
        if not isinstance(expr, Call):
            continue
        out.update((name, value) for name, value in expr.kwargs if name not in out and _literal(value) is not None)
        cls = _loaded(expr.func)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            for field in dataclasses.fields(cls):
                default = field.default
                if field.name not in out and (default is None or isinstance(default, (int, float, str, bool))):
                    out[field.name] = Lit(default)
    return out


def _names(node: ast.AST | None) -> set[str]:
    """Names and attribute names inside ``node``."""
    out: set[str] = set()
    for child in ast.walk(node) if node is not None else ():
        if isinstance(child, ast.Name):
            out.add(child.id)
        elif isinstance(child, ast.Attribute):
            out.add(child.attr)
    return out


def _header(stmt: ast.stmt) -> ast.AST | None:
    """The part of a statement that runs on its own line: an ``if``'s test, a ``for``'s iterable
    and target, a simple statement whole."""
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return ast.Tuple([stmt.target, stmt.iter], ast.Load())
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple([item.context_expr for item in stmt.items], ast.Load())
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
        return None
    return stmt


def _names_read(file: str, line: int) -> set[str]:
    """The names the statement at ``line`` of ``file`` reads; for a ``raise`` or ``assert``, also
    those of the conditions it sits under (``if self.dim % self.heads: raise ValueError(...)``)."""
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return set()
    found: list[ast.stmt] = []  # the statements containing the line, outermost first

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if stmt.lineno <= line <= (getattr(stmt, "end_lineno", None) or stmt.lineno):
                found.append(stmt)
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list):
                        visit([s for s in inner if isinstance(s, ast.stmt)])
                for handler in getattr(stmt, "handlers", None) or ():
                    visit(handler.body)
                return

    visit(tree.body)
    if not found:
        return set()
    innermost = found[-1]
    names = _names(_header(innermost))
    if isinstance(innermost, (ast.Raise, ast.Assert)):
        for outer in reversed(found[:-1]):
            if not isinstance(outer, ast.If):
                break
            names |= _names(outer.test)
    return names


def _carriers(model: Any, invented: Mapping[str, Expr]) -> dict[str, str]:
    """Attribute name -> the invented argument it holds: attributes of the model's modules that
    hold an invented value (``self.input_resolution = input_resolution``), by name or by value."""
    values = {name: _literal(expr) for name, expr in invented.items()}
    out = {name: name for name in invented}
    try:
        modules = list(model.modules())
    except Exception:  # noqa: BLE001 - a model whose modules() raises: names only
        modules = []
    for module in modules[:256]:
        for attr, value in vars(module).items():
            if attr.startswith("_") or attr in out or not isinstance(value, (int, float, str, tuple, list)):
                continue
            for name, invented_value in values.items():
                if invented_value is not None and type(value) is type(invented_value) and value == invented_value:
                    out[attr] = name
                    break
    return out


def _eager(model: Any, inputs: Mapping[str, Any]) -> BaseException | None:
    """What the forward raises when run eagerly on ``inputs`` (None: it ran)."""
    import torch

    try:
        with torch.no_grad():
            model(**inputs)
    except Exception as e:  # noqa: BLE001 - model code may raise anything
        return e
    return None


def _derived_inputs(model: Any) -> dict[str, Any] | None:
    """Example inputs fxscope derives on its own (a transformers model's, from its config), on the
    device the model was built on; None when none can be derived."""
    from fxscope.trace.inputs import default_inputs, example_tensors

    try:
        specs = default_inputs(model)
        device = next(iter(model.parameters()), None)
        return example_tensors(specs, device.device if device is not None else "meta") if specs else None
    except Exception:  # noqa: BLE001 - a model whose config or parameters cannot be read
        return None


def build_fault(recipe: Recipe | None, model: Any, findings: list[dict[str, Any]],
                inputs: Mapping[str, Any] | None) -> str | None:
    """Why the trace's errors are the fault of ``recipe``'s invented values (a phrase for the
    "could not build" report), or None: not an invented build, no error, or an error that is
    fx's (it stays an error)."""
    if recipe is None or not recipe.invented:
        return None
    errors = [f for f in findings if f.get("severity") == "error"]
    suspects = [f for f in errors if f.get("code") == "FXS107" and not _PROXY.search(str(f.get("message", "")))]
    if not suspects:
        return None
    invented = _with_fields(recipe.invented_arguments())
    if inputs is None:
        inputs = _derived_inputs(model)
    if inputs is not None:
        raised = _eager(model, inputs)
        if raised is None:
            return None  # plain Python runs this build: the error is fx's
        text = " ".join(f"{type(raised).__name__}: {raised}".split())
        for finding in suspects:
            message = " ".join(str(finding.get("message", "")).split())
            if message.startswith(text[:200]):
                return (f"built, but its forward raises `{_short(text)}` without fx too "
                        f"({_where(finding)}): the invented values do not fit ({recipe.invented_values()})")
    carriers = _carriers(model, invented)
    for finding in suspects:
        message = " ".join(str(finding.get("message", "")).split())
        if not (_VALUE_ERRORS.search(message) or _SHAPE_ERROR.search(message)):
            continue
        read = _names_read(str(finding.get("file", "")), int(finding.get("line") or 0))
        used = sorted({carriers[name] for name in read if name in carriers})
        if used:
            values = ", ".join(f"{name}={_value_text(invented[name])}" for name in used)
            return (f"built, but its forward raised `{_short(message)}` ({_where(finding)}) where the invented "
                    f"{values} is read: a value of the wrong type or size, not an error of the code")
    return None


def _value_text(expr: Expr) -> str:
    from fxscope.model.recipe import render_python

    return render_python(expr)[1]


def _where(finding: Mapping[str, Any]) -> str:
    return f"{os.path.basename(str(finding.get('file', '')))}:{finding.get('line')}"


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
