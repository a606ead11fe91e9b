"""Build recipes: how fxscope constructs a model class on its own (zero-config), as plain data.

A recipe is a small expression tree that the worker evaluates without running any other code: it
is made only of literals, containers, references to importable names (``pkg.model.Config``,
``torch.nn.GELU``) and calls of such names. Discovery finds recipes in what the repository already
says (constructor defaults, config annotations, call sites in tests, scripts, docstrings and README
code blocks); the worker evaluates them (see ``fxscope.job.construct``), keeps the smallest build
that works, and the report names the one used (its provenance).

Names are resolved before a recipe leaves discovery: a :class:`Ref` is an import name and an
attribute path, never a name of the snippet it came from.

>>> net = Ref("pkg.model", ("Net",))
>>> recipe = Recipe(Call(net, kwargs=(("dim", Lit(64)), ("cfg", Call(Ref("pkg.model", ("Config",)))))),
...                 "readme", "README.md", 42, "Net(dim=64, cfg=Config())")
>>> Recipe.from_json(recipe.to_json()) == recipe
True
>>> recipe.origin, recipe.describe()
('README.md:42', 'Net(dim=64, cfg=Config()) as in README.md:42')
>>> recipe.cost()
(0, 64)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union

__all__ = ["INVENTED_KINDS", "Call", "Expr", "Lit", "Ref", "RefExpr", "Recipe", "RECIPE_KINDS", "Seq", "Setattrs", "DictExpr",
           "expr_from_json", "expr_to_json"]

#: Where a recipe came from, in the order sources are preferred when costs tie.
RECIPE_KINDS = ("defaults", "annotation", "config-class", "call-site", "docstring", "readme", "config-file",
                "filled-site", "vocabulary", "placeholder")
#: Kinds whose values fxscope made up (no call site of the class says them all): a build from one is
#: a hypothesis, rejected when its failure comes from such a value (see ``fxscope.job.hypothesis``).
#: A ``filled-site`` is a construction of the repository with the arguments fxscope could not read
#: statically (``len(vocab)``, a loop's result) filled with invented values (``filled`` says which).
INVENTED_KINDS = ("filled-site", "vocabulary", "placeholder")

#: Keyword names that count layers or blocks: a recipe is small when these are.
_DEPTH_NAME = re.compile(r"(^|_)(n_?)?(num_)?(hidden_)?(layers?|blocks?|depths?|stages?|n_layer|levels?)$|^depth")


@dataclass(frozen=True)
class Ref:
    """An importable name: ``module`` (an import name) and the attribute ``path`` inside it."""

    module: str
    path: tuple[str, ...]

    @property
    def dotted(self) -> str:
        """``module.path`` as one dotted name."""
        return ".".join((self.module, *self.path))

    def to_json(self) -> list[Any]:
        """``[module, [attr, ...]]``."""
        return [self.module, list(self.path)]

    @classmethod
    def from_json(cls, data: Any) -> Ref:
        """Read :meth:`to_json` output (raises ValueError on anything else)."""
        if (not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], str)
                or not isinstance(data[1], list) or not data[1] or not all(isinstance(p, str) for p in data[1])):
            raise ValueError(f"not a reference: {data!r}")
        return cls(data[0], tuple(data[1]))


@dataclass(frozen=True)
class Lit:
    """A literal: int, float, str, bool or None."""

    value: int | float | str | bool | None


@dataclass(frozen=True)
class Seq:
    """A tuple, list or set display of expressions (``kind`` says which)."""

    kind: str
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class DictExpr:
    """A dict display (string keys or literal keys)."""

    items: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True)
class RefExpr:
    """A reference to a name used as a value (``act_layer=nn.GELU``, ``dtype=torch.float32``)."""

    ref: Ref


@dataclass(frozen=True)
class Call:
    """A call of an importable name with positional, keyword and ``**mapping`` arguments."""

    func: Ref
    args: tuple[Expr, ...] = ()
    kwargs: tuple[tuple[str, Expr], ...] = ()
    splats: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Setattrs:
    """An object with attributes set after it was made: ``config = Config.default();
    config.n_layer = 2`` is ``Setattrs(Call(Config.default), (("n_layer", Lit(2)),))``."""

    base: Expr
    attrs: tuple[tuple[str, Expr], ...]


Expr = Union[Lit, Seq, DictExpr, RefExpr, Call, Setattrs]


def expr_to_json(expr: Expr) -> Any:
    """The JSON form of an expression: ``{"lit": v}``, ``{"seq": kind, "items": [...]}``,
    ``{"dict": [[k, v], ...]}``, ``{"ref": ref}``, ``{"call": ref, "args": [...], "kwargs": [[k, v],
    ...], "splats": [...]}``."""
    if isinstance(expr, Lit):
        return {"lit": expr.value}
    if isinstance(expr, Seq):
        return {"seq": expr.kind, "items": [expr_to_json(i) for i in expr.items]}
    if isinstance(expr, DictExpr):
        return {"dict": [[expr_to_json(k), expr_to_json(v)] for k, v in expr.items]}
    if isinstance(expr, RefExpr):
        return {"ref": expr.ref.to_json()}
    if isinstance(expr, Setattrs):
        return {"setattrs": expr_to_json(expr.base), "attrs": [[k, expr_to_json(v)] for k, v in expr.attrs]}
    out: dict[str, Any] = {"call": expr.func.to_json()}
    if expr.args:
        out["args"] = [expr_to_json(a) for a in expr.args]
    if expr.kwargs:
        out["kwargs"] = [[k, expr_to_json(v)] for k, v in expr.kwargs]
    if expr.splats:
        out["splats"] = [expr_to_json(s) for s in expr.splats]
    return out


def expr_from_json(data: Any, depth: int = 0) -> Expr:
    """Read :func:`expr_to_json` output; raises ValueError on anything malformed (a cache or job
    that was tampered with is refused, never half-read)."""
    if depth > 32 or not isinstance(data, dict):
        raise ValueError("malformed recipe expression")
    if "lit" in data:
        value = data["lit"]
        if value is not None and not isinstance(value, (int, float, str, bool)):
            raise ValueError(f"not a literal: {value!r}")
        return Lit(value)
    if "seq" in data:
        kind = data["seq"]
        if kind not in ("tuple", "list", "set") or not isinstance(data.get("items"), list):
            raise ValueError("malformed sequence")
        return Seq(kind, tuple(expr_from_json(i, depth + 1) for i in data["items"]))
    if "dict" in data:
        items = data["dict"]
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise ValueError("malformed dict")
        return DictExpr(tuple((expr_from_json(k, depth + 1), expr_from_json(v, depth + 1)) for k, v in items))
    if "ref" in data:
        return RefExpr(Ref.from_json(data["ref"]))
    if "setattrs" in data:
        attrs = data.get("attrs")
        if not isinstance(attrs, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and p[0].isidentifier() for p in attrs):
            raise ValueError("malformed attributes")
        return Setattrs(expr_from_json(data["setattrs"], depth + 1),
                        tuple((k, expr_from_json(v, depth + 1)) for k, v in attrs))
    if "call" in data:
        kwargs = data.get("kwargs") or []
        if not isinstance(kwargs, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in kwargs):
            raise ValueError("malformed keyword arguments")
        args, splats = data.get("args") or [], data.get("splats") or []
        if not isinstance(args, list) or not isinstance(splats, list):
            raise ValueError("malformed arguments")
        return Call(Ref.from_json(data["call"]), tuple(expr_from_json(a, depth + 1) for a in args),
                    tuple((k, expr_from_json(v, depth + 1)) for k, v in kwargs),
                    tuple(expr_from_json(s, depth + 1) for s in splats))
    raise ValueError("malformed recipe expression")


def _numbers(expr: Expr, name: str = "") -> tuple[int, int]:
    """(sum of layer-count literals, sum of every other int literal) inside ``expr``."""
    if isinstance(expr, Lit):
        if isinstance(expr.value, int) and not isinstance(expr.value, bool) and expr.value > 0:
            return (expr.value, 0) if _DEPTH_NAME.search(name.lower()) else (0, expr.value)
        return 0, 0
    children: list[tuple[str, Expr]] = []
    if isinstance(expr, Seq):
        children = [(name, i) for i in expr.items]
    elif isinstance(expr, DictExpr):
        children = [(k.value if isinstance(k, Lit) and isinstance(k.value, str) else name, v)
                    for k, v in expr.items]
    elif isinstance(expr, Call):
        children = [("", a) for a in expr.args] + list(expr.kwargs) + [("", s) for s in expr.splats]
    elif isinstance(expr, Setattrs):
        children = [("", expr.base), *expr.attrs]
    depth = other = 0
    for child_name, child in children:
        d, o = _numbers(child, child_name)
        depth, other = depth + d, other + o
    return depth, other


@dataclass(frozen=True)
class Recipe:
    """One way to construct a target class: ``expr`` (a call), where it was found (``kind``,
    ``file``, 1-based ``line``; ``file`` is root-relative) and the ``text`` it was written as.
    In a notebook, ``cell`` is the cell and ``line`` counts lines inside it. ``filled``: of a
    ``filled-site``, the parameters fxscope filled in, with their invented values."""

    expr: Call
    kind: str
    file: str
    line: int
    text: str
    cell: int | None = None
    filled: tuple[tuple[str, Expr], ...] = ()

    @property
    def origin(self) -> str:
        """``file:line`` (``file:cell N:line`` in a notebook)."""
        return f"{self.file}:cell {self.cell}:{self.line}" if self.cell is not None else f"{self.file}:{self.line}"

    def provenance(self) -> str:
        """Where the build came from, as a phrase: ``as in README.md:42``, ``from the annotation
        at model.py:118``, ``from its config_class at model.py:9``, ``from its defaults``."""
        if self.kind == "defaults":
            return "from its defaults"
        if self.kind == "annotation":
            return f"from the annotation at {self.origin}"
        if self.kind == "config-class":
            return f"from its config_class at {self.origin}"
        if self.kind == "config-file":
            return f"from the config at {self.origin}"
        if self.kind == "vocabulary":
            return (f"with invented values: {self.invented_values()} (no call site found; what the workspace "
                    f"passes for these names elsewhere, {self.origin})")
        if self.kind == "placeholder":
            return (f"with invented values: {self.invented_values()} (no call site found; placeholders, "
                    f"{self.origin})")
        if self.kind == "filled-site":
            invented = self.invented_values()
            return (f"as in {self.origin}, with invented values for what fxscope could not read there: {invented}"
                    if invented else f"as in {self.origin}, with the class's defaults for what fxscope could not "
                                     f"read there")
        return f"as in {self.origin}"

    @property
    def invented(self) -> bool:
        """Whether fxscope made the values up (no call site, annotation or default says them)."""
        return self.kind in INVENTED_KINDS

    def invented_arguments(self) -> dict[str, Expr]:
        """The arguments of an invented build by parameter name (empty for any other build; of a
        ``filled-site``, only those fxscope filled in)."""
        if self.kind == "filled-site":
            return dict(self.filled)
        return dict(self.expr.kwargs) if self.invented else {}

    def invented_values(self) -> str:
        """``dim=16, input_resolution=32``: the made-up arguments, as written."""
        return ", ".join(f"{name}={render_python(value)[1]}" for name, value in self.invented_arguments().items())

    def describe(self) -> str:
        """``Net(dim=64) as in README.md:42``: what the report, hover and lens say."""
        return f"{self.text} {self.provenance()}"

    def cost(self) -> tuple[int, int]:
        """A size estimate for ordering candidates (smaller first): the layer counts written in
        the recipe, then its other integers."""
        return _numbers(self.expr)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_json` inverts it."""
        out: dict[str, Any] = {"expr": expr_to_json(self.expr), "kind": self.kind, "file": self.file,
                               "line": self.line, "text": self.text}
        if self.cell is not None:
            out["cell"] = self.cell
        if self.filled:
            out["filled"] = [[name, expr_to_json(value)] for name, value in self.filled]
        return out

    @classmethod
    def from_json(cls, data: Any) -> Recipe:
        """Read :meth:`to_json` output; raises ValueError when malformed."""
        if not isinstance(data, dict):
            raise ValueError("malformed recipe")
        expr = expr_from_json(data.get("expr"))
        kind, file, line, text = data.get("kind"), data.get("file"), data.get("line"), data.get("text")
        cell = data.get("cell")
        filled = data.get("filled") or []
        if not isinstance(filled, list) or not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                   for p in filled):
            raise ValueError("malformed recipe")
        if (not isinstance(expr, Call) or kind not in RECIPE_KINDS or not isinstance(file, str)
                or not isinstance(line, int) or isinstance(line, bool) or line < 1 or not isinstance(text, str)
                or (cell is not None and (not isinstance(cell, int) or isinstance(cell, bool) or cell < 1))):
            raise ValueError("malformed recipe")
        return cls(expr, kind, file, line, text, cell, tuple((k, expr_from_json(v)) for k, v in filled))


