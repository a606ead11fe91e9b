"""Wording of shape-aware answers (FXS501) in source terms: what was asked, as the model's code
writes it.

A question's subject is described from its graph node when that names only what the source
names (inputs, ``self.`` attributes, constants, calls): ``x.size(-1) != 16``, ``len(x)``. A node
reached only through other nodes' names (``rsqrt(add)``) is described from the source text of
the expression that asked instead: the condition of an ``if``, the argument of ``range(n)`` or
``torch.finfo(h.dtype)``, the index of a subscript.

>>> import torch.fx as fx
>>> graph = fx.Graph()
>>> x = graph.placeholder("x")
>>> size = graph.call_method("size", (x, -1))
>>> describe(size), source_terms(graph.call_function(torch.rsqrt, (size,)))
('x.size(-1)', 'rsqrt(x.size(-1))')
>>> deep = size
>>> for _ in range(6):
...     deep = graph.call_function(torch.rsqrt, (deep,))
>>> source_terms(deep) is None
True
>>> source_operand("range(n)"), source_operand("torch.finfo(h.dtype)"), source_operand("x[:, :l]")
('n', 'h.dtype', ':, :l')
>>> source_condition("x.shape[-1] != self.dim", False), source_condition("mask", False)
('x.shape[-1] == self.dim', 'not mask')
"""

from __future__ import annotations

import ast
import operator
from typing import Any

import torch
from torch.fx import Node, Proxy

__all__ = ["condition", "describe", "source_condition", "source_operand", "source_terms"]

_BINARY = {
    operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">",
    operator.ge: ">=", operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.and_: "&",
    operator.or_: "|", operator.matmul: "@",
}
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_AST_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

#: Longest description before it counts as unreadable.
_LIMIT = 80


def describe(arg: Any, depth: int = 0, named: list[str] | None = None) -> str:
    """Source-like text for the expression a node (or constant) stands for: ``x.size(0)``,
    ``x.shape[-1] != 8``; the node's name when it is long or deep (then appended to ``named``)."""
    if isinstance(arg, Proxy):
        arg = arg.node
    if not isinstance(arg, Node):
        if isinstance(arg, slice):
            parts = ["" if v is None else describe(v, depth + 1, named) for v in (arg.start, arg.stop)]
            return ":".join(parts) + (f":{describe(arg.step, depth + 1, named)}" if arg.step is not None else "")
        if isinstance(arg, tuple):
            inner = ", ".join(describe(a, depth + 1, named) for a in arg)
            return "(" + inner + ("," if len(arg) == 1 else "") + ")"
        if isinstance(arg, torch.dtype):
            return str(arg)
        return repr(arg)
    node = arg
    if depth > 4:
        return _by_name(node, named)
    args = node.args
    text: str
    if node.op == "placeholder":
        text = str(node.target).lstrip("*")
    elif node.op == "get_attr":
        text = f"self.{node.target}"
    elif node.op == "call_method":
        rest = ", ".join([describe(a, depth + 1, named) for a in args[1:]]
                         + [f"{k}={describe(v, depth + 1, named)}" for k, v in node.kwargs.items()])
        text = f"{describe(args[0], depth + 1, named)}.{node.target}({rest})"
    elif node.op == "call_function" and node.target is getattr and len(args) == 2:
        text = f"{describe(args[0], depth + 1, named)}.{args[1]}"
    elif node.op == "call_function" and node.target is operator.getitem and len(args) == 2:
        index = args[1]
        inner = (", ".join(describe(i, depth + 1, named) for i in index) if isinstance(index, tuple)
                 else describe(index, depth + 1, named))
        text = f"{describe(args[0], depth + 1, named)}[{inner}]"
    elif node.op == "call_function" and node.target in _BINARY and len(args) == 2:
        text = f"{_operand(args[0], depth, named)} {_BINARY[node.target]} {_operand(args[1], depth, named)}"
    elif node.op == "call_function" and node.target is operator.not_:
        text = f"not {_operand(args[0], depth, named)}"
    else:
        name = getattr(node.target, "__name__", str(node.target))
        if node.op == "call_module":
            name = f"self.{node.target}"
        rest = ", ".join([describe(a, depth + 1, named) for a in args]
                         + [f"{k}={describe(v, depth + 1, named)}" for k, v in node.kwargs.items()])
        text = f"{name}({rest})"
    return text if len(text) <= _LIMIT else _by_name(node, named)


def _by_name(node: Node, named: list[str] | None) -> str:
    if named is not None:
        named.append(node.name)
    return node.name


def _operand(arg: Any, depth: int, named: list[str] | None = None) -> str:
    text = describe(arg, depth + 1, named)
    node = arg.node if isinstance(arg, Proxy) else arg
    if isinstance(node, Node) and node.op == "call_function" and node.target in _BINARY:
        return f"({text})"
    return text


def condition(node: Node, value: bool, named: list[str] | None = None) -> str:
    """The condition that held, as text: ``x.dim() == 2`` or its negation."""
    if node.op == "call_function" and node.target in _BINARY and len(node.args) == 2:
        op = _BINARY[node.target]
        if op in _NEGATED:
            if not value:
                op = _NEGATED[op]
            return f"{_operand(node.args[0], 0, named)} {op} {_operand(node.args[1], 0, named)}"
    text = describe(node, 0, named)
    return text if value else f"not {_operand(node, 0, named)}"


def source_terms(arg: Any) -> str | None:
    """:func:`describe` of ``arg`` when it names no graph node, else None."""
    named: list[str] = []
    text = describe(arg, 0, named)
    return None if named else text


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def source_operand(text: str) -> str:
    """What an expression asks about, in its own words: the single argument of a call
    (``range(n)`` -> ``n``), the index of a subscript (``t[:, :l]`` -> ``:, :l``), else the
    expression itself."""
    text = text.strip()
    tree = _parse(text)
    part: ast.AST | None = None
    if isinstance(tree, ast.Call) and len(tree.args) == 1 and not tree.keywords:
        part = tree.args[0]
    elif isinstance(tree, ast.Subscript):
        part = tree.slice
    segment = ast.get_source_segment(text, part) if part is not None else None
    return segment or text


def source_condition(text: str, value: bool) -> str:
    """The condition ``text`` as it held: itself, or its negation (``a != b`` -> ``a == b``)."""
    text = text.strip()
    if value:
        return text
    tree = _parse(text)
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in _AST_COMPARE:
        left = ast.get_source_segment(text, tree.left)
        right = ast.get_source_segment(text, tree.comparators[0])
        if left and right:
            return f"{left} {_NEGATED[_AST_COMPARE[type(tree.ops[0])]]} {right}"
    if isinstance(tree, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return f"not {text}"
    return f"not ({text})"
