"""Code lens above each ``nn.Module`` class (``traced · 42 nodes · 3 instances``) whose click
shows the class's graph, and the same summary as an inlay hint at the class line for editors
without code lens (off by default: setting ``inlayHints``).

>>> from fxscope.model import ClassSummary
>>> s = ClassSummary("m.py", 3, "Net", "m.Net", ("m.py::Net",), "traced", nodes=42,
...                  instances=("", "a", "b"))
>>> lens_title(s, 0)
'traced · 42 nodes · 3 instances'
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.positions import split_lines
from fxscope.lsp.workspaces import Folder, uri_to_path
from fxscope.model import ClassSummary, Finding
from fxscope.project.notebooks import notebook_tree, read_notebook

__all__ = ["register", "lens_title", "graph_arguments", "SHOW_GRAPH"]

SHOW_GRAPH = "fxscope.showGraph"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def lens_title(summary: ClassSummary, untraceable_lines: int) -> str:
    """The one-line summary of a class, how fxscope built it when it did so on its own from
    something other than its defaults (``traced · 42 nodes · built as in README.md:42``), and the
    headline of each analysis its target ran (``· export: exported``)."""
    title = _status_title(summary, untraceable_lines)
    if summary.provenance:
        title += f" · built {summary.provenance}"
    for name, analysis in summary.analyses.items():  # what each analysis says, as it words it
        title += f" · {name}: {analysis.headline}"
    if summary.analysing:  # fx answered; these run now (or wait for a worker)
        title += f" · {' and '.join(summary.analysing)}: running…"
    if summary.inputs:
        title += f" · {summary.inputs}"
    return title


def _status_title(summary: ClassSummary, untraceable_lines: int) -> str:
    status = summary.status
    if status == "traced":
        parts = ["traced", _plural(summary.nodes, "node")]
        if summary.instances:
            parts.append(_plural(len(summary.instances), "instance"))
        return " · ".join(parts)
    if status == "partial":
        if untraceable_lines:
            return f"partial · {_plural(untraceable_lines, 'untraceable line')}"
        return f"partial · {_plural(summary.nodes, 'node')} · a failing submodule kept as a leaf"
    if status == "skipped" and summary.reason and summary.reason.startswith("built by the factory target"):
        return f"traced: {summary.reason}"
    if status == "skipped" and summary.reason_code == "FXS407":
        return "not traced: uses a name set by code fxscope does not run (FXS407)"
    if status == "skipped":
        return "not traced: needs constructor arguments (configure a factory)"
    if status == "pending":
        return "fxscope: tracing…"
    if status in ("failed", "error"):
        count = untraceable_lines or summary.findings
        if count:
            return f"failed · {_plural(count, 'untraceable line')}"
        reason = summary.reason or "see the diagnostics"
        return f"failed · {reason if len(reason) <= 80 else reason[:77] + '...'}"
    return f"not traced: {summary.reason or 'no traced model uses it'}"


def graph_arguments(summary: ClassSummary, folder_uri: str) -> list[str | None] | None:
    """``fxscope.showGraph`` arguments for a class: its own target's root graph, else the graph
    of its first instance inside a model that contains it."""
    if not summary.targets or summary.status in ("skipped", "not-traced"):
        return None
    own = [t for t in summary.targets if t.endswith(f"::{summary.qualname}")]
    if own:
        return [own[0], None, folder_uri]
    module = summary.instances[0] if summary.instances else None
    return [summary.targets[0], module, folder_uri]


def _class_ends(text: str, notebook: bool = False) -> dict[int, int]:
    """Class line -> last line, from the buffer text (empty when it does not parse); in a notebook,
    of its code cells (each parsed on its own)."""
    try:
        tree = notebook_tree(read_notebook(text)).tree if notebook else ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    return {n.lineno: n.end_lineno or n.lineno for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def _untraceable_lines(findings: Sequence[Finding], start: int, end: int | None) -> int:
    """Lines in ``start..end`` with an error shown on them."""
    if end is None:
        return 0
    return len({f.primary.line for f in findings if f.severity == "error" and start <= f.primary.line <= end})


class LensFeature:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    def _summaries(self, uri: str) -> tuple[Folder, Path, list[str], list[tuple[ClassSummary, str]]] | None:
        """The folder, file and lines of document ``uri`` and its classes with their titles, each
        at its line in that document (a notebook cell holds some of its notebook's classes)."""
        cell = self.ctx.notebooks.cell(uri)
        path = cell[0].path if cell is not None else uri_to_path(uri)
        folder = self.ctx.folders.for_path(path, create=False)
        if path is None or folder is None or not self.ctx.options_for(folder).enable:
            return None
        text = cell[0].text if cell is not None else self.ctx.documents.text(path) or ""
        ends = _class_ends(text, notebook=cell is not None)
        findings = folder.workspace.findings_for(path).findings
        out = [(s, lens_title(s, _untraceable_lines(findings, s.line, ends.get(s.line))))
               for s in folder.workspace.classes_in(path)]
        if cell is None:
            return folder, path, split_lines(text), out
        view, here = cell
        local = [(replace(s, line=where[1]), title) for s, title in out
                 if (where := view.index.locate(s.line)) is not None and where[0] == here.number]
        return folder, path, list(here.lines), local

    def code_lens(self, params: types.CodeLensParams) -> list[types.CodeLens] | None:
        found = self._summaries(params.text_document.uri)
        if found is None:
            return None
        folder, _, lines, summaries = found
        if not self.ctx.options_for(folder).code_lens:
            return []
        lenses = []
        for summary, title in summaries:
            if not 1 <= summary.line <= len(lines):
                continue
            args = graph_arguments(summary, folder.uri)
            start = types.Position(line=summary.line - 1, character=0)
            command = types.Command(title=title, command=SHOW_GRAPH if args else "",
                                    arguments=list(args) if args else None)
            lenses.append(types.CodeLens(range=types.Range(start=start, end=start), command=command))
        return lenses

    def inlay_hints(self, params: types.InlayHintParams) -> list[types.InlayHint] | None:
        found = self._summaries(params.text_document.uri)
        if found is None:
            return None
        folder, _, lines, summaries = found
        if not self.ctx.options_for(folder).inlay_hints:
            return []
        hints = []
        first, last = params.range.start.line + 1, params.range.end.line + 1
        for summary, title in summaries:
            if not (first <= summary.line <= last and summary.line <= len(lines)):
                continue
            end = self.ctx.encoder.line_length(lines[summary.line - 1])
            hints.append(types.InlayHint(position=types.Position(line=summary.line - 1, character=end),
                                         label=title, padding_left=True))
        return hints


def register(ls: LanguageServer, ctx: ServerContext) -> LensFeature:
    feature = LensFeature(ctx)

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        return feature.code_lens(params)

    @ls.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    def inlay_hint(params: types.InlayHintParams) -> list[types.InlayHint] | None:
        return feature.inlay_hints(params)

    return feature
