"""Example input candidates per class, from what the repository shows (AST only, nothing runs).

Every forward site of the workspace (:mod:`fxscope.project.forward_calls`: a forward call on
literal tensors in a test, a ``__main__`` block, a doctest, a README or docs code block, a notebook;
a forward whose annotations or docstring give shapes) is resolved to the workspace class it calls,
the way call sites are resolved for build recipes. The worker tries the candidates, with those the
built model itself suggests (library conventions, its first layer), and keeps the first its eager
forward runs on (:mod:`fxscope.job.inputs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fxscope.model.inputs import INPUT_KINDS, InputCandidate

from .notebooks import is_notebook

if TYPE_CHECKING:
    from .discovery import _Workspace
    from .recipes import RecipeIndex

__all__ = ["MAX_INPUT_CANDIDATES", "InputIndex"]

#: Candidates kept per class (literal calls first, then annotations).
MAX_INPUT_CANDIDATES = 6


class InputIndex:
    """The input candidates of every workspace class, by (file, class name)."""

    def __init__(self, ws: _Workspace, recipes: RecipeIndex) -> None:
        self.by_class: dict[tuple[str, str], list[InputCandidate]] = {}
        for rel, summary in sorted(ws.summaries.items()):
            for site in summary.forwards:
                try:
                    _, key, rest = recipes._resolve_ref(rel, site.cls)
                except Exception:  # noqa: BLE001 - an unresolvable name is simply not a candidate
                    continue
                if key is None or rest:
                    continue
                if is_notebook(key.rel) and key.rel != rel:
                    continue
                line, cell = site.line, None
                where = summary.cell_of(site.line) if summary.cells else None
                if where is not None:
                    cell, line = where
                candidate = InputCandidate(site.kind, rel, line, site.text, site.args, site.kwargs, cell)
                found = self.by_class.setdefault((key.rel, key.name), [])
                if all((c.args, c.kwargs) != (candidate.args, candidate.kwargs) for c in found):
                    found.append(candidate)

    def candidates_for(self, rel: str, name: str) -> tuple[InputCandidate, ...]:
        """The candidates of class ``name`` of ``rel``: concrete literal calls first (tests before
        docs), then shapes with open dimensions."""
        order = {kind: i for i, kind in enumerate(INPUT_KINDS)}
        found = sorted(self.by_class.get((rel, name), ()),
                       key=lambda c: (not all(s.concrete for s in (*c.args, *(v for _, v in c.kwargs))),
                                      order.get(c.kind, len(order)), c.file, c.line))
        return tuple(found[:MAX_INPUT_CANDIDATES])
