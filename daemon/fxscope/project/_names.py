"""Dotted names in the AST (``torch.nn.Linear``), shared by the project layer's readers."""

from __future__ import annotations

import ast

__all__ = ["dotted_name", "dotted_parts"]


def dotted_parts(node: ast.expr) -> list[str] | None:
    """``["torch", "nn", "Linear"]`` for ``torch.nn.Linear``; None when ``node`` is not a name
    followed by attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def dotted_name(node: ast.expr) -> str | None:
    """``"torch.nn.Linear"`` for ``torch.nn.Linear`` (see :func:`dotted_parts`)."""
    parts = dotted_parts(node)
    return ".".join(parts) if parts is not None else None
