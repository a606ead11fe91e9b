"""Values a constructor parameter calls for, from its name, its annotation and how ``__init__`` uses it.

Zero-config builds a class whose parameters nothing in the workspace gives a value with small
invented ones (the ``placeholder`` recipes of :mod:`fxscope.project.recipes`). Besides the sizes,
depths and sub-networks the recipe index knows by name, these rules say what a parameter holds:

- a shape (``input_shape``, ``img_shape``, ``*_shape``): a ``(C, H, W)`` tuple, as many items as
  the body unpacks, with room for a few halvings (``(3, 64, 64)``, then ``(3, 32, 32)``);
- a flag (``use_*``, ``is_*``, ``has_*``, ``with_*``, ``learn_*``, a ``bool`` annotation, a
  parameter the body only tests for truth): ``False``, then ``True``;
- an index (``*_ind``, ``*_index``, ``*_idx``, ``*_id``, ``layer_id``): ``0``, then ``1``;
- a length (``*_len``, ``*_length``) or a ``dim_*`` size: 16;
- a float (``scale``, ``*_scale``, ``value``, ``temperature``, a ``float`` annotation): ``1.0``;
- an activation (``activation``, ``act``, ``nonlinearity``): ``torch.nn.GELU()``, then the class;
  an ``act_layer`` the other way round (timm calls it);
- a parameter the body iterates (``tuple(shifts)``) that no rule sizes: ``(0, 1)``; one it unpacks
  or subscripts (``fpn_dims[2]``) whose value is an int: a tuple of that int, long enough.

:func:`enlarged` gives the third, larger candidate of a size (128: a ``GroupNorm`` of 32 groups, a
``dim // 16`` fed to a ``GroupNorm(8, ...)``), tried only when the small ones did not build.
Every value here is invented: a build made with them is a hypothesis (:mod:`fxscope.job.hypothesis`).

>>> [render(v) for v in small("input_shape", None, "")]
['(3, 64, 64)', '(3, 32, 32)']
>>> [render(v) for v in small("use_conv", None, "")], [render(v) for v in small("flag", None, "flag")]
(['False', 'True'], ['False', 'True'])
>>> [render(v) for v in small("prev_layer_ind", None, "")], [render(v) for v in small("shifts", None, "iter")]
(['0', '1'], ['(0, 1)'])
>>> render(enlarged("channels", Lit(16))), enlarged("depth", Lit(2)), render(enlarged("img_shape", small("img_shape", None, "")[0]))
('128', None, '(3, 128, 128)')
"""

from __future__ import annotations

import functools
import re

from fxscope.model.recipe import Call, Expr, Lit, Ref, RefExpr, Seq, render_python

__all__ = ["LARGE", "as_sequence", "enlarged", "render", "small"]

#: The larger size tried when the small ones did not build.
LARGE = 128
#: A shape's spatial sizes, in the order tried (six halvings, then five), and its channels.
_SPATIAL = (64, 32)
_CHANNELS = 3

_SHAPE = re.compile(r"(^|_)shape$")
_FLAG = re.compile(r"^(use|is|has|with|learn|learned|enable|apply|do)_\w+$")
_NOT_A_FLAG = re.compile(r"_(map|dict|list|fn|func|ids?|mask|layer|cls|type|mode|name|path)$")
_INDEX = re.compile(r"(^|_)(ind|index|idx|id)$|^layer_(num|no|number|i)$")
_LENGTH = re.compile(r"(^|_)(len|length)$|^dims?_(?!mult|ratio|factor)[a-z]\w*$")
_FLOAT = re.compile(r"(^|_)(scale|value|temperature|temp|tau)$")
_ACTIVATION = re.compile(r"^(activation|act|nonlinearity|nonlin|act_fn|activation_fn)$")
_ACT_CLASS = re.compile(r"^(act_layer|activation_layer|act_cls|activation_cls)$")
#: Sizes never enlarged: they tile an input or a sequence rather than size a layer.
_NOT_ENLARGED = re.compile(r"(patch|kernel|window|stride|resolution|len|length|ctx|block_size|seq|pad|dilation)",
                           re.IGNORECASE)

