"""The construction policy: what fxscope builds on its own (zero-config), with what, and in which order.

One torch-free home for the rules that discovery (:mod:`fxscope.project.recipes`), the builder
(:mod:`fxscope.job.construct`) and the evaluators (the recipe interpreter there and the safe
executor of notebooks and scripts, :mod:`fxscope.job.safe_module`) share:

- which classes are *configuration classes* (built freely: they only record settings);
- which methods *fetch* rather than configure (``from_pretrained``, ``load_checkpoint``): never
  called; which parameters ask for pretrained weights (``pretrained=True``): always passed off;
- the bounds on what an evaluated statement may compute;
- the candidates and their ranking: what the workspace writes out first, invented values last,
  smaller first; how many are tried, and which build is kept.

>>> is_config_name("GPTConfig"), is_config_name("ModelArgs"), is_config_name("Transformer")
(True, True, False)
>>> fetches("from_pretrained"), fetches("load_checkpoint"), fetches("small")
(True, True, False)
>>> [weights_off(n) for n in ("pretrained", "pretrained_backbone", "weights", "dim")]
[Lit(value=False), Lit(value=False), Lit(value=None), None]
>>> plausible("dim", -1), plausible("padding", 0), plausible("depth", 0), plausible("depth", 2)
(False, True, False, True)
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Iterable

from fxscope.model.recipe import RECIPE_KINDS, Expr, Lit, Recipe

__all__ = ["CONFIG_SUFFIXES", "MAX_ATTEMPTS", "MAX_BITS", "MAX_BUILDS", "MAX_ITEMS", "MAX_RECIPES", "MAX_VISITS",
           "PER_PARAMETER", "SEARCH_INTS", "SMALL_ENOUGH", "better_build", "download_note", "enough", "fetches",
           "is_config_name", "plausible", "rank", "searchable", "weights_off"]

# -- configuration classes -----------------------------------------------------------------------
#: Class-name suffixes of configuration classes (a class that only records settings).
CONFIG_SUFFIXES = ("Config", "Configuration", "Args", "Arguments", "Params", "Parameters", "Settings", "Options",
                   "HParams", "Hparams", "Hyperparameters")


@functools.lru_cache(maxsize=4096)
def is_config_name(name: str) -> bool:
    """Whether a class called ``name`` is named like a configuration class."""
    return name.endswith(CONFIG_SUFFIXES)


# -- no downloads --------------------------------------------------------------------------------
#: Method names that read weights, checkpoints, files or the network: never called by fxscope.
_FETCHING = re.compile(r"pretrained|download|checkpoint|hub|url|load|file", re.IGNORECASE)
#: Parameters that ask for pretrained weights, and the value that turns them off.
_PRETRAINED_FLAG = re.compile(r"^(use_|load_|with_)?pretrain(ed)?(_\w+)?$|^(download|load_weights|from_pretrained)$",
                              re.IGNORECASE)
_WEIGHTS = re.compile(r"^(weights|pretrained_(path|weights|ckpt|checkpoint|model)|checkpoint(_path)?|ckpt(_path)?|"
                      r"weights_path|init_ckpt)$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def fetches(method: str) -> bool:
    """Whether a method called ``method`` fetches rather than builds (``from_pretrained``)."""
    return bool(_FETCHING.search(method))


@functools.lru_cache(maxsize=4096)
def weights_off(parameter: str) -> Lit | None:
    """The value every candidate passes for a parameter that asks for pretrained weights
    (``pretrained=False``, ``weights=None``), None for any other parameter."""
    if _PRETRAINED_FLAG.search(parameter):
        return Lit(False)
    if _WEIGHTS.search(parameter):
        return Lit(None)
    return None


def download_note(error: str) -> str | None:
    """What "what was tried" says about a candidate whose error shows it reached for weights or the
    network; None for any other error."""
    text = error.lower()
    if "reads weights or the network" in text:
        return None  # refused before running: the error says so already
    if any(word in text for word in ("urlopen", "urlerror", "connection", "name resolution", "sandbox blocked connect",
                                     "http error", "httperror", "download", "hf_hub", "huggingface.co")):
        return "it tried to download weights: fxscope never downloads, pass `pretrained=False` in a factory"
    return None


# -- bounds of evaluated statements --------------------------------------------------------------
#: Items of a container a statement builds, bits of an integer it computes, elements a builtin
#: or comparison may visit (``"x" * 10**9``, ``x = x ** 4096`` are not configurations).
MAX_ITEMS = 1_000_000
MAX_BITS = 1 << 16
MAX_VISITS = 1_000_000

# -- candidates ------------------------------------------------------------------------------------
#: Candidates kept per class, and values tried per parameter (annotation, sub-network, search).
MAX_RECIPES = 8
PER_PARAMETER = 2
#: Builds compared to find the smallest, candidates tried at most, and the size (modules) of a
#: build small enough to keep without trying the others.
MAX_BUILDS = 3
MAX_ATTEMPTS = 10
SMALL_ENOUGH = 100
#: The small search for an int parameter nothing else gives a value: these, in order.
SEARCH_INTS = (16, 2)
#: Parameters that count or size something (an int of 0 or less builds nothing useful).
_SIZE_NAME = re.compile(r"(dim|size|channels?|features|width|heads?|layers?|depths?|blocks?|classes|tokens|vocab|"
                        r"embd|embed|hidden|len(gth)?|num_\w+|n_\w+|_?mult|ratio|factor|stages?|levels?|groups?)$|"
                        r"^(d|n|h|w)_?\w*$", re.IGNORECASE)
#: Parameters no int fits: configurations, sub-networks, callables, data (never searched).
_NOT_A_NUMBER = re.compile(r"(^|_)(config|cfg|conf|args|opts?|options|hparams|h?params|settings|kwargs|model|net|"
                           r"network|encoder|decoder|backbone|teacher|student|vit|transformer|fn|func|callable|"
                           r"modules?|layers?_cls|block_cls|norm_layer|act_layer|activation|tokenizer|name|path|"
                           r"file|dir|mode|type|device|dtype)$", re.IGNORECASE)
#: Kinds whose values the workspace does not write out for this class: tried after the rest.
_GUESSES = ("filled-site", "vocabulary", "placeholder")


def plausible(name: str, value: int | float | str | bool | None) -> bool:
    """Whether ``value`` can be what a constructor parameter ``name`` takes when a value for that
    name is borrowed from elsewhere: a negative int is an axis (``softmax(dim=-1)``), never a
    size, and a size is positive."""
    if isinstance(value, bool) or not isinstance(value, int):
        return True
    if value < 0:
        return False
    return value > 0 or not _SIZE_NAME.search(name)


@functools.lru_cache(maxsize=4096)
def searchable(name: str) -> bool:
    """Whether the small int search (:data:`SEARCH_INTS`) may try values for a parameter ``name``
    that nothing else gives a value (not a configuration, a sub-network, a callable, a name)."""
    return not _NOT_A_NUMBER.search(name)


def rank(found: Iterable[Recipe]) -> tuple[Recipe, ...]:
    """The candidates in the order they are tried, each construction once, at most
    :data:`MAX_RECIPES`: the constructor's defaults first, then what the workspace writes out, then
    guesses (its constructions with what could not be read filled in, its values for the names
    elsewhere, then placeholders); within each, smallest first
    (fewest layers written, then smallest sizes; placeholders in the order they were made), then
    by kind, file and line."""
    order = {kind: i for i, kind in enumerate(RECIPE_KINDS)}

    def key(r: Recipe) -> tuple[int, tuple[int, int], int, str, int]:
        stage = 0 if r.kind == "defaults" else (_GUESSES.index(r.kind) + 2 if r.kind in _GUESSES else 1)
        # placeholders keep the order they were made in: each parameter's first choice first
        return stage, (0, 0) if r.kind == "placeholder" else _cost(r), order[r.kind], r.file, r.line

    unique: dict[Expr, Recipe] = {}
    for recipe in sorted(found, key=key):
        unique.setdefault(recipe.expr, recipe)
    return tuple(itertools.islice(unique.values(), MAX_RECIPES))


@functools.lru_cache(maxsize=1 << 14)
def _cost(recipe: Recipe) -> tuple[int, int]:
    return recipe.cost()  # recipes come again after every edit: sized once


def better_build(size: tuple[int, int], best: tuple[int, int] | None) -> bool:
    """Whether a build of ``size`` (modules, parameters) is kept over the ``best`` so far: fewer
    modules, then fewer parameters (traces stay fast)."""
    return best is None or size < best


def enough(size: tuple[int, int], builds: int) -> bool:
    """Whether the builder stops after ``builds`` successful builds, the best of ``size``."""
    return builds >= MAX_BUILDS or size[0] <= SMALL_ENOUGH
