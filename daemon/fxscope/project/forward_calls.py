"""Forward calls with literal tensors, and shapes the forward's annotations give (AST only).

A forward site is a call of a model the snippet built from a class-like name, on tensors the
snippet made with a literal shape::

    net = ViT(image_size=32)            # or `self.net = ViT(...)` in a test's setUp
    x = torch.randn(2, 3, 32, 32)
    y = net(x)                          # also net.forward(x), ViT(...)(x), net(x=x)

Tensor factories understood: ``torch.randn/rand/zeros/ones/empty/full`` (shape as arguments, a
tuple or ``size=``; ``dtype=``), ``torch.randint`` (int64), ``torch.arange(n)``,
``torch.tensor([[...]])``; ``.to(...)``, ``.cuda()``, ``.float()``, ``.long()`` and the like after
them. Dimensions are integers, names bound to integers earlier in the snippet, or arithmetic of
those. The forward's own annotations give shapes with named dimensions (jaxtyping
``Float[Tensor, "b c h w"]``, torchtyping ``TensorType["b", 3]``) and so do its docstring's
argument lines (``x: (B, C, H, W)``); those become ``annotation`` sites of the class.

Names of classes stay unresolved here (:class:`~fxscope.model.recipe.Ref`, as call sites keep
them); discovery resolves them (:mod:`fxscope.project.inputs`).

>>> sites = forward_sites('''
... import torch
... from pkg.vit import ViT
... def test_vit():
...     B = 2
...     model = ViT(image_size=32).eval()
...     x = torch.randn(B, 3, 32, 32)
...     assert model(x).shape == (B, 10)
... ''')
>>> [(s.cls.dotted, s.line, [a.shape for a in s.args]) for s in sites]
[('pkg.vit.ViT', 8, [(2, 3, 32, 32)])]
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from fxscope.model.inputs import TensorShape
from fxscope.model.recipe import Ref
from fxscope.project._syntax import nested_blocks, one_line, parse_quietly
from fxscope.project._names import dotted_parts

__all__ = ["ForwardSite", "forward_sites", "markdown_forward_sites"]

#: Bounds that keep summaries small.
MAX_FORWARD_SITES = 100
MAX_TEXT = 120
MAX_RANK = 8
MAX_DIM = 1 << 20

_FLOAT_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full"})
_MOVES = frozenset({"to", "cuda", "cpu", "contiguous", "detach", "requires_grad_", "clone"})
_DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                  "long": "int64", "int": "int32", "bool": "bool"}
_MODEL_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "double", "half", "bfloat16",
                            "to_empty", "requires_grad_"})
_DTYPE_NAMES = {"float": "float32", "float32": "float32", "float64": "float64", "double": "float64",
                "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "long": "int64", "int64": "int64",
                "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}
#: jaxtyping array types -> dtype.
_JAXTYPING = {"Float": "float32", "Float32": "float32", "Shaped": "float32", "Num": "float32", "Real": "float32",
              "Inexact": "float32", "Int": "int64", "Integer": "int64", "Int64": "int64", "Long": "int64",
              "Bool": "bool"}
_DOC_SHAPE = re.compile(r"^\s*`{0,2}(\w+)`{0,2}\s*(?:\([^)]*\))?\s*:[^\n]*?[\(\[]\s*"
                        r"([A-Za-z_][\w]*|\d+)((?:\s*[,x×]\s*(?:[A-Za-z_][\w]*|\d+))+)\s*[\)\]]")


@dataclass(frozen=True)
class ForwardSite:
    """A forward call (or an annotated forward) of the class ``cls`` names: positional ``args``
    and keyword ``kwargs`` tensor shapes, its 1-based ``line``, its ``text`` (shortened) and its
    ``kind`` (``call-site``, ``docstring``, ``readme`` or ``annotation``)."""

    cls: Ref
    args: tuple[TensorShape, ...]
    kwargs: tuple[tuple[str, TensorShape], ...]
    line: int
    text: str
    kind: str

    def to_json(self) -> list[Any]:
        """``[cls, args, kwargs, line, text, kind]``."""
        return [self.cls.to_json(), [a.to_json() for a in self.args], [[k, v.to_json()] for k, v in self.kwargs],
                self.line, self.text, self.kind]

    @classmethod
    def from_json(cls, data: Any) -> ForwardSite:
        """Read :meth:`to_json` output (ValueError when malformed)."""
        ref, args, kwargs, line, text, kind = data
        return cls(Ref(str(ref[0]), tuple(str(p) for p in ref[1])), tuple(TensorShape.from_json(a) for a in args),
                   tuple((str(k), TensorShape.from_json(v)) for k, v in kwargs), int(line), str(text), str(kind))


class _NotLiteral(Exception):
    pass


def _short(text: str) -> str:
    return one_line(text, MAX_TEXT)


class _Scope:
    """One snippet's bindings: imports, integers, tensors and models, with a parent scope."""

    def __init__(self, parent: _Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, tuple[str, Any]] = {}  # name -> ("import"|"int"|"tensor"|"model"|"other", value)

    def has_models(self) -> bool:
        """Whether a model is bound here or in a parent scope (else no call can be a forward)."""
        scope: _Scope | None = self
        while scope is not None:
            if any(kind == "model" for kind, _ in scope.names.values()):
                return True
            scope = scope.parent
        return False

    def get(self, name: str) -> tuple[str, Any]:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return ("unknown", None)