_GELU = Ref("torch", ("nn", "GELU"))


def _shape(items: int, spatial: int) -> Seq:
    """A shape of ``items`` sizes: ``(C, H, W)``; ``(H, W)``; ``(B, C, H, W)``; ``(C,)``."""
    if items <= 1:
        sizes: tuple[int, ...] = (_CHANNELS,)
    elif items == 2:
        sizes = (spatial, spatial)
    else:
        sizes = (*((1,) * (items - 3)), _CHANNELS, spatial, spatial)
    return Seq("tuple", tuple(Lit(s) for s in sizes))


def _items(use: str) -> int | None:
    """How many items a sequence parameter needs: exactly as many as the body unpacks, at least
    one more than the largest constant index; None when the body does neither."""
    kind, _, count = use.partition(":")
    if kind in ("unpack", "index") and count.isdigit():
        return int(count)
    return None


@functools.lru_cache(maxsize=4096)
def small(name: str, annotation: str | None, use: str) -> tuple[Expr, ...]:
    """The values a parameter ``name`` (annotated ``annotation``, used by ``__init__`` as ``use``:
    see :attr:`fxscope.project._uses.InitUses.kinds`) calls for, in the order tried;
    empty when none of these rules applies."""
    lowered = name.lower()
    if lowered == "normalized_shape":  # a LayerNorm's: its width
        return (Lit(16),)
    if _SHAPE.search(lowered) and annotation in (None, "tuple", "list", "Tuple", "Sequence"):
        items = _items(use)
        count = items if use.startswith("unpack") and items else max(items or 0, 3)
        return tuple(_shape(count, spatial) for spatial in _SPATIAL)
    if annotation == "bool" or use == "flag" or (_FLAG.match(lowered) and not _NOT_A_FLAG.search(lowered)
                                                  and annotation in (None, "bool")):
        return (Lit(False), Lit(True))
    if _ACTIVATION.match(lowered) and annotation in (None, "Callable", "Module", "nn.Module", "torch.nn.Module"):
        return (Call(_GELU), RefExpr(_GELU))
    if annotation not in (None, "int", "float"):
        return ()
    if _INDEX.search(lowered) and annotation != "float":
        return (Lit(0), Lit(1))
    if _LENGTH.search(lowered) and annotation != "float":
        return (Lit(16),)
    if _FLOAT.search(lowered) or annotation == "float":
        return (Lit(1.0),)
    if _ACT_CLASS.match(lowered) and annotation is None:
        return (RefExpr(_GELU), Call(_GELU))
    if use == "iter":
        return (Seq("tuple", (Lit(0), Lit(1))),)
    return ()


def as_sequence(value: Expr, use: str) -> Expr:
    """``value`` as the sequence the body needs when it unpacks, subscripts or iterates the
    parameter and ``value`` is an int (``fpn_dims[2]`` with 16: ``(16, 16, 16)``); else ``value``."""
    if not (isinstance(value, Lit) and type(value.value) is int):
        return value
    items = _items(use) or (2 if use == "iter" else None)
    return Seq("tuple", (value,) * items) if items else value


def enlarged(name: str, value: Expr) -> Expr | None:
    """The larger candidate of a size placeholder (:data:`LARGE` for each of its sizes of 8 or
    more: a shape keeps its channels), None when ``value`` is not a size or nothing changes."""
    if _NOT_ENLARGED.search(name):
        return None
    if _size(value):
        return Lit(LARGE)
    if isinstance(value, Seq) and value.items and all(isinstance(i, Lit) and type(i.value) is int for i in value.items):
        items = tuple(Lit(LARGE) if _size(i) else i for i in value.items)
        return Seq(value.kind, items) if items != value.items else None
    return None


def _size(value: Expr) -> bool:
    """An int placeholder large enough to be a width (not a count of heads, groups or layers)."""
    return isinstance(value, Lit) and isinstance(value.value, int) and not isinstance(value.value, bool) \
        and 8 <= value.value < LARGE


def render(value: Expr) -> str:
    """A value as Python source (``(3, 64, 64)``, ``torch.nn.GELU()``)."""
    return render_python(value)[1]
