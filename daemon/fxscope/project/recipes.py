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
  arguments (``Model.from_name("7B")``) counts too;
- **vocabulary**, **placeholder** (invented: a hypothesis, see :mod:`fxscope.job.hypothesis`):
  the values the workspace passes to constructors for those parameter names elsewhere, else
  small placeholders; an already-built sub-network (``Wrapper(net)``) is a workspace module class
  that fits (its annotation, what the workspace passes by that name, a class of that name), built
  by its own first recipe: ``Wrapper(net=ViT(...))``; a ``**kwargs`` constructor gets the names its
  body reads (``kwargs["dim"]``), one that forwards ``*args, **kwargs`` to a workspace base gets
  what the base requires.

The constructor's defaults are the first candidate of a class that needs no argument. Every
candidate is ranked, and passes pretrained-weight parameters off, by the construction policy
(:mod:`fxscope.project.policy`).

Every name in a recipe is resolved here to an import name: a call site whose names do not all
resolve is not a candidate. The worker evaluates the candidates (``fxscope.job.construct``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from fxscope.model.recipe import Call, DictExpr, Expr, Lit, Recipe, Ref, RefExpr, Seq, Setattrs, render_python

from . import placeholders, policy
from ._summary import ClassInfo, Summary, is_example_text
from .files import split_rooted
from .notebooks import is_notebook

if TYPE_CHECKING:
    from .discovery import _Workspace

__all__ = ["MAX_RECIPES", "RecipeIndex", "clear_cache"]

MAX_RECIPES = policy.MAX_RECIPES
_PER_PARAMETER = policy.PER_PARAMETER
#: Sub-networks built inside sub-networks, at most (``Wrapper(net=Encoder(block=Block(...)))``).
_MAX_NESTING = 2
#: Classmethods of a config class taken to return a default (small) configuration with no argument.
_DEFAULT_FACTORY = re.compile(r"^(get_)?(default|small|tiny|base)(_config|_args|_settings)?s?$")
#: transformers classes that carry a ``config_class``: ``PreTrainedModel`` and its model classes.
#: Parameter names that take a configuration object (any data-like class may fit them).
_CONFIG_PARAM = re.compile(r"(^|_)(config|cfg|conf|args|opts?|options|hparams|hps|params|settings)$", re.IGNORECASE)
_HF_MODEL = re.compile(r"\.[A-Z]\w*(Model|For[A-Z]\w*)$")
_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "range", "slice"})
_MARKDOWN_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "functools": "functools",
                     "partial": "functools.partial", "SimpleNamespace": "types.SimpleNamespace"}


class _Unresolved(Exception):
    """A name of a call site that does not resolve to something importable."""


@dataclass(frozen=True)
class _ClassKey:
    rel: str
    name: str


@dataclass(frozen=True)
class _FileFacts:
    """What one file gives the index, resolved: its call sites by the class they construct, the
    literal keyword arguments its constructions pass (name, value, line), the sub-networks they pass
    by name, every literal keyword of any call, and its classes' literal parameter defaults."""

    sites: tuple[tuple[_ClassKey, Recipe], ...]
    partial: tuple[tuple[_ClassKey, Recipe, tuple[tuple[int | str, str], ...]], ...]
    learned: tuple[tuple[str, Expr, int], ...]
    networks: tuple[tuple[str, Call, int], ...]
    keywords: tuple[tuple[str, Expr, int], ...]
    defaults: tuple[tuple[str, Expr, int], ...]


@dataclass(frozen=True)
class _Memo:
    """A class's candidates and what computing them read: reused while every read is the same."""

    interface: str
    own: str
    reads: tuple[tuple[str, Any, int], ...]
    recipes: tuple[Recipe, ...]


#: Per-process caches, so that discovery after an edit redoes only what the edit changed:
#: (root, file) -> (the summary its facts were read from, the workspace interface, the facts);
#: (root, file, class, required) -> its candidates; id(summary) -> (summary, its interface digest).
_FILES: OrderedDict[tuple[str, str], tuple[Summary, str, _FileFacts]] = OrderedDict()
_CLASSES: OrderedDict[tuple[str, str, str, tuple[str, ...]], _Memo] = OrderedDict()
_INTERFACES: OrderedDict[int, tuple[Summary, str]] = OrderedDict()
_CACHE_SIZE = 1 << 15
_LOCK = threading.Lock()


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    with _LOCK:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def _digest(value: Any) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=16).hexdigest()


def _file_interface(summary: Summary) -> str:
    """A digest of what resolving names through a file reads: its bindings, imports, notebook
    cells and its classes' names, bases, members and constructors (not their lines, nor the
    values of their defaults: those are read as the workspace's values for their names). Names
    bound to plain values are left out: they resolve to nothing importable, and only matter to
    files that import them all (``from mod import *``: see :class:`RecipeIndex`)."""
    found = _INTERFACES.get(id(summary))
    if found is not None and found[0] is summary:
        return found[1]
    classes = {name: (c.bases, sorted(c.members), sorted(c.abstract), c.init_required, sorted(c.annotations.items()),
                      c.config_class, sorted(k for k, v in c.defaults.items() if v and policy.weights_off(k)),
                      c.fields_init, c.kwargs_reads, c.int_params,  # other defaults: values for names
                      c.uses.attributes, c.uses.none_defaults, c.uses.asserted,  # what other classes read of it
                      c.uses.kinds)
               for name, c in sorted(summary.classes.items())}
    bindings = sorted((name, binding[:2] if binding[0] == "def" else binding)  # a function's line: not read
                      for name, binding in summary.bindings.items() if binding[0] != "other")
    digest = _digest((bindings, summary.stars, summary.imports, summary.cells, classes))
    _remember(_INTERFACES, id(summary), (summary, digest))
    return digest


def clear_cache() -> None:
    """Forget every file's facts and class's candidates (the next discovery computes them all)."""
    with _LOCK:
        _FILES.clear()
        _CLASSES.clear()
        _INTERFACES.clear()