def _class_like(parts: list[str]) -> bool:
    return parts[-1][:1].isupper()



class _Walker:
    def __init__(self, source: str, kind: str, offset: int = 0) -> None:
        self.source, self.kind, self.offset = source, kind, offset
        self.lines = source.splitlines()
        self.sites: list[ForwardSite] = []
        self.seen: set[tuple[int, str]] = set()

    # -- names ---------------------------------------------------------------------------------
    def ref(self, parts: list[str], scope: _Scope) -> Ref | None:
        kind, value = scope.get(parts[0])
        if kind == "import":
            if isinstance(value, Ref):
                return Ref(value.module, (*value.path, *parts[1:]))
            return Ref(value, tuple(parts[1:])) if len(parts) > 1 else None
        if kind == "unknown" and parts[0] == "torch" and len(parts) > 1:  # a README block without imports
            return Ref("torch", tuple(parts[1:]))
        if kind in ("unknown", "class"):
            return Ref("", tuple(parts))
        return None

    def integer(self, node: ast.expr, scope: _Scope) -> int | str:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            value = node.value
        elif isinstance(node, ast.Name):
            kind, bound = scope.get(node.id)
            if kind != "int":
                raise _NotLiteral(node.id)
            value = bound
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            a, b = self.integer(node.left, scope), self.integer(node.right, scope)
            if not isinstance(a, int) or not isinstance(b, int) or (isinstance(node.op, ast.FloorDiv) and b == 0):
                raise _NotLiteral("arithmetic")
            value = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(node.op), a // b if b else 0)
        else:
            raise _NotLiteral(type(node).__name__)
        if not 0 <= value <= MAX_DIM:
            raise _NotLiteral("size")
        return value

    def shape(self, nodes: list[ast.expr], scope: _Scope) -> tuple[int, ...]:
        if len(nodes) == 1 and isinstance(nodes[0], (ast.Tuple, ast.List)):
            nodes = list(nodes[0].elts)
        elif len(nodes) == 1 and isinstance(nodes[0], ast.Name) and scope.get(nodes[0].id)[0] == "shape":
            return scope.get(nodes[0].id)[1]  # type: ignore[no-any-return,unused-ignore]
        if len(nodes) > MAX_RANK or any(isinstance(n, ast.Starred) for n in nodes):
            raise _NotLiteral("shape")
        dims = tuple(self.integer(n, scope) for n in nodes)
        return dims  # type: ignore[return-value]

    def dtype(self, node: ast.expr | None, default: str) -> str:
        if node is None:
            return default
        parts = dotted_parts(node)
        if not parts or parts[-1] not in _DTYPE_NAMES:
            raise _NotLiteral("dtype")
        return _DTYPE_NAMES[parts[-1]]

    def tensor(self, node: ast.expr, scope: _Scope) -> TensorShape:
        """The shape and dtype of a tensor expression, or _NotLiteral."""
        if isinstance(node, ast.Name):
            kind, value = scope.get(node.id)
            if kind == "tensor":
                return value  # type: ignore[no-any-return,unused-ignore]
            raise _NotLiteral(node.id)
        if not isinstance(node, ast.Call):
            raise _NotLiteral(type(node).__name__)
        func = node.func
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name)
                                                    and self._is_torch(func.value, scope)):
            inner = self.tensor(func.value, scope)
            if func.attr in _MOVES:
                dtype = next((self.dtype(k.value, inner.dtype) for k in node.keywords if k.arg == "dtype"), inner.dtype)
                for arg in node.args:
                    parts = dotted_parts(arg) or []
                    if parts and parts[-1] in _DTYPE_NAMES and parts[0] in ("torch", "th"):
                        dtype = _DTYPE_NAMES[parts[-1]]
                return TensorShape(inner.shape, dtype)
            if func.attr in _DTYPE_METHODS and not node.args:
                return TensorShape(inner.shape, _DTYPE_METHODS[func.attr])
            raise _NotLiteral(func.attr)
        parts = dotted_parts(func) or []
        ref = self.ref(parts, scope) if parts else None
        if ref is None or ref.module != "torch" or len(ref.path) != 1:
            raise _NotLiteral("callee")
        name = ref.path[0]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if name in _FLOAT_FACTORIES:
            args = list(node.args[:1]) if name == "full" else list(node.args)
            if "size" in keywords:
                args = [keywords["size"]]
            return TensorShape(self.shape(args, scope), self.dtype(keywords.get("dtype"), "float32"))
        if name == "randint":
            if "size" in keywords:
                size = keywords["size"]
            elif len(node.args) in (2, 3) and isinstance(node.args[-1], (ast.Tuple, ast.List)):
                size = node.args[-1]
            else:
                raise _NotLiteral("randint")
            return TensorShape(self.shape([size], scope), self.dtype(keywords.get("dtype"), "int64"))
        if name == "arange" and len(node.args) == 1:
            n = self.integer(node.args[0], scope)
            return TensorShape((n,), self.dtype(keywords.get("dtype"), "int64"))
        if name == "tensor" and node.args:
            return self.nested(node.args[0], keywords.get("dtype"))
        raise _NotLiteral(name)

    def _is_torch(self, node: ast.Name, scope: _Scope) -> bool:
        ref = self.ref([node.id, "x"], scope)
        return ref is not None and ref.module == "torch" and ref.path == ("x",)

    def nested(self, node: ast.expr, dtype_node: ast.expr | None) -> TensorShape:
        shape: list[int] = []
        level: ast.expr = node
        while isinstance(level, (ast.List, ast.Tuple)):
            shape.append(len(level.elts))
            if not level.elts or len(shape) > MAX_RANK:
                break
            level = level.elts[0]
        if not shape:
            raise _NotLiteral("tensor")
        leaves = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)]
        if leaves and all(isinstance(v, bool) for v in leaves):
            default = "bool"
        elif leaves and all(isinstance(v, int) for v in leaves):
            default = "int64"
        else:
            default = "float32"
        return TensorShape(tuple(shape), self.dtype(dtype_node, default))

    def model(self, node: ast.expr, scope: _Scope) -> Ref | None:
        """The class a model expression was built from: ``Net(...)``, ``Net(...).eval()``, a name
        bound to one of those."""
        while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in _MODEL_METHODS):
            node = node.func.value
        if isinstance(node, ast.Name):
            kind, value = scope.get(node.id)
            return value if kind == "model" else None
        if isinstance(node, ast.Attribute):
            parts = dotted_parts(node)
            if parts and len(parts) == 2 and parts[0] == "self":
                kind, value = scope.get("self." + parts[1])
                return value if kind == "model" else None
            return None
        if isinstance(node, ast.Call):
            parts = dotted_parts(node.func)
            if parts and _class_like(parts):
                return self.ref(parts, scope)
        return None

    # -- statements ----------------------------------------------------------------------------
    def block(self, body: Iterable[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            if len(self.sites) >= MAX_FORWARD_SITES:
                return
            self.statement(stmt, scope)

    def statement(self, stmt: ast.stmt, scope: _Scope) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = _Scope(scope)
            for arg in [*stmt.args.posonlyargs, *stmt.args.args, *stmt.args.kwonlyargs,
                        stmt.args.vararg, stmt.args.kwarg]:
                if arg is not None and arg.arg != "self":
                    inner.names[arg.arg] = ("other", None)
            self.block(stmt.body, inner)
            scope.names[stmt.name] = ("other", None)
            return
        if isinstance(stmt, ast.ClassDef):
            inner = _Scope(scope)
            bases = [".".join(dotted_parts(b) or ()) for b in stmt.bases]
            if not any("Module" in b or b.startswith("nn.") for b in bases):  # a test class, not a model
                self._self_models(stmt, inner)
            self.block(stmt.body, inner)
            scope.names[stmt.name] = ("class", None)
            return
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                head = alias.name.split(".")[0]
                scope.names[alias.asname or head] = ("import", alias.name if alias.asname else head)
            return
        if isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                if alias.name != "*":
                    scope.names[alias.asname or alias.name] = ("import", Ref(module, (alias.name,)))
            return
        if scope.has_models() or self._calls_a_call(stmt):
            self.calls_in(stmt, scope)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                self.assign(target, stmt.value, scope)
        elif isinstance(stmt, (ast.AugAssign, ast.For, ast.AsyncFor)):
            self.unbind(stmt.target, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self.unbind(item.optional_vars, scope)
        for block in nested_blocks(stmt):
            self.block(block, scope)

    def _calls_a_call(self, stmt: ast.stmt) -> bool:
        """Whether the statement's text has ``)(``: ``Net(...)(x)`` (read from the source, not
        the tree: most statements have no model to call)."""
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        return any(")(" in line for line in self.lines[stmt.lineno - 1:end])

    def _self_models(self, cls: ast.ClassDef, scope: _Scope) -> None:
        """``self.model = Net(...)`` in any method (a test's ``setUp``): the class's models."""
        for node in _statements(cls.body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                parts = dotted_parts(node.targets[0])
                if parts and len(parts) == 2 and parts[0] == "self":
                    ref = self.model(node.value, scope)
                    key = "self." + parts[1]
                    if ref is not None and scope.names.get(key, ("model", ref)) == ("model", ref):
                        scope.names[key] = ("model", ref)
                    elif key in scope.names or ref is None:
                        scope.names[key] = ("other", None)

    def assign(self, target: ast.expr, value: ast.expr, scope: _Scope) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self.assign(t, v, scope)
            return
        if not isinstance(target, ast.Name):
            if not isinstance(target, ast.Attribute):
                self.unbind(target, scope)
            return
        name = target.id
        try:
            scope.names[name] = ("int", self.integer(value, scope))
            return
        except (_NotLiteral, RecursionError):
            pass
        try:
            scope.names[name] = ("tensor", self.tensor(value, scope))
            return
        except (_NotLiteral, RecursionError):
            pass
        if isinstance(value, (ast.Tuple, ast.List)):
            try:
                scope.names[name] = ("shape", self.shape([value], scope))
                return
            except (_NotLiteral, RecursionError):
                pass
        ref = self.model(value, scope)
        scope.names[name] = ("model", ref) if ref is not None else ("other", None)

    def unbind(self, target: ast.AST, scope: _Scope) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                scope.names[node.id] = ("other", None)

    def calls_in(self, stmt: ast.stmt, scope: _Scope) -> None:
        todo: list[ast.AST] = [stmt]
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Call):
                self.record(node, scope)
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.stmt):
                    todo.append(child)

    def record(self, node: ast.Call, scope: _Scope) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr in _MODEL_METHODS:
            return  # `model.to(x)`: not a forward
        if isinstance(func, ast.Call):
            parts = dotted_parts(func.func)
            if not parts or not _class_like(parts):
                return
        cls = self.model(func, scope)
        if cls is None or not (node.args or node.keywords):
            return
        try:
            args = tuple(self.tensor(a, scope) for a in node.args)
            kwargs = tuple((k.arg, self.tensor(k.value, scope)) for k in node.keywords if k.arg)
        except (_NotLiteral, RecursionError):
            return
        if any(k.arg is None for k in node.keywords):
            return
        text = _short(ast.get_source_segment(self.source, node) or ast.unparse(node))
        line = node.lineno + self.offset
        if (line, text) not in self.seen:
            self.seen.add((line, text))
            self.sites.append(ForwardSite(cls, args, kwargs, line, text, self.kind))

    # -- annotations -----------------------------------------------------------------------------
    def annotations(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if not isinstance(stmt, ast.ClassDef):
                continue
            forward = next((s for s in stmt.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
            if forward is None:
                continue
            params = [a.arg for a in [*forward.args.posonlyargs, *forward.args.args, *forward.args.kwonlyargs]][1:]
            found: dict[str, TensorShape] = {}
            for arg in [*forward.args.posonlyargs, *forward.args.args, *forward.args.kwonlyargs][1:]:
                shape = _annotated_shape(arg.annotation)
                if shape is not None:
                    found[arg.arg] = shape
            doc = ast.get_docstring(forward) or ""
            for line in doc.splitlines():
                match = _DOC_SHAPE.match(line)
                if match and match.group(1) in params and match.group(1) not in found:
                    dims = [match.group(2), *re.split(r"\s*[,x×]\s*", match.group(3).strip())[1:]]
                    found[match.group(1)] = TensorShape(tuple(_dim(d) for d in dims if d))
            if found:
                ordered = tuple((p, found[p]) for p in params if p in found)
                text = ", ".join(f"{p}: {s.render()}" for p, s in ordered)
                self.sites.append(ForwardSite(Ref("", (stmt.name,)), (), ordered, forward.lineno + self.offset,
                                              _short(f"forward({text})"), "annotation"))


_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body``, nested blocks and function bodies included (no expressions:
    much faster than ``ast.walk``)."""
    stack: list[Any] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, list):
                stack.extend(reversed(block))


def _dim(token: str) -> int | str:
    token = token.strip()
    return int(token) if token.isdigit() else token


def _annotated_shape(node: ast.expr | None) -> TensorShape | None:
    """``Float[Tensor, "b c h w"]`` (jaxtyping) or ``TensorType["b", 3]`` (torchtyping)."""
    if not isinstance(node, ast.Subscript):
        return None
    parts = dotted_parts(node.value) or []
    if not parts:
        return None
    index = node.slice
    if parts[-1] in _JAXTYPING and isinstance(index, ast.Tuple) and len(index.elts) == 2 \
            and isinstance(index.elts[1], ast.Constant) and isinstance(index.elts[1].value, str):
        tokens = index.elts[1].value.split()
        if any(t.startswith(("*", "...", "#")) or t == "..." for t in tokens) or len(tokens) > MAX_RANK:
            return None
        return TensorShape(tuple(_dim(t.strip("_") or "n") for t in tokens), _JAXTYPING[parts[-1]])
    if parts[-1] == "TensorType":
        elts = index.elts if isinstance(index, ast.Tuple) else [index]
        dims: list[int | str] = []
        for e in elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, (int, str)) and not isinstance(e.value, bool):
                dims.append(e.value)
            else:
                return None
        return TensorShape(tuple(dims)) if dims else None
    return None



_PROMPT = re.compile(r"^\s*(>>>|\.\.\.)( |$)")


def _snippet(source: str, kind: str, offset: int) -> list[ForwardSite]:
    tree = parse_quietly(source)
    if tree is None:
        return []
    walker = _Walker(source, kind, offset)
    try:
        walker.block(tree.body, _Scope())
    except RecursionError:
        pass
    return walker.sites


def forward_sites(source: str, tree: ast.Module | None = None) -> list[ForwardSite]:
    """The forward sites of a Python file: its code (``call-site``), its doctests (``docstring``)
    and its classes' forward annotations (``annotation``)."""
    tree = tree if tree is not None else parse_quietly(source)
    if tree is None:
        return []
    walker = _Walker(source, "call-site")
    try:
        walker.block(tree.body, _Scope())
        walker.annotations(tree)
    except RecursionError:
        pass
    sites = walker.sites
    for node in [tree, *_statements(tree.body)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str) and ">>>" in first.value.value:
                lines = [(_PROMPT.sub("", line, count=1) if _PROMPT.match(line) else "")
                         for line in first.value.value.splitlines()]
                sites += _snippet("\n".join(lines), "docstring", first.lineno - 1)
    return sites[:MAX_FORWARD_SITES]


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


def markdown_forward_sites(text: str) -> list[ForwardSite]:
    """The forward sites of a Markdown file's Python code blocks (``readme``)."""
    found: list[ForwardSite] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) and len(found) < MAX_FORWARD_SITES:
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, language = match.group(2), match.group(3).lower()
        start = end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence[0] * len(fence)):
            end += 1
        if language in ("python", "py", "python3", "pycon", "ipython", ""):
            block = "\n".join(_PROMPT.sub("", line, count=1) if _PROMPT.match(line) else line
                              for line in lines[start:end])
            if "(" in block:
                found += _snippet(textwrap.dedent(block), "readme", start)
        i = end + 1
    return found
