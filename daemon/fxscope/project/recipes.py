"""Build recipes for the workspace's model classes, from what the repository already says.

For each class target, discovery gathers candidate constructions (AST only, nothing runs):

- **annotation**: every required ``__init__`` parameter is annotated with a class that can be built
  (a dataclass or named tuple whose fields have defaults, a class without required arguments, a
  transformers ``*Config``), or has call sites of its own: ``Model(config=ModelConfig())``;
- **config-class**: a transformers-style model with a ``config_class`` (its own, or inherited from
  a transformers base): ``Model(Model.config_class())``;
- **call-site**, **docstring**, **readme**: literal constructions anywhere in the workspace (tests,
  examples, scripts, ``__main__`` blocks, doctests, README and docs code blocks), nested ones
  included: ``Wrapper(layers=Decoder(dim=512, depth=6))``; a classmethod of the class with literal
  arguments (``Model.from_name("7B")``) counts too.

Every name in a recipe is resolved here to an import name: a call site whose names do not all
resolve is not a candidate. The worker evaluates the candidates (``fxscope.worker.construct``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from fxscope.model.recipe import RECIPE_KINDS, Call, DictExpr, Expr, Lit, Recipe, Ref, RefExpr, Seq

from ._summary import is_markdown

if TYPE_CHECKING:
    from .discovery import _Workspace

__all__ = ["MAX_RECIPES", "RecipeIndex"]

#: Candidates kept per class (cheapest first), and values tried per annotated parameter.
MAX_RECIPES = 8
_PER_PARAMETER = 2
#: Names a Markdown snippet may use without importing them.
#: Classmethods of a config class taken to return a default (small) configuration with no argument.
_DEFAULT_FACTORY = re.compile(r"^(get_)?(default|small|tiny|base)(_config|_args|_settings)?s?$")
_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "range", "slice"})
_MARKDOWN_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "functools": "functools",
                     "partial": "functools.partial", "SimpleNamespace": "types.SimpleNamespace"}


class _Unresolved(Exception):
    """A name of a call site that does not resolve to something importable."""


@dataclass(frozen=True)
class _ClassKey:
    rel: str
    name: str


class RecipeIndex:
    """Every resolvable call site of the workspace, by the class it constructs."""

    def __init__(self, ws: _Workspace) -> None:
        self.ws = ws
        self.sites: dict[_ClassKey, list[Recipe]] = {}
        self._by_simple_name: dict[str, list[_ClassKey]] = {}
        for rel, summary in ws.summaries.items():
            for name in summary.classes:
                self._by_simple_name.setdefault(name, []).append(_ClassKey(rel, name))
        for rel, summary in sorted(ws.summaries.items()):
            for site in summary.calls:
                try:
                    key, expr = self._resolve_call(rel, site.expr)
                except (_Unresolved, RecursionError):
                    continue
                if key is not None:
                    self.sites.setdefault(key, []).append(Recipe(expr, site.kind, rel, site.line, site.text))

    # -- resolution -------------------------------------------------------------------------
    def _class_ref(self, key: _ClassKey, rest: tuple[str, ...]) -> Ref:
        module = self.ws.module_of.get(key.rel)
        if not module:
            raise _Unresolved(key.name)  # a file that cannot be imported by name
        return Ref(module, (key.name, *rest))

    def _resolve_ref(self, rel: str, ref: Ref) -> tuple[Ref, _ClassKey | None, tuple[str, ...]]:
        """(importable ref, the workspace class it names or starts with, the rest after it)."""
        for cut in range(1, len(ref.path) + 1):
            head, rest = ref.path[:cut], ref.path[cut:]
            found = self._lookup(rel, ref.module, head)
            if found is None:
                continue
            kind = found[0]
            if kind == "class":
                key = _ClassKey(found[1], found[2])
                return self._class_ref(key, rest), key, rest
            if kind == "ext":
                dotted = ".".join((found[1], *rest))
                top, *more = dotted.split(".")
                if not more:
                    raise _Unresolved(dotted)
                return Ref(top, tuple(more)), None, ()
            if kind == "def" and not rest:
                module = self.ws.module_of.get(found[1])
                if module:
                    return Ref(module, (found[2],)), None, ()
            if kind != "module":
                break
        raise _Unresolved(ref.dotted)

    def _lookup(self, rel: str, module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        ws = self.ws
        if module == "":
            summary = ws.summaries.get(rel)
            if is_markdown(rel) or summary is None:
                return self._markdown_lookup(path)
            if path[0] not in summary.bindings and not summary.stars:
                if path[0] in _BUILTINS:
                    return ("ext", ".".join(("builtins", *path)))
                return self._markdown_lookup(path)  # a doctest's name, say: the one class of that name
            return ws.attribute(rel, path[0], list(path[1:]), set())
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = ws.absolute(rel, level, module.lstrip("."))
            if base is None:
                return None
            module = base
        return ws.dotted(".".join((module, *path)), set())

    def _markdown_lookup(self, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(path) == 1:
            candidates = self._by_simple_name.get(path[0], [])
            if len(candidates) == 1:
                return ("class", candidates[0].rel, candidates[0].name)
        alias = _MARKDOWN_ALIASES.get(path[0])
        if alias is not None:
            return ("ext", ".".join((alias, *path[1:])))
        return None

    def _resolve_expr(self, rel: str, expr: Expr) -> Expr:
        if isinstance(expr, Lit):
            return expr
        if isinstance(expr, Seq):
            return Seq(expr.kind, tuple(self._resolve_expr(rel, i) for i in expr.items))
        if isinstance(expr, DictExpr):
            return DictExpr(tuple((self._resolve_expr(rel, k), self._resolve_expr(rel, v)) for k, v in expr.items))
        if isinstance(expr, RefExpr):
            return RefExpr(self._resolve_ref(rel, expr.ref)[0])
        return self._resolve_call(rel, expr)[1]

    def _resolve_call(self, rel: str, call: Call) -> tuple[_ClassKey | None, Call]:
        """The class a call constructs (directly, or through one classmethod) and the call with
        every name resolved; raises _Unresolved."""
        func, key, rest = self._resolve_ref(rel, call.func)
        if key is not None and len(rest) > 1:
            raise _Unresolved(func.dotted)
        if key is not None and rest:
            info = self.ws.summaries[key.rel].classes.get(key.name)
            if info is None or rest[0] not in info.members:
                raise _Unresolved(func.dotted)  # a method the class does not define itself
        resolved = Call(func, tuple(self._resolve_expr(rel, a) for a in call.args),
                        tuple((k, self._resolve_expr(rel, v)) for k, v in call.kwargs),
                        tuple(self._resolve_expr(rel, s) for s in call.splats))
        return key, resolved

    # -- candidates per class ------------------------------------------------------------------
    def recipes_for(self, rel: str, name: str, required: tuple[str, ...]) -> tuple[Recipe, ...]:
        """The candidates for class ``name`` of ``rel`` whose constructor requires ``required``
        (empty: it has defaults for everything; those are tried first by the worker anyway)."""
        key = _ClassKey(rel, name)
        found: list[Recipe] = list(self.sites.get(key, ()))
        try:
            found += self._annotation_recipes(key, required)
            found += self._config_class_recipes(key, required)
        except (_Unresolved, RecursionError):
            pass
        order = {kind: i for i, kind in enumerate(RECIPE_KINDS)}
        unique: dict[Call, Recipe] = {}
        for recipe in sorted(found, key=lambda r: (r.cost(), order[r.kind], r.file, r.line)):
            unique.setdefault(recipe.expr, recipe)
        return tuple(itertools.islice(unique.values(), MAX_RECIPES))

    def _info(self, key: _ClassKey):  # type: ignore[no-untyped-def]
        return self.ws.summaries[key.rel].classes[key.name]

    def _values_for(self, key: _ClassKey, annotation: str) -> list[tuple[Expr, str]]:
        """Values to pass for a parameter annotated ``annotation`` in ``key``'s file."""
        try:
            ref, cls, rest = self._resolve_ref(key.rel, Ref("", tuple(annotation.split("."))))
        except _Unresolved:
            return []
        if cls is not None and not rest:
            facts = self.ws.class_facts(cls.rel, cls.name)
            if facts.is_module:
                return []  # a submodule passed in: built from its own recipes, not here
            values: list[tuple[Expr, str]] = []
            if facts.init == ():
                values.append((Call(ref), f"{cls.name}()"))
            for member in self._info(cls).members:
                if _DEFAULT_FACTORY.match(member):  # `Config.get_default_config()`, `Config.small()`
                    values.append((Call(Ref(ref.module, (*ref.path, member))), f"{cls.name}.{member}()"))
            for recipe in self.sites.get(cls, ())[:_PER_PARAMETER]:
                values.append((recipe.expr, recipe.text))
            return values[:_PER_PARAMETER]
        if cls is None and ref.path[-1].endswith(("Config", "Args", "Arguments", "Settings", "Options")):
            return [(Call(ref), f"{ref.path[-1]}()")]
        return []

    def _annotation_recipes(self, key: _ClassKey, required: tuple[str, ...]) -> list[Recipe]:
        info = self._info(key)
        if not required or info.init_required is None or any(p.startswith("*") for p in required):
            return []
        choices: list[list[tuple[str, Expr, str]]] = []
        for param in required:
            annotation = info.annotations.get(param)
            values = self._values_for(key, annotation) if annotation else []
            if not values:
                return []
            choices.append([(param, expr, text) for expr, text in values])
        recipes = []
        ref = self._class_ref(key, ())
        line = info.members.get("__init__", info.line)
        for combo in itertools.islice(itertools.product(*choices), _PER_PARAMETER * 2):
            call = Call(ref, kwargs=tuple((p, e) for p, e, _ in combo))
            text = f"{key.name}({', '.join(f'{p}={t}' for p, _, t in combo)})"
            recipes.append(Recipe(call, "annotation", key.rel, line, text))
        return recipes

    def _config_class_recipes(self, key: _ClassKey, required: tuple[str, ...]) -> list[Recipe]:
        if len(required) != 1 or required[0].startswith("*"):
            return []
        info = self._info(key)
        ref = self._class_ref(key, ())
        if info.config_class:
            values = self._values_for(key, info.config_class)
            return [Recipe(Call(ref, (expr,)), "config-class", key.rel, info.members.get("config_class", info.line),
                           f"{key.name}({text})") for expr, text in values]
        if self._inherits_config_class(key, set()):
            config = Call(self._class_ref(key, ("config_class",)))
            return [Recipe(Call(ref, (config,)), "config-class", key.rel, info.line,
                           f"{key.name}({key.name}.config_class())")]
        return []

    def _inherits_config_class(self, key: _ClassKey, seen: set[_ClassKey]) -> bool:
        """Whether a base defines ``config_class`` outside the workspace (a transformers
        pretrained model) or inside it."""
        if key in seen:
            return False
        seen.add(key)
        info = self._info(key)
        if info.config_class:
            return True
        for base in info.bases:
            found = self.ws.expression(key.rel, base) if base else None
            if found is None:
                continue
            if found[0] == "class" and self._inherits_config_class(_ClassKey(found[1], found[2]), seen):
                return True
            if found[0] == "ext" and found[1].startswith("transformers") and found[1].endswith("PreTrainedModel"):
                return True
        return False


def resolved_refs(expr: Expr) -> Iterable[Ref]:
    """Every reference inside a resolved expression (the callee first)."""
    if isinstance(expr, Call):
        yield expr.func
        for child in (*expr.args, *(v for _, v in expr.kwargs), *expr.splats):
            yield from resolved_refs(child)
    elif isinstance(expr, RefExpr):
        yield expr.ref
    elif isinstance(expr, Seq):
        for item in expr.items:
            yield from resolved_refs(item)
    elif isinstance(expr, DictExpr):
        for k, v in expr.items:
            yield from resolved_refs(k)
            yield from resolved_refs(v)