def render_python(expr: Expr, *, local_module: str | None = None) -> tuple[list[str], str, list[str]]:
    """Python source for a resolved expression: the statements to run first (an object whose
    attributes are set after it is made), the expression, and the import lines it needs (names of
    ``local_module`` are used as they are: the code goes into that module).

    >>> prelude, code, imports = render_python(Call(Ref("pkg.model", ("Net",)), (Lit(4),),
    ...     (("act", RefExpr(Ref("torch", ("nn", "GELU")))), ("cfg", Setattrs(Call(Ref("pkg.config", ("Config",))),
    ...                                                               (("depth", Lit(2)),))))))
    >>> prelude, code
    (['config = Config()', 'config.depth = 2'], 'Net(4, act=torch.nn.GELU, cfg=config)')
    >>> imports
    ['import torch', 'from pkg.config import Config', 'from pkg.model import Net']
    """
    imports: dict[str, str] = {}  # import line -> name it binds
    bound: dict[str, str] = {}  # name -> the import line that binds it
    prelude: list[str] = []
    variables: set[str] = set()

    def name_for(ref: Ref) -> str:
        if ref.module == local_module or ref.module == "builtins":
            return ".".join(ref.path)
        if ref.module in ("torch", "functools", "types", "argparse", "collections", "math"):
            line, head = f"import {ref.module}", ref.module
            path = (ref.module, *ref.path)
        else:
            head = ref.path[0]
            line = f"from {ref.module} import {head}"
            path = ref.path
        if bound.get(head, line) != line:  # two different names `Config`: alias the second
            alias = f"{head}_{len(bound)}"
            line = f"{line} as {alias}"
            head, path = alias, (alias, *path[1:])
        bound[head] = line
        imports[line] = head
        return ".".join(path)

    def variable(hint: str) -> str:
        base = re.sub(r"(?<!^)(?=[A-Z])", "_", hint).lower().strip("_") or "value"
        name, n = base, 1
        while name in variables or name in bound:
            n += 1
            name = f"{base}_{n}"
        variables.add(name)
        return name

    def render(e: Expr) -> str:
        if isinstance(e, Lit):
            return repr(e.value)
        if isinstance(e, Seq):
            items = [render(i) for i in e.items]
            if e.kind == "tuple":
                return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            if e.kind == "set":
                return f"{{{', '.join(items)}}}" if items else "set()"
            return f"[{', '.join(items)}]"
        if isinstance(e, DictExpr):
            return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in e.items) + "}"
        if isinstance(e, RefExpr):
            return name_for(e.ref)
        if isinstance(e, Setattrs):
            base = render(e.base)
            made = e.base.func.path[0] if isinstance(e.base, Call) else "value"
            name = variable("config" if made.endswith(("Config", "Args")) or made[:1].isupper() else made)
            prelude.append(f"{name} = {base}")
            prelude.extend(f"{name}.{k} = {render(v)}" for k, v in e.attrs)
            return name
        parts = [render(a) for a in e.args] + [f"{k}={render(v)}" for k, v in e.kwargs]
        parts += [f"**{render(s)}" for s in e.splats]
        return f"{name_for(e.func)}({', '.join(parts)})"

    code = render(expr)
    grouped: dict[str, list[str]] = {}
    plain: list[str] = []
    for line in imports:
        if line.startswith("from ") and " as " not in line:
            module, _, name = line[5:].partition(" import ")
            grouped.setdefault(module, []).append(name)
        else:
            plain.append(line)
    lines = sorted(plain) + [f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(grouped.items())]
    return prelude, code, lines