class RecipeIndex:
    """Every resolvable call site of the workspace, by the class it constructs.

    Incremental: a file's facts are reused while its summary (its content) and the workspace's
    interface (what name resolution reads) are the same, and a class's candidates while its own
    summary entry and everything computing them read (call sites, values for its parameters'
    names, sub-networks) are."""

    def __init__(self, ws: _Workspace) -> None:
        self.ws = ws
        self.root = str(ws.config.root)
        self.sites: dict[_ClassKey, list[Recipe]] = {}
        #: constructions with arguments that could not be read (and what they were written as)
        self.partial: dict[_ClassKey, list[tuple[Recipe, tuple[tuple[int | str, str], ...]]]] = {}
        self._by_simple_name: dict[str, list[_ClassKey]] = {}
        self._by_ref: dict[tuple[str, str], _ClassKey] = {}  # (import name, class name) -> class
        for rel, summary in ws.summaries.items():
            module = ws.module_of.get(rel)
            for name in summary.classes:
                self._by_simple_name.setdefault(name, []).append(_ClassKey(rel, name))
                if module:
                    self._by_ref[(module, name)] = _ClassKey(rel, name)
        #: keyword name -> (value, file, line) of every literal argument the workspace passes to a
        #: constructor by that name, then every literal default of a constructor parameter of that name
        self.vocabulary: dict[str, list[tuple[Expr, str, int]]] = {}
        #: the same from every other call (``softmax(dim=-1)``): used only for a name no constructor takes
        self._loose: dict[str, list[tuple[Expr, str, int]]] = {}
        #: keyword name -> constructions of workspace module classes passed by that name
        self.networks: dict[str, list[tuple[Call, str, int]]] = {}
        self._chosen: dict[str, list[tuple[Expr, str, int]]] = {}  # _words, once per name
        self._built: dict[_ClassKey, tuple[Expr, ...]] = {}  # _network_exprs, once per class
        self._reads: list[tuple[str, Any, int]] | None = None  # what the class being computed read
        self._digests: dict[tuple[str, Any], int] = {}
        starred = {ws.find_module(rel, ws.absolute(rel, level, module) or "")
                   for rel, summary in ws.summaries.items() for level, module in summary.stars}
        self.interface = _digest(sorted(
            (rel, ws.module_of.get(rel), _file_interface(summary),
             sorted(summary.bindings) if rel in starred else None)  # what `import *` of it binds
            for rel, summary in ws.summaries.items()))
        self.reused = 0  # files and classes taken from the caches (for measurements)
        facts = [(rel, self._facts(rel, summary)) for rel, summary in sorted(ws.summaries.items())]
        for rel, fact in facts:
            for key, recipe in fact.sites:
                self.sites.setdefault(key, []).append(recipe)
            for key, recipe, holes in fact.partial:
                self.partial.setdefault(key, []).append((recipe, holes))
            for name, value, line in fact.learned:
                self.vocabulary.setdefault(name, []).append((value, rel, line))
            for name, call, line in fact.networks:
                self.networks.setdefault(name, []).append((call, rel, line))
        for rel, fact in facts:
            for name, value, line in fact.keywords:
                self._loose.setdefault(name, []).append((value, rel, line))
        for rel, fact in facts:
            for name, value, line in fact.defaults:
                self.vocabulary.setdefault(name, []).append((value, rel, line))
        self._notebooks = any(is_notebook(rel) for rel in ws.summaries)
        #: whether any candidate can ask for weights: a keyword the workspace passes, or a
        #: workspace class's default, named like a pretrained-weight parameter
        self._weighty = any(policy.weights_off(name) is not None
                            for name in itertools.chain(self.vocabulary, self._loose, self.networks))

    def _facts(self, rel: str, summary: Summary) -> _FileFacts:
        """The facts of one file (see :class:`_FileFacts`), from the cache when its content and the
        workspace's interface are unchanged."""
        cached = _FILES.get((self.root, rel))
        if cached is not None and cached[0] is summary and cached[1] == self.interface:
            self.reused += 1
            return cached[2]
        sites: list[tuple[_ClassKey, Recipe]] = []
        partial: list[tuple[_ClassKey, Recipe, tuple[tuple[int | str, str], ...]]] = []
        learned: list[tuple[str, Expr, int]] = []
        networks: list[tuple[str, Call, int]] = []
        for site in summary.calls:
            try:
                key, expr = self._resolve_call(rel, site.expr)
            except (_Unresolved, RecursionError):
                continue
            self._learn(expr, site.line, learned, networks)
            if key is not None and site.holes:
                if expr.func.path == (key.name,):  # the class itself, not one of its methods
                    partial.append((key, self.recipe(expr, site.kind, rel, site.line, site.text), site.holes))
            elif key is not None and (site.kind != "config-file" or self._configures(key, expr)):
                sites.append((key, self.recipe(expr, site.kind, rel, site.line, site.text)))
        fact = _FileFacts(tuple(sites), tuple(partial), tuple(learned), tuple(networks),
                          tuple((name, Lit(value), line) for name, value, line in summary.keywords),
                          tuple((name, Lit(value), info.line) for info in summary.classes.values()
                                for name, value in info.defaults.items()))
        _remember(_FILES, (self.root, rel), (summary, self.interface, fact))
        return fact

    def recipe(self, expr: Call, kind: str, rel: str, line: int, text: str) -> Recipe:
        """A recipe found at ``line`` of ``rel`` (in a notebook: its cell and the line in it)."""
        summary = self.ws.summaries.get(rel)
        cell = summary.cell_of(line) if summary is not None and summary.cells else None
        if cell is not None:
            return Recipe(expr, kind, rel, cell[1], text, cell[0])
        return Recipe(expr, kind, rel, line, text)

    def _learn(self, expr: Expr, line: int, learned: list[tuple[str, Expr, int]],
               networks: list[tuple[str, Call, int]]) -> None:
        """Record the keyword arguments of every call inside ``expr`` whose value is plain data
        (into ``learned``), or a construction of a workspace module class (into ``networks``)."""
        if isinstance(expr, Call):
            for name, value in expr.kwargs:
                if _plain(value):
                    learned.append((name, value, line))
                elif isinstance(value, Call) and self._module_class(value.func) is not None:
                    networks.append((name, value, line))
            if any(isinstance(value, Call) for value in expr.args):
                # a sub-network passed by position (`GaussianDiffusion(model, ...)` after `model = Unet(...)`):
                # it is passed for the parameter at that position of the constructor
                callee = self._module_class(expr.func)
                params = self.ws.class_facts(callee.rel, callee.name).init if callee is not None else None
                for name, value in zip(params or (), expr.args):
                    if not name.startswith(("*", "<")) and isinstance(value, Call) \
                            and self._module_class(value.func) is not None:
                        networks.append((name, value, line))
            for child in (*expr.args, *(v for _, v in expr.kwargs), *expr.splats):
                self._learn(child, line, learned, networks)
        elif isinstance(expr, Setattrs):
            self._learn(expr.base, line, learned, networks)
            for name, value in expr.attrs:
                if _plain(value):
                    learned.append((name, value, line))
        elif isinstance(expr, (Seq, DictExpr)):
            for child in (expr.items if isinstance(expr, Seq) else [v for _, v in expr.items]):
                self._learn(child, line, learned, networks)

    # -- reads of what other files give, recorded for the class being computed --------------
    def _read(self, kind: str, name: Any) -> Any:
        """The current value of one input of a class's candidates: ``sites`` of a class, ``words``
        or ``networks`` for a parameter name, ``built`` sub-network of a class (at a depth)."""
        if kind == "sites":
            value: Any = tuple(self.sites.get(name, ()))
        elif kind == "partial":
            value = tuple(self.partial.get(name, ()))
        elif kind == "words":
            value = self._words(name)
        elif kind == "networks":
            value = tuple(self.networks.get(name, ()))
        else:
            value = self._network_exprs(name[0], name[1])
        if self._reads is not None:
            self._reads.append((kind, name, self._digest_of(kind, name, value)))
        return value

    def _digest_of(self, kind: str, name: Any, value: Any) -> int:
        """A digest of an input's value (its hash: the memo lives in this process), once per input
        and index."""
        found = self._digests.get((kind, name))
        if found is None:
            found = self._digests[(kind, name)] = hash(tuple(value) if isinstance(value, list) else value)
        return found

    def _words(self, name: str) -> list[tuple[Expr, str, int]]:
        """Values the workspace uses for a parameter called ``name``, best first: the value it
        passes most often (the smaller on a tie), then the smallest positive integer it passes
        (layer counts and sizes: a small build), from call sites, else from defaults. Computed
        once per name (a repository's ``dim`` has thousands of values, asked for by every class)."""
        words = self._chosen.get(name)
        if words is None:
            words = self._chosen[name] = self._choose(name)
        return words

    def _choose(self, name: str) -> list[tuple[Expr, str, int]]:
        def usable(word: tuple[Expr, str, int]) -> bool:  # None says nothing (an argparse default of a required option)
            value = word[0]
            return not isinstance(value, Lit) or (value.value is not None and policy.plausible(name, value.value))

        seen = [w for w in self.vocabulary.get(name, ()) if usable(w)] or [w for w in self._loose.get(name, ()) if usable(w)]
        if not seen:
            return []
        counts: dict[Expr, int] = {}
        for value, _, _ in seen:
            counts[value] = counts.get(value, 0) + 1

        def size(value: Expr) -> float:
            return value.value if isinstance(value, Lit) and isinstance(value.value, (int, float)) \
                and not isinstance(value.value, bool) else float("inf")

        common = max(counts, key=lambda v: (counts[v], -size(v)))
        small = [v for v in counts if isinstance(v, Lit) and isinstance(v.value, int)
                 and not isinstance(v.value, bool) and v.value > 1]
        order = [common] + ([min(small, key=size)] if small and min(small, key=size) != common else [])
        first = {value: (file, line) for value, file, line in reversed(seen)}
        return [(v, *first[v]) for v in order]

    def vocabulary_calls(self, ref: Ref, required: tuple[str, ...], owner: _ClassKey | None = None,
                         depth: int = 0) -> list[tuple[Call, str, int]]:
        """``ref(p=value, ...)`` for every required parameter, with the workspace's values for
        those names (the most used ones, then the smallest ones; a sub-network parameter of
        ``owner``: the constructions the workspace passes by that name); none when a parameter has
        no value or takes ``*args``."""
        if not required or any(p.startswith(("*", "<")) for p in required):
            return []
        words: list[list[tuple[Expr, str, int]]] = []
        for p in required:
            found: list[tuple[Expr, str, int]] = list(self._read("words", p))
            if not found and owner is not None and depth < _MAX_NESTING:
                found += [(c, file, line) for c, file, line in self._read("networks", p)
                          if self._module_class(c.func) != owner][:_PER_PARAMETER]
            words.append(found)
        if not all(words):
            return []
        calls: list[tuple[Call, str, int]] = []
        for pick in (0, 1):
            chosen = [w[min(pick, len(w) - 1)] for w in words]
            call = Call(ref, kwargs=tuple((p, w[0]) for p, w in zip(required, chosen)))
            if all(call != c for c, _, _ in calls):
                calls.append((call, chosen[0][1], chosen[0][2]))
        return calls

    def _module_class(self, ref: Ref) -> _ClassKey | None:
        """The workspace ``nn.Module`` class ``ref`` names (None for anything else)."""
        key = self._by_ref.get((ref.module, ref.path[0])) if len(ref.path) == 1 else None
        if key is None:
            return None
        facts = self.ws.class_facts(key.rel, key.name)
        return key if facts.is_module and not facts.abstract else None

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
            if is_example_text(rel) or summary is None:
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
        return ws.dotted(".".join((module, *path)), set(), rel)

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
        if isinstance(expr, Setattrs):
            return Setattrs(self._resolve_expr(rel, expr.base),
                            tuple((k, self._resolve_expr(rel, v)) for k, v in expr.attrs))
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
        (empty: it has defaults for everything, and the first candidate is ``name()``), in the
        order the construction policy ranks them; the last discovery's when nothing they were
        computed from changed."""
        summary = self.ws.summaries[rel]
        memo_key = (self.root, rel, name, required)
        own = _digest((summary.classes[name], summary.cells))
        memo = _CLASSES.get(memo_key)
        if memo is not None and memo.interface == self.interface and memo.own == own \
                and all(self._digest_of(kind, n, self._read(kind, n)) == d for kind, n, d in memo.reads):
            self.reused += 1
            return memo.recipes
        self._reads = []
        try:
            recipes = self._recipes_for(rel, name, required)
        finally:
            reads, self._reads = self._reads, None
        _remember(_CLASSES, memo_key, _Memo(self.interface, own, tuple(dict.fromkeys(reads)), recipes))
        return recipes

    def _recipes_for(self, rel: str, name: str, required: tuple[str, ...]) -> tuple[Recipe, ...]:
        key = _ClassKey(rel, name)
        found: list[Recipe] = [] if required else [self.defaults(rel, name)]
        found += self._read("sites", key)
        try:
            found += self._annotation_recipes(key, required)
            found += self._config_class_recipes(key, required)
            found += self._filled_recipes(key)
            found += self._invented_recipes(key, required)
        except (_Unresolved, RecursionError):
            pass
        if self._notebooks and not is_notebook(rel):  # a module cannot import what a notebook defines
            found = [r for r in found if not any(is_notebook(ref.module) for ref in resolved_refs(r.expr))]
        if self._weighty:
            found = [self._weights_off(r) for r in found]
        root = self.ws.root_of.get(rel, "")
        return policy.rank(r for r in (self._from_root(r, root) for r in found) if r is not None)

    def _from_root(self, recipe: Recipe, root: str) -> Recipe | None:
        """``recipe`` as the worker evaluates it for a class whose module is imported from the
        import root ``root`` (empty: the python path): the modules of that root by their names
        there (``mixtral-moe//model`` is ``model``); None when it names a module that cannot be
        imported from there (another root's, or one of the python path its root shadows)."""
        refs = list(resolved_refs(recipe.expr))
        if not root:
            return None if any(split_rooted(ref.module)[0] for ref in refs) else recipe
        shadowed = self.ws.root_tops.get(root, set())
        for ref in refs:
            where, module = split_rooted(ref.module)
            if (where and where != root) or (not where and module.partition(".")[0] in shadowed):
                return None
        expr = _renamed(recipe.expr, {ref.module: split_rooted(ref.module)[1] for ref in refs})
        assert isinstance(expr, Call)
        return Recipe(expr, recipe.kind, recipe.file, recipe.line, recipe.text, recipe.cell)

    def unbuilt(self, rel: str, name: str, required: tuple[str, ...]) -> str:
        """Why a class with no candidate has none: the required parameters nothing fits (no
        value the repository uses for that name, no placeholder, no workspace module class that
        relates); empty when that is not the reason."""
        key = _ClassKey(rel, name)
        try:
            params, owner = self._parameters(key, required)
            if params is None:
                return ""
            info = self._info(owner)
            open_ = [p for p in params if not self._read("words", p)
                     and not self._placeholders(owner, p, info.annotations.get(p), 0)]
        except (_Unresolved, RecursionError):
            return ""
        if not open_:
            return ""
        names = ", ".join(f"`{p}`" for p in open_)
        it, name = ("it", "that name") if len(open_) == 1 else ("them", "those names")
        ambiguous = ""
        for p in open_:
            fits = [] if info.annotations.get(p) else self._config_fits(owner, p, info.uses.reads_of(p))
            if len(fits) > 1:
                classes = " and ".join(f"`{k.name}`" for k in fits[:3])
                ambiguous += f"; {classes} each have every attribute read off `{p}`: fxscope does not choose between them"
        return (f"nothing fits {names}: no workspace nn.Module class is annotated for {it}, named like {it}, or "
                f"passed for {it} in a construction of the repository fxscope can read, and no value is used "
                f"for {name}{ambiguous}")

    def defaults(self, rel: str, name: str) -> Recipe:
        """``Net()`` at the class's line: the build from the constructor's defaults."""
        return self.recipe(Call(Ref(self.ws.module_of.get(rel) or "", (name,))), "defaults", rel,
                           self._info(_ClassKey(rel, name)).line, f"{name}()")

    def _filled_recipes(self, key: _ClassKey) -> list[Recipe]:
        """The workspace's constructions of ``key`` with arguments discovery could not read
        statically (``len(vocab)``, a loop's result): a keyword one the constructor does not require
        is left out (its default), a required one is filled with the workspace's value for that
        name, else a placeholder; the build is a hypothesis (``filled-site``). A positional one
        that is not a required parameter, or a required one nothing fits, drops the construction."""
        partial = self._read("partial", key)
        if not partial:
            return []
        init = self.ws.class_facts(key.rel, key.name).init
        required = init if init is not None and not any(p.startswith(("*", "<")) for p in init) else None
        annotations = self._info(key).annotations
        out: list[Recipe] = []
        for recipe, holes in partial:
            expr = recipe.expr
            given = {k for k, _ in expr.kwargs}
            fills: list[tuple[int | str, str, list[Expr]]] = []  # (where, parameter, values to try)
            for where, _ in holes:
                if isinstance(where, str) and (required is None or where not in required):
                    continue  # not required: the constructor's default stands
                if isinstance(where, int) and (required is None or where >= len(required)
                                               or required[where] in given):
                    break
                name = where if isinstance(where, str) else required[where]  # type: ignore[index]
                values = self._fills(key, name, annotations.get(name))
                if not values:
                    break
                fills.append((where, name, values))
            else:
                for pick in range(_PER_PARAMETER):  # each value's first choice, then the second ones
                    args, kwargs = list(expr.args), list(expr.kwargs)
                    filled: list[tuple[str, Expr]] = []
                    for where, name, values in fills:
                        value = values[min(pick, len(values) - 1)]
                        filled.append((name, value))
                        if isinstance(where, int):
                            args[where] = value
                        else:
                            kwargs.append((name, value))
                    made = Recipe(Call(expr.func, tuple(args), tuple(kwargs), expr.splats), "filled-site",
                                  recipe.file, recipe.line, recipe.text, recipe.cell, tuple(filled))
                    if made not in out:
                        out.append(made)
        return out

    def _fills(self, key: _ClassKey, name: str, annotation: str | None) -> list[Expr]:
        """The values a ``filled-site`` tries for a required parameter it could not read, best
        first: the workspace's for that name (the most used, the smallest), then a placeholder."""
        values = [value for value, _, _ in self._read("words", name)]
        values += [v for v in self._placeholders(key, name, annotation, 0) if v not in values]
        return values[:_PER_PARAMETER]

    def _invented_recipes(self, key: _ClassKey, required: tuple[str, ...]) -> list[Recipe]:
        """Constructions with invented values: the workspace's values for the parameters' names,
        then placeholders (see :meth:`_invented_calls`)."""
        params, owner = self._parameters(key, required)
        if params is None:
            return []
        info = self._info(key)
        ref = self._class_ref(key, ())
        pinned = functools.partial(self._pinned, key)
        out = [self.recipe(pinned(call), "vocabulary", file, line, _text(key.name, pinned(call)))
               for call, file, line in self.vocabulary_calls(ref, params, owner)]
        line = info.members.get("__init__", info.line)
        out += [self.recipe(pinned(call), "placeholder", key.rel, line, _text(key.name, pinned(call)))
                for call in self._placeholder_calls(owner, ref, params, 0)]
        return out

    def _parameters(self, key: _ClassKey, required: tuple[str, ...]) -> tuple[tuple[str, ...] | None, _ClassKey]:
        """The parameters an invented construction of ``key`` passes, and the class whose
        constructor declares them: its required ones, and those defaulting to ``None`` it asserts
        are given (``assert depth is not None``); for ``**kwargs``, the names its body reads
        from them; for ``**kwargs`` passed on to a workspace class (``ResidualFSQ(dim=d, **kwargs)``,
        ``super().__init__(**kwargs)``), also what that class requires and the call does not give
        (see :meth:`_passed_on`); for ``*args, **kwargs`` passed on to a workspace base, the base's."""
        if any(p.startswith("<") for p in required):
            return None, key
        info = self._info(key)
        own = tuple(p for p in required if not p.startswith("*"))
        stars = len(own) != len(required)
        if stars and info.kwargs_reads:
            own = tuple(dict.fromkeys((*own, *info.kwargs_reads)))
        asserted = self._info(self._init_owner(key)).uses.asserted  # `depth=None`, then `assert exists(depth)`
        own += tuple(p for p in asserted if p not in own)
        if info.uses.passes:
            passed, callee = self._passed_on(key, own, 0)
            if callee is not None:
                return tuple(dict.fromkeys((*own, *passed))), (callee if stars and not own else key)
        if not stars:
            return own, key
        if info.kwargs_reads:
            return info.kwargs_reads, key
        for base in info.bases:
            found = self.ws.expression(key.rel, base) if base else None
            if found is not None and found[0] == "class":
                base_key = _ClassKey(found[1], found[2])
                init = self.ws.class_facts(base_key.rel, base_key.name).init
                if init is not None and not any(p.startswith(("*", "<")) for p in init):
                    return init, base_key
        return info.kwargs_reads, key

    def _callee(self, key: _ClassKey, callee: str) -> _ClassKey | None:
        """The workspace class a call in ``key``'s constructor constructs (``super``: its first
        workspace base)."""
        names = [b for b in self._info(key).bases if b] if callee == "super" else [callee]
        for name in names[:1] if callee != "super" else names:
            found = self.ws.expression(key.rel, name)
            if found is not None and found[0] == "class":
                return _ClassKey(found[1], found[2])
        return None

    def _init_owner(self, key: _ClassKey, seen: frozenset[_ClassKey] = frozenset()) -> _ClassKey:
        """The class whose ``__init__`` ``key`` runs (itself, or the workspace base it inherits it from)."""
        if self._info(key).init_required is not None or key in seen:
            return key
        for base in self._info(key).bases:
            found = self.ws.expression(key.rel, base) if base else None
            if found is not None and found[0] == "class":
                return self._init_owner(_ClassKey(found[1], found[2]), seen | {key})
        return key

    def _passed_on(self, key: _ClassKey, given: tuple[str, ...], depth: int) -> tuple[tuple[str, ...], _ClassKey | None]:
        """What ``key``'s constructor needs through the ``**kwargs`` it passes on: the first call
        passing them to a workspace class (the callee, through the callee's own ``**kwargs`` in
        turn) requires its required parameters and those defaulting to ``None`` it asserts are
        given, less what the call passes itself and ``given``; and that class (None: no such call)."""
        if depth > _MAX_NESTING:
            return (), None
        for callee_name, explicit, positional in self._info(key).uses.passes:
            callee = self._callee(key, callee_name)
            if callee is None or callee == key:
                continue
            init = self.ws.class_facts(callee.rel, callee.name).init
            if init is None or any(p.startswith("<") for p in init):
                return (), None
            declaring = self._info(self._init_owner(callee))
            names = [p for p in init if not p.startswith("*")][positional:]
            names += [p for p in declaring.uses.asserted if p not in names]
            names = [p for p in names if p not in explicit and p not in given]
            if any(p.startswith("*") for p in init) or declaring.uses.passes:
                deeper, _ = self._passed_on(self._init_owner(callee), (*given, *explicit, *names), depth + 1)
                names += [p for p in deeper if p not in names]
            return tuple(names), self._init_owner(callee)
        return (), None

    def _pins(self, key: _ClassKey) -> tuple[tuple[str, Expr], ...]:
        """Values ``key``'s constructor asserts for parameters of the class it passes its
        ``**kwargs`` on to (``assert self.num_classes == 0``): every invented construction passes them."""
        info = self._info(key)
        if not info.uses.pinned:
            return ()
        _, callee = self._passed_on(key, (), 0)
        if callee is None:
            return ()
        declaring = self._info(callee)
        accepted = {*(declaring.init_required or ()), *declaring.defaults, *declaring.uses.none_defaults}
        return tuple((name, Lit(value)) for name, value in info.uses.pinned if name in accepted)

    def _pinned(self, key: _ClassKey, call: Call) -> Call:
        """``call`` with the values ``key``'s constructor pins (see :meth:`_pins`)."""
        pins = [(n, v) for n, v in self._pins(key) if n not in dict(call.kwargs)]
        return Call(call.func, call.args, (*call.kwargs, *pins), call.splats) if pins else call

    def _config_values(self, owner: _ClassKey, param: str, annotation: str | None, depth: int) -> list[Expr]:
        """Configuration objects to pass for ``param`` of ``owner``: for one annotated with a
        workspace (or library) configuration class, that class built as an annotation builds it;
        for an unannotated one whose attributes the class reads (``config.n_embd``), the one
        workspace configuration class that has them all (:meth:`_config_class_for`). When the
        class reads a field of it that defaults to ``None`` (``n_embd: int = None``), the last
        value fills those fields (and the required ones) with the workspace's values for their
        names, else placeholders."""
        if depth >= _MAX_NESTING:
            return []  # a configuration's own fields: plain values
        reads = self._info(owner).uses.reads_of(param)
        cls: _ClassKey | None = None
        if annotation:
            try:
                _, cls, rest = self._resolve_ref(owner.rel, Ref("", tuple(annotation.split("."))))
            except _Unresolved:
                return []
            if cls is not None and (rest or self.ws.class_facts(cls.rel, cls.name).is_module):
                return []
            values = [expr for expr, _ in self._values_for(owner, annotation)]
        else:
            if self._inherits_config_class(owner, set()):
                return []  # a transformers-style model: its `config_class` (see _config_class_recipes)
            cls = self._config_class_for(owner, param, reads)
            if cls is None:
                return []
            values = [expr for expr, _ in self._config_class_values(cls)]
        filled = self._filled_config(cls, reads) if cls is not None else None
        if filled is not None and filled not in values:  # after the class's own way: it may fit
            values = [*values[:_PER_PARAMETER - 1], filled]
        return values[:_PER_PARAMETER]

    def _config_classes(self) -> list[tuple[_ClassKey, frozenset[str]]]:
        """The workspace's data-like classes that can be built by import name, with the attributes
        their instances have (their workspace bases' included)."""
        if not hasattr(self, "_configs"):
            self._configs: list[tuple[_ClassKey, frozenset[str]]] = []
            for rel, summary in self.ws.summaries.items():
                if not self.ws.module_of.get(rel) or is_notebook(rel):
                    continue
                for name, info in summary.classes.items():
                    if info.uses.attributes and not self.ws.class_facts(rel, name).is_module:
                        key = _ClassKey(rel, name)
                        self._configs.append((key, frozenset(self._attributes(key, 0))))
        return self._configs

    def _attributes(self, key: _ClassKey, depth: int) -> set[str]:
        info = self._info(key)
        found = set(info.uses.attributes) | set(info.members)
        for base in info.bases if depth < 4 else ():
            ref = self.ws.expression(key.rel, base) if base else None
            if ref is not None and ref[0] == "class":
                found |= self._attributes(_ClassKey(ref[1], ref[2]), depth + 1)
        return found

    def _config_class_for(self, owner: _ClassKey, param: str, reads: tuple[str, ...]) -> _ClassKey | None:
        """The configuration class an unannotated ``param`` of ``owner`` takes: the one workspace
        class whose instances have every attribute ``owner`` reads off it, among those its file
        defines or imports first, else in the whole workspace (named like a configuration class
        unless the parameter is: ``config``, ``cfg``, ``args``); two or more: none. It must read at
        least two attributes."""
        fits = self._config_fits(owner, param, reads)
        return fits[0] if len(fits) == 1 else None

    #: Attributes a class must read off a parameter for a configuration class to be chosen for it
    #: (one attribute, ``args.dim``, says too little about which class it is).
    _MIN_READS = 2

    def _config_fits(self, owner: _ClassKey, param: str, reads: tuple[str, ...]) -> list[_ClassKey]:
        """The configuration classes that fit ``param`` equally well (see :meth:`_config_class_for`)."""
        if len(reads) < self._MIN_READS:
            return []
        named = bool(_CONFIG_PARAM.search(param))
        fits = [key for key, attrs in self._config_classes()
                if (named or policy.is_config_name(key.name)) and attrs.issuperset(reads) and key != owner]
        if len(fits) <= 1:
            return fits
        summary = self.ws.summaries[owner.rel]
        visible = [key for key in fits if key.rel == owner.rel
                   or any(self.ws.expression(owner.rel, name) == ("class", key.rel, key.name)
                          for name, binding in summary.bindings.items() if binding[0] == "from" and binding[3] == key.name)]
        return visible or fits

    def _config_class_values(self, cls: _ClassKey) -> list[tuple[Expr, str]]:
        """``cls`` built as an annotation naming it is (see :meth:`_values_for`)."""
        try:
            ref = self._class_ref(cls, ())
        except _Unresolved:
            return []
        return self._class_values(cls, ref)

    def _filled_config(self, cls: _ClassKey, reads: tuple[str, ...]) -> Call | None:
        """``cls(field=value, ...)`` for its required fields and those defaulting to ``None`` that
        are read (None: no such field read, or one nothing gives a value)."""
        info = self._info(cls)
        unset = [f for f in info.uses.none_defaults if f in reads]
        init = self.ws.class_facts(cls.rel, cls.name).init
        if not unset or init is None or any(p.startswith(("*", "<")) for p in init):
            return None
        kwargs: list[tuple[str, Expr]] = []
        for name in (*init, *unset):
            words = self._read("words", name)
            value = words[0][0] if words else _placeholder(name, info.annotations.get(name))
            if value is None and info.annotations.get(name) == "int" and policy.searchable(name):
                value = Lit(policy.SEARCH_INTS[0])
            if value is None or isinstance(value, Call):
                return None
            kwargs.append((name, value))
        return Call(self._class_ref(cls, ()), kwargs=tuple(kwargs))

    def _placeholder_calls(self, owner: _ClassKey, ref: Ref, params: tuple[str, ...], depth: int) -> list[Call]:
        """``ref(p=value, ...)`` with a placeholder for every parameter of ``owner``'s constructor:
        a workspace module class that fits a sub-network parameter, a small value its name or
        annotation calls for, else, for a parameter the constructor uses as a size
        (``nn.Linear(k, k)``), a small int (:data:`~fxscope.project.policy.SEARCH_INTS`), what
        its name, annotation and use call for (:mod:`~fxscope.project.placeholders`); a second
        call with the second choice of each parameter that has one, and a third with every size
        larger (:func:`~fxscope.project.placeholders.enlarged`): at most three. Tracing seldom depends
        on sizes: the placeholders decide whether the class builds, and the build is as real as
        any other (a hypothesis: see :mod:`fxscope.job.hypothesis`)."""
        info = self._info(owner)
        choices = [self._placeholders(owner, p, info.annotations.get(p), depth) for p in params]
        if not all(choices):
            return []
        calls: list[Call] = []
        for pick in (0, 1):
            call = Call(ref, kwargs=tuple((p, c[min(pick, len(c) - 1)]) for p, c in zip(params, choices)))
            if call not in calls:
                calls.append(call)
        # the third: every size at its larger value (a `GroupNorm(32, channels)`), tried only
        # when the small ones did not build (the builder keeps the first small build)
        large = Call(ref, kwargs=tuple((p, placeholders.enlarged(p, c[0]) or c[0]) for p, c in zip(params, choices)))
        if large not in calls:
            calls.append(large)
        return calls

    def _placeholders(self, owner: _ClassKey, param: str, annotation: str | None, depth: int) -> list[Expr]:
        """Values to try for ``param``, best first (see :meth:`_placeholder_calls`)."""
        networks = self._networks(owner, param, annotation, depth)
        configs = self._config_values(owner, param, annotation, depth) if annotation or not networks else []
        if configs:  # a configuration object (a sub-network named like the parameter comes first)
            return configs
        use = self._info(owner).uses.kind_of(param)
        called_for = placeholders.small(param, annotation, use)  # shapes, flags, indices, floats...
        value = called_for[0] if called_for else _placeholder(param, annotation)
        if networks and called_for and not isinstance(called_for[0], Call):
            return [*called_for[:1], *networks]  # `scale`: a float before a class named `Scale`
        if networks:
            return networks + ([value] if isinstance(value, Call) else [])
        if called_for:
            return list(called_for)
        if value is None:  # the small search, for an int the class itself says it is
            ints = annotation == "int" or (not annotation and param in self._info(owner).int_params)
            if ints and policy.searchable(param):
                return [placeholders.as_sequence(Lit(v), use) for v in policy.SEARCH_INTS]
            # else a value the workspace passes for that name (`Scale(value, fn)`: fn invented)
            return [word for word, _, _ in self._read("words", param)]
        if isinstance(value, Lit) and _PAIR_NAME.search(param.lower()):
            return [value, Seq("tuple", (value, value))]  # `H, W = self.input_resolution`
        return [placeholders.as_sequence(value, use)]

    def _networks(self, owner: _ClassKey, param: str, annotation: str | None, depth: int) -> list[Expr]:
        """Already-built sub-networks to pass for ``param``: the workspace module class its
        annotation names, else one named like it (``vit``: ``ViT``, ``encoder``: ``Encoder``, the
        class's own file first), each built by its own first recipe."""
        if depth >= _MAX_NESTING:
            return []
        classes: list[_ClassKey] = []
        if annotation:
            try:
                _, cls, rest = self._resolve_ref(owner.rel, Ref("", tuple(annotation.split("."))))
            except _Unresolved:
                cls, rest = None, ()
            if cls is not None and not rest:
                classes.append(cls)
        for call, _, _ in self._read("networks", param):  # what the workspace passes by that name
            passed = self._module_class(call.func)
            if passed is not None and passed != owner and passed not in classes:
                classes.append(passed)
        wanted = param.lower().replace("_", "")
        lowered = self._lowered_classes()
        if len(wanted) >= 3 and wanted in lowered:  # `vit`: ViT, `encoder`: Encoder
            here = [k for k in lowered[wanted] if k.rel == owner.rel]
            near = [k for k in lowered[wanted] if k.rel != owner.rel]
            classes += [k for k in here + (near if len(near) == 1 else []) if k not in classes]
        elif not classes and len(wanted) >= 3:
            # `backbone`: the one class the repository constructs whose name ends in the word
            # (`ResNetBackbone`); several, or none the repository builds: nothing relates
            related = [k for name, keys in lowered.items() if name.endswith(wanted) and name != wanted
                       for k in keys if k != owner and self._read("sites", k)]
            if len(related) == 1:
                classes.append(related[0])
        ways = [self._read("built", (cls, depth + 1)) for cls in classes if cls != owner]
        values: list[Expr] = []
        for rank in range(_PER_PARAMETER):  # each class's smallest way first, then the next ones
            values += [w[rank] for w in ways if len(w) > rank and w[rank] not in values]
        return values[:_PER_PARAMETER]

    def _lowered_classes(self) -> dict[str, list[_ClassKey]]:
        if not hasattr(self, "_by_lowered"):
            self._by_lowered: dict[str, list[_ClassKey]] = {}
            for name, keys in self._by_simple_name.items():
                self._by_lowered.setdefault(name.lower(), []).extend(keys)
        return self._by_lowered

    def _network_exprs(self, key: _ClassKey, depth: int) -> tuple[Expr, ...]:
        """How a sub-network of class ``key`` is built, at most :data:`_PER_PARAMETER` ways, the
        smallest first: with no argument when it needs none, else the smallest of the ways the
        workspace constructs it and of its own invented candidates (a repository's examples are
        often full-size: ``ViT(dim=1024)``), the smallest written one always among them (empty:
        it is not an importable module class). The worker builds them in turn and keeps the
        smallest that builds."""
        if key in self._built:
            return self._built[key]
        self._built[key] = ()  # cycle guard
        facts = self.ws.class_facts(key.rel, key.name)
        if not facts.is_module or facts.abstract or not self.ws.module_of.get(key.rel) or is_notebook(key.rel):
            return ()
        ref = self._class_ref(key, ())
        built: tuple[Expr, ...] = ()
        if facts.init == ():
            built = (Call(ref),)
        elif facts.init is not None:
            written = [r.expr for r in policy.rank(self._read("sites", key))]
            invented: list[Call] = []
            params, owner = self._parameters(key, facts.init)
            if params is not None:
                invented = [c for c, _, _ in self.vocabulary_calls(ref, params, owner, depth)]
                invented += self._placeholder_calls(owner, ref, params, depth)
                invented = [self._pinned(key, c) for c in invented]
            if not written:
                built = tuple(invented[:1])  # the invented candidates' own order (vocabulary first)
            else:
                smallest = sorted(dict.fromkeys([*written[:1], *invented]), key=_expr_cost)
                built = tuple(dict.fromkeys([*smallest[:_PER_PARAMETER - 1], written[0]]))
        self._built[key] = built
        return built

    def _weights_off(self, recipe: Recipe) -> Recipe:
        """``recipe`` with every pretrained-weight parameter off (``pretrained=False``), those the
        workspace's classes default on included: fxscope never downloads."""
        if not self._asks_weights(recipe.expr):
            return recipe
        expr = self._no_download(recipe.expr)
        if expr == recipe.expr:
            return recipe
        assert isinstance(expr, Call)
        name = recipe.expr.func.path[-1] if recipe.kind != "defaults" else recipe.expr.func.path[0]
        return dataclasses.replace(recipe, expr=expr, text=_text(name, expr))

    def _asks_weights(self, expr: Expr) -> bool:
        """Whether a keyword inside ``expr``, or a default of a workspace class it calls, is a
        pretrained-weight parameter (what :meth:`_no_download` turns off)."""
        if isinstance(expr, Call):
            if any(policy.weights_off(k) is not None or self._asks_weights(v) for k, v in expr.kwargs):
                return True
            key = self._by_ref.get((expr.func.module, expr.func.path[0])) if len(expr.func.path) == 1 else None
            if key is not None and any(v and policy.weights_off(k) is not None for k, v in self._info(key).defaults.items()):
                return True
            return any(self._asks_weights(e) for e in (*expr.args, *expr.splats))
        if isinstance(expr, Seq):
            return any(self._asks_weights(i) for i in expr.items)
        if isinstance(expr, Setattrs):
            return self._asks_weights(expr.base) or any(policy.weights_off(k) is not None or self._asks_weights(v)
                                                        for k, v in expr.attrs)
        return False

    def _no_download(self, expr: Expr) -> Expr:
        if isinstance(expr, Call):
            kwargs = [(k, policy.weights_off(k) or self._no_download(v)) for k, v in expr.kwargs]
            key = self._by_ref.get((expr.func.module, expr.func.path[0])) if len(expr.func.path) == 1 else None
            if key is not None:
                given = {k for k, _ in kwargs}
                for param, default in self._info(key).defaults.items():
                    off = policy.weights_off(param)
                    if off is not None and default and param not in given:
                        kwargs.append((param, off))
            return Call(expr.func, tuple(self._no_download(a) for a in expr.args), tuple(kwargs),
                        tuple(self._no_download(s) for s in expr.splats))
        if isinstance(expr, Seq):
            return Seq(expr.kind, tuple(self._no_download(i) for i in expr.items))
        if isinstance(expr, Setattrs):
            return Setattrs(self._no_download(expr.base),
                            tuple((k, policy.weights_off(k) or self._no_download(v)) for k, v in expr.attrs))
        return expr

    def _info(self, key: _ClassKey) -> ClassInfo:
        return self.ws.summaries[key.rel].classes[key.name]

    def _configures(self, key: _ClassKey, call: Call) -> bool:
        """Whether a YAML mapping that names ``key`` gives what its constructor requires (a
        ``logging_params`` mapping that only shares the model's ``name`` does not)."""
        info = self._info(key)
        given = {name for name, _ in call.kwargs}
        required = info.kwargs_reads if info.kwargs_reads is not None else info.init_required or ()
        return bool(given) and all(p in given for p in required if not p.startswith(("*", "<")))

    def _values_for(self, key: _ClassKey, annotation: str) -> list[tuple[Expr, str]]:
        """Values to pass for a parameter annotated ``annotation`` in ``key``'s file."""
        try:
            ref, cls, rest = self._resolve_ref(key.rel, Ref("", tuple(annotation.split("."))))
        except _Unresolved:
            return []
        if cls is not None and not rest:
            return self._class_values(cls, ref)
        if cls is None and policy.is_config_name(ref.path[-1]):
            return [(Call(ref), f"{ref.path[-1]}()")]
        return []

    def _class_values(self, cls: _ClassKey, ref: Ref) -> list[tuple[Expr, str]]:
        """Values of workspace class ``cls`` (not a module) to pass for a parameter that takes one."""
        facts = self.ws.class_facts(cls.rel, cls.name)
        if facts.is_module:
            return []  # a sub-network: built from its own recipes (see _networks)
        values: list[tuple[Expr, str]] = []
        if facts.init == ():
            values.append((Call(ref), f"{cls.name}()"))
        elif facts.init:
            for call, _, _ in self.vocabulary_calls(ref, facts.init)[:1]:
                values.append((call, _text(cls.name, call)))
        for member in self._info(cls).members:
            if _DEFAULT_FACTORY.match(member):  # `Config.get_default_config()`, `Config.small()`
                values.append((Call(Ref(ref.module, (*ref.path, member))), f"{cls.name}.{member}()"))
        for recipe in self._read("sites", cls)[:_PER_PARAMETER]:
            values.append((recipe.expr, recipe.text))
        if not values and facts.init and not any(p.startswith(("*", "<")) for p in facts.init):
            for call in self._placeholder_calls(cls, ref, facts.init, _MAX_NESTING)[:1]:
                values.append((call, _text(cls.name, call)))  # a config dataclass with required fields
        return values[:_PER_PARAMETER]

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
            recipes.append(self.recipe(call, "annotation", key.rel, line, text))
        return recipes

    def _config_class_recipes(self, key: _ClassKey, required: tuple[str, ...]) -> list[Recipe]:
        if len(required) != 1 or required[0].startswith("*"):
            return []
        info = self._info(key)
        ref = self._class_ref(key, ())
        if info.config_class:
            values = self._values_for(key, info.config_class)
            return [self.recipe(Call(ref, (expr,)), "config-class", key.rel, info.members.get("config_class", info.line),
                                f"{key.name}({text})") for expr, text in values]
        if self._inherits_config_class(key, set()):
            config = Call(self._class_ref(key, ("config_class",)))
            return [self.recipe(Call(ref, (config,)), "config-class", key.rel, info.line,
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
            if found[0] == "ext" and found[1].startswith("transformers.") and _HF_MODEL.search(found[1]):
                return True  # a pretrained model class, or a model class deriving from one (`BertModel`)
        return False


#: Placeholder values by parameter name (searched in order) and by annotation.
_NAMED_PLACEHOLDERS: tuple[tuple[re.Pattern[str], Expr], ...] = tuple(
    (re.compile(pattern), value) for pattern, value in (
        (r"(^|_)(depth|depths|layers?|n_?layers?|num_(hidden_)?layers|blocks?|n_?blocks|num_blocks|stages?|levels?)$", Lit(2)),
        (r"(^|_)(heads?|n_?heads?|num_(attention_)?heads|nhead|groups?|num_groups)$", Lit(2)),
        # a grid of tokens (Swin's `input_resolution`): windows of 4, 7, 8, 14 and two halvings tile 56
        (r"(^|_)(input_resolution|patches_resolution)$", Lit(56)),
        (r"(^|_)(image_size|img_size|resolution|input_size)$", Lit(32)),
        (r"(^|_)(patch_size|patch)$", Lit(8)),
        (r"(^|_)(kernel_size|kernel)$", Lit(3)),
        (r"(^|_)(stride|padding|dilation)$", Lit(1)),
        (r"(^|_)(vocab(_size)?|n_?vocab|num_tokens|num_classes|n_?classes|classes|num_embeddings|codebook_size|n_?tokens?)$", Lit(16)),
        (r"(^|_)(upscale_factor|scale_factor|factor|ratio|upscale)$", Lit(2)),
        (r"(^|_)(seq_len|max_seq_len|block_size|n_?ctx|context(_length)?|max_len|max_length|max_position(_embeddings)?|window(_size)?|length)$", Lit(16)),
        (r"(^|_)(dropout|p_?drop|drop(_rate|_path|_prob)?|attn_drop|proj_drop)$", Lit(0.0)),
        (r"(^|_)(eps|epsilon)$", Lit(1e-5)),
        (r"(^|_)(dims?|d_model|d_?[a-z]*|[a-z_]*dim(ension)?s?|hidden(_size|_dim)?|channels?|in_channels|out_channels|"
         r"in_features|out_features|features|width|n_?embd|embed(_dim|ding_dim|_size)?|emb(_dim)?|emsize|state|n_?state|"
         r"n_?inp|n_?hid|n_?out|size)$", Lit(16)),
        (r"^(fn|net|module|block|layer|submodule|body|inner|\w+_(fn|net|module))$", Call(Ref("torch", ("nn", "Identity")))),
    ))
#: Parameters that may hold a pair (a resolution): tried as an int, then as a pair of it.
_PAIR_NAME = re.compile(r"(resolution|_hw|grid_size|fmap_size|feat(ure)?_size|image_size|img_size|input_size|"
                        r"window_size|patch_size|kernel_size)$")
_TYPED_PLACEHOLDERS: dict[str, Expr] = {"int": Lit(8), "float": Lit(1.0), "bool": Lit(False),
                                        "nn.Module": Call(Ref("torch", ("nn", "Identity"))),
                                        "torch.nn.Module": Call(Ref("torch", ("nn", "Identity")))}


def _expr_cost(expr: Expr) -> tuple[int, int]:
    """The size estimate of a construction (:meth:`~fxscope.model.recipe.Recipe.cost`)."""
    assert isinstance(expr, Call)
    return Recipe(expr, "placeholder", "", 1, "").cost()


@functools.lru_cache(maxsize=4096)
def _placeholder(name: str, annotation: str | None) -> Expr | None:
    """A small value for a parameter from its name, else its annotation; None when neither says."""
    lowered = name.lower()
    for pattern, value in _NAMED_PLACEHOLDERS:
        if pattern.search(lowered):
            return value
    return _TYPED_PLACEHOLDERS.get(annotation or "")


def _plain(value: Expr) -> bool:
    """Plain data a keyword may take anywhere: a literal, a reference, a sequence of literals."""
    if isinstance(value, Seq):
        return all(isinstance(i, Lit) for i in value.items)
    return isinstance(value, (Lit, RefExpr))


@functools.lru_cache(maxsize=1 << 14)
def _text(name: str, call: Call) -> str:
    """``Name(p=v, ...)`` as a user would write it (references by their last two names)."""
    _, code, _ = render_python(call)
    return f"{name}(" + code.partition("(")[2]


def _renamed(expr: Expr, modules: dict[str, str]) -> Expr:
    """``expr`` with the module of every reference renamed by ``modules`` (old -> new)."""
    if isinstance(expr, Call):
        return Call(Ref(modules.get(expr.func.module, expr.func.module), expr.func.path),
                    tuple(_renamed(a, modules) for a in expr.args),
                    tuple((k, _renamed(v, modules)) for k, v in expr.kwargs),
                    tuple(_renamed(s, modules) for s in expr.splats))
    if isinstance(expr, RefExpr):
        return RefExpr(Ref(modules.get(expr.ref.module, expr.ref.module), expr.ref.path))
    if isinstance(expr, Setattrs):
        return Setattrs(_renamed(expr.base, modules), tuple((k, _renamed(v, modules)) for k, v in expr.attrs))
    if isinstance(expr, Seq):
        return Seq(expr.kind, tuple(_renamed(i, modules) for i in expr.items))
    if isinstance(expr, DictExpr):
        return DictExpr(tuple((_renamed(k, modules), _renamed(v, modules)) for k, v in expr.items))
    return expr


def resolved_refs(expr: Expr) -> Iterable[Ref]:
    """Every reference inside a resolved expression (the callee first)."""
    if isinstance(expr, Call):
        yield expr.func
        for child in (*expr.args, *(v for _, v in expr.kwargs), *expr.splats):
            yield from resolved_refs(child)
    elif isinstance(expr, RefExpr):
        yield expr.ref
    elif isinstance(expr, Setattrs):
        yield from resolved_refs(expr.base)
        for _, v in expr.attrs:
            yield from resolved_refs(v)
    elif isinstance(expr, Seq):
        for item in expr.items:
            yield from resolved_refs(item)
    elif isinstance(expr, DictExpr):
        for k, v in expr.items:
            yield from resolved_refs(k)
            yield from resolved_refs(v)
