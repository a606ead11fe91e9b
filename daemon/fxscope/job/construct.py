"""Building a class target on its own (zero-config): evaluate its recipes, keep the smallest build.

A class is built with its defaults when its constructor has them, and from each of its recipes
(:mod:`fxscope.model.recipe`), in order, on the meta device. A recipe is evaluated by a small
interpreter that only imports names and calls constructors: literals and containers as written;
references to workspace names, torch and the packages the model's own import already loaded;
calls only of workspace classes (and their own classmethods), torch classes, configuration classes
(``transformers.PretrainedConfig`` subclasses, ``*Config`` classes), builtin containers,
``functools.partial``, ``types.SimpleNamespace`` and ``argparse.Namespace``. Nothing else of the
file a recipe came from ever runs.

Candidates come in the order discovery ranked them (the construction policy,
:mod:`fxscope.project.policy`: the defaults first, invented values last, cheapest first); the first
that builds is kept when it is small, else a few builds are compared and the smallest (fewest
modules, then fewest parameters) is kept, so traces stay fast. A candidate that raises is not an
error: the next one is tried, and when none builds the target is "needs constructor arguments"
(FXS405) with what was tried. A method that fetches (``from_pretrained``) is never called.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import importlib.util
import inspect
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from fxscope.model.recipe import Call, DictExpr, Expr, Lit, Recipe, Ref, RefExpr, Seq, Setattrs
from fxscope.project import policy

__all__ = ["Attempt", "AutomaticBuild", "NotAllowed", "build_automatically", "evaluate", "rebuild"]

#: Callables a recipe may call besides classes.
_CALLABLE_VALUES: tuple[Any, ...] = (dict, list, tuple, set, frozenset, functools.partial, types.SimpleNamespace,
                                     argparse.Namespace, collections.OrderedDict, range, slice)
#: Modules a recipe may import by name without them being already loaded or in the workspace.
_IMPORTABLE = frozenset({"torch", "builtins", "functools", "types", "argparse", "collections", "math"})


class NotAllowed(Exception):
    """A recipe names something it may not import or call."""


@dataclass(frozen=True)
class Attempt:
    """One candidate tried: its recipe and the exception it raised (``None``: it built), as a
    line and as the exception itself (for its traceback)."""

    recipe: Recipe
    error: str | None
    cause: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass
class AutomaticBuild:
    """The outcome: the kept build (``None`` when nothing built), the recipe it came from and
    every attempt, in order."""

    built: Any
    recipe: Recipe | None
    attempts: list[Attempt] = field(default_factory=list)
    #: The first candidate that ran out of memory: not a question of arguments but a model too
    #: large for the limits, reported as an error when nothing else builds.
    exhausted: BaseException | None = None


class _Evaluator:
    """Evaluates recipe expressions; ``is_user_file`` tells workspace code from the rest."""

    def __init__(self, is_user_file: Callable[[str], bool]) -> None:
        self.is_user_file = is_user_file

    def _module(self, name: str) -> types.ModuleType:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
        top = name.partition(".")[0]
        if top not in _IMPORTABLE and top not in sys.modules and not self._in_workspace(name):
            raise NotAllowed(f"`{name}` is neither imported by the model nor part of the workspace")
        return importlib.import_module(name)

    def _in_workspace(self, name: str) -> bool:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return False
        origin = getattr(spec, "origin", None) if spec is not None else None
        return bool(origin) and self.is_user_file(origin)  # type: ignore[arg-type]

    def resolve(self, ref: Ref) -> Any:
        """The object ``ref`` names: the longest importable module prefix, then attributes."""
        parts = [ref.module, *ref.path]
        dotted = ".".join(parts)
        modules = dotted.split(".")
        for cut in range(len(modules) - 1, 0, -1):
            name = ".".join(modules[:cut])
            try:
                obj: Any = self._module(name)
            except ModuleNotFoundError:
                continue
            for attr in modules[cut:]:
                obj = getattr(obj, attr)
            return obj
        raise NotAllowed(f"`{dotted}` cannot be imported")

    def _workspace_object(self, obj: Any) -> bool:
        module = sys.modules.get(getattr(obj, "__module__", "") or "")
        file = getattr(module, "__file__", None)
        return isinstance(file, str) and self.is_user_file(file)

    def callable_allowed(self, obj: Any, ref: Ref) -> bool:
        if any(obj is allowed for allowed in _CALLABLE_VALUES):
            return True
        if inspect.isclass(obj):
            module = getattr(obj, "__module__", "") or ""
            return (self._workspace_object(obj) or module.split(".")[0] == "torch"
                    or policy.is_config_name(obj.__name__) or _is_hf_config(obj))
        if inspect.ismethod(obj) and inspect.isclass(obj.__self__):  # a classmethod
            return self._workspace_object(obj.__self__) or _is_hf_config(obj.__self__)
        if isinstance(obj, staticmethod) or (inspect.isfunction(obj) and len(ref.path) >= 2):
            owner = self.resolve(Ref(ref.module, ref.path[:-1]))
            return (inspect.isclass(owner) and self._workspace_object(owner)
                    and isinstance(inspect.getattr_static(owner, ref.path[-1], None), staticmethod))
        return False

    def value(self, expr: Expr) -> Any:
        if isinstance(expr, Lit):
            return expr.value
        if isinstance(expr, Seq):
            items = [self.value(i) for i in expr.items]
            return {"tuple": tuple, "list": list, "set": set}[expr.kind](items)
        if isinstance(expr, DictExpr):
            return {self.value(k): self.value(v) for k, v in expr.items}
        if isinstance(expr, RefExpr):
            obj = self.resolve(expr.ref)
            if isinstance(obj, types.ModuleType):
                raise NotAllowed(f"`{expr.ref.dotted}` is a module")
            return obj
        if isinstance(expr, Setattrs):
            obj = self.value(expr.base)
            for name, value in expr.attrs:
                setattr(obj, name, self.value(value))
            return obj
        return self.call(expr)

    def call(self, expr: Call) -> Any:
        method = expr.func.path[-1]
        if len(expr.func.path) > 1 and method[:1].islower() and policy.fetches(method):
            raise NotAllowed(f"`{expr.func.dotted}` reads weights or the network: fxscope never downloads")
        func = self.resolve(expr.func)
        if not self.callable_allowed(func, expr.func):
            raise NotAllowed(f"`{expr.func.dotted}` is not a constructor fxscope calls on its own")
        args = [self.value(a) for a in expr.args]
        kwargs = {k: self.value(v) for k, v in expr.kwargs}
        for splat in expr.splats:
            mapping = self.value(splat)
            if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
                raise NotAllowed("`**` of something that is not a dict of names")
            kwargs.update(mapping)
        return func(*args, **kwargs)


def _is_hf_config(cls: Any) -> bool:
    return any(base.__name__ == "PretrainedConfig" and base.__module__.startswith("transformers")
               for base in getattr(cls, "__mro__", ()))


def evaluate(expr: Expr, is_user_file: Callable[[str], bool]) -> Any:
    """The value of a resolved recipe expression (raises :class:`NotAllowed` for a name it may not
    use, and whatever the constructors raise)."""
    return _Evaluator(is_user_file).value(expr)


def _out_of_memory(error: BaseException) -> bool:
    """An allocation that failed (Python's MemoryError, torch's allocator under the memory limit)."""
    text = str(error).lower()
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text))


def _size(model: Any) -> tuple[int, int]:
    modules = sum(1 for _ in model.modules())
    params = sum(p.numel() for p in model.parameters())
    return modules, params


def build_automatically(cls: Any, recipes: tuple[Recipe, ...], *, build: Callable[[Callable[[], Any]], Any],
                        is_user_file: Callable[[str], bool]) -> AutomaticBuild:
    """Build ``cls`` from its ``recipes`` (a ``defaults`` one is ``cls()``), with ``build``
    (``fxscope.trace.build.build_model`` bound to a device; it raises on failure); keep the
    smallest of the first few builds (:func:`fxscope.project.policy.better_build`)."""
    evaluator = _Evaluator(is_user_file)
    outcome = AutomaticBuild(None, None)
    best: tuple[tuple[int, int], Any, Recipe] | None = None
    successes = 0
    for recipe in recipes[:policy.MAX_ATTEMPTS]:
        if recipe.kind == "defaults" and not recipe.expr.kwargs:
            factory: Callable[[], Any] = cls
        else:
            factory = functools.partial(evaluator.call, recipe.expr)
        try:
            built = build(factory)
        except Exception as e:  # noqa: BLE001 - a candidate that raises is not an error
            cause = e.__cause__ or e
            outcome.attempts.append(Attempt(recipe, f"{type(cause).__name__}: {cause}", cause))
            if outcome.exhausted is None and _out_of_memory(cause):
                outcome.exhausted = cause
            continue
        model = getattr(built, "model", built)
        if isinstance(cls, type) and not isinstance(model, cls):
            outcome.attempts.append(Attempt(recipe, f"built a `{type(model).__name__}`, not a `{cls.__name__}`"))
            continue
        outcome.attempts.append(Attempt(recipe, None))
        size = _size(model)
        if policy.better_build(size, best[0] if best is not None else None):
            best = (size, built, recipe)
        successes += 1
        assert best is not None
        if policy.enough(best[0], successes):
            break
    if best is not None:
        outcome.built, outcome.recipe = best[1], best[2]
    return outcome


def rebuild(build: dict[str, Any], root: str, *, device: str = "meta") -> Any:
    """The model a report's ``build`` (a target's :class:`Recipe` as JSON) describes, built again
    the way the worker built it, in this process (the workspace ``root`` must be on ``sys.path``):
    for comparing with plain ``torch.fx`` in a fresh process."""
    from fxscope.trace.build import build_model
    from fxscope.job.failures import user_file_predicate

    recipe = Recipe.from_json(build)
    is_user_file = user_file_predicate(root)
    if recipe.kind == "defaults" and not recipe.expr.kwargs:
        cls = _Evaluator(is_user_file).resolve(recipe.expr.func)
        return build_model(cls, device=device, is_user_file=is_user_file).model
    return build_model(functools.partial(evaluate, recipe.expr, is_user_file), device=device,
                       is_user_file=is_user_file).model
