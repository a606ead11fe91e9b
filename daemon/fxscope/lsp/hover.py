"""Hover: the graph nodes a line produced, grouped by module instance (identical instances
collapsed, "× 12"), and the summary of an ``nn.Module`` class under the cursor; in a notebook
cell too (its lines are the notebook's code lines from the cell's first one).

>>> print(instance_pattern(["blocks.0.attn", "blocks.1.attn", "blocks.11.attn"]))
blocks.*.attn
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.positions import split_lines
from fxscope.lsp.workspaces import Folder, uri_to_path
from fxscope.model import ClassSummary, NodeInfo

__all__ = ["register", "bounded", "nodes_markdown", "class_markdown", "instance_pattern", "word_at"]

#: Nodes listed per module instance group before "… N more".
MAX_NODES = 12
#: Targets, and instance groups per target, shown before the rest are summarised in one line.
MAX_TARGETS = 3
MAX_GROUPS = 3
#: Instances, targets and leaf children a class hover lists before "… (N in all)".
MAX_LISTED = 6
#: Upper bound of a hover's text (characters): whole blocks are dropped past it, and counted.
MAX_HOVER_CHARS = 4000
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def instance_pattern(paths: Sequence[str]) -> str:
    """One label for several module paths: components that differ become ``*``."""
    if len(paths) == 1:
        return paths[0] or "<root>"
    split = [p.split(".") for p in paths]
    if len({len(s) for s in split}) != 1:
        return f"{paths[0] or '<root>'}, …"
    parts = [col[0] if len(set(col)) == 1 else "*" for col in zip(*split)]
    return ".".join(parts)


def _is_own_call(node: NodeInfo) -> bool:
    """A ``call_module`` node is recorded under the called module's own scope."""
    return node.op == "call_module" and bool(node.scope) and node.target == node.scope


def _instance(node: NodeInfo) -> str:
    """The module instance whose forward ran the line that produced ``node``."""
    if _is_own_call(node):
        return node.scope.rpartition(".")[0]
    return node.scope


def _relative_target(node: NodeInfo, instance: str) -> str:
    """The node's call target relative to its instance (so identical instances compare equal)."""
    if node.op == "call_module" and instance and node.target.startswith(instance + "."):
        return node.target[len(instance) + 1:]
    return node.target


def _rows(inst: str, rows: Sequence[NodeInfo]) -> list[str]:
    """One line per node (name, op, target relative to the instance, shape), at most MAX_NODES."""
    shown = rows[:MAX_NODES]
    width_name = max(len(r.name) for r in shown)
    width_op = max(len(r.op) for r in shown)
    body = [f"{r.name:<{width_name}}  {r.op:<{width_op}}  {_relative_target(r, inst)}"
            + (f"  {r.dtype or '?'}[{', '.join(map(str, r.shape))}]" if r.shape is not None else "")
            for r in shown]
    if len(rows) > MAX_NODES:
        body.append(f"… {len(rows) - MAX_NODES} more")
    return body


def _target_block(target_id: str, instances: OrderedDict[str, list[NodeInfo]], types_of: dict[tuple[str, str], str],
                  owner: str | None, markdown: bool) -> list[str]:
    """The hover lines of one target: instances of the same type whose nodes are identical (op and
    relative target) collapse into one group (``blocks.*.attn: Attn × 12``)."""
    out = [f"\ntarget `{target_id}`" if markdown else f"\ntarget {target_id}"]
    groups: OrderedDict[tuple[str, tuple[object, ...]], list[tuple[str, list[NodeInfo]]]] = OrderedDict()
    for inst, members in instances.items():
        kind = _short(owner or types_of.get((target_id, inst), "") or "?")
        signature = (kind, tuple((m.op, _relative_target(m, inst), m.shape, m.dtype) for m in members))
        groups.setdefault(signature, []).append((inst, members))
    for i, ((kind, _), group) in enumerate(groups.items()):
        if i == MAX_GROUPS:
            rest = list(groups.values())[MAX_GROUPS:]
            out.append(f"… {len(rest)} more instance groups ({sum(len(g) for g in rest)} instances)")
            break
        label = f"{instance_pattern([s for s, _ in group])}: {kind}"
        if len(group) > 1:
            label += f" × {len(group)}"
        out.append(f"`{label}`" if markdown else label)
        body = _rows(*group[0])
        out.append("```text\n" + "\n".join(body) + "\n```" if markdown else "\n".join(body))
    return out


def nodes_markdown(nodes: Sequence[NodeInfo], markdown: bool = True, owner: str | None = None) -> str | None:
    """The hover text for the nodes of one line (None when there are none); ``owner`` is the
    class whose forward holds the line, when known."""
    if not nodes:
        return None
    # group: target -> instance -> nodes, in first-seen order
    by_target: OrderedDict[str, OrderedDict[str, list[NodeInfo]]] = OrderedDict()
    types_of: dict[tuple[str, str], str] = {}
    for n in nodes:
        inst = _instance(n)
        by_target.setdefault(n.target_id, OrderedDict()).setdefault(inst, []).append(n)
        if not _is_own_call(n):
            types_of.setdefault((n.target_id, inst), n.scope_type)
    total = len(nodes)
    out = [f"**fxscope** · {total} graph node{'s' if total != 1 else ''} from this line"]
    size = len(out[0])
    targets = list(by_target.items())
    for i, (target_id, instances) in enumerate(targets):
        block = _target_block(target_id, instances, types_of, owner, markdown)
        text = "\n".join(block)
        if i == MAX_TARGETS or (i > 0 and size + len(text) > MAX_HOVER_CHARS):
            rest = targets[i:]
            count = sum(len(ms) for _, insts in rest for ms in insts.values())
            out.append(f"\n… {len(rest)} more target{'s' if len(rest) != 1 else ''} ({count} nodes)")
            break
        out += block
        size += len(text) + 1
    return "\n".join(out)


def class_markdown(summary: ClassSummary, target_status: dict[str, str], markdown: bool = True) -> str:
    """The hover text for an ``nn.Module`` class."""
    tick = "`" if markdown else ""
    lines = [f"**{_short(summary.qualname)}** ({tick}{summary.type_name}{tick}) · {summary.status}"]
    if summary.targets:
        per = ", ".join(f"{tick}{t}{tick} ({target_status.get(t, summary.status)})"
                        for t in summary.targets[:MAX_LISTED])
        lines.append(f"- targets: {per}{_more(summary.targets)}")
    if summary.instances:
        shown = ", ".join(f"{tick}{i or '<root>'}{tick}" for i in summary.instances[:MAX_LISTED])
        lines.append(f"- instances: {shown}{_more(summary.instances)}")
    if summary.status in ("traced", "partial") or summary.nodes:
        lines.append(f"- nodes: {summary.nodes}")
    if summary.leaf_children:
        shown = ", ".join(f"{tick}{c}{tick}" for c in summary.leaf_children[:MAX_LISTED])
        lines.append(f"- leaf children: {shown}{_more(summary.leaf_children)}")
    lines.append(f"- findings: {summary.findings}")
    if summary.build:
        lines.append(f"- built as {tick}{summary.build}{tick} {summary.provenance or ''}".rstrip())
    if summary.inputs:
        ran = " and ".join(summary.inputs_for) or "its analyses"  # the names its summaries have
        lines.append(f"- {ran} ran on {summary.inputs}")
    if summary.reason:
        lines.append(f"- {summary.reason}")
    lines += [f"- {s.line(name)}" for name, s in summary.analyses.items()]
    if summary.analysing:
        lines.append(f"- {' and '.join(summary.analysing)}: running (fx's answer is shown)")
    return "\n".join(lines)


def bounded(text: str, limit: int = 2 * MAX_HOVER_CHARS) -> str:
    """``text`` cut at a line boundary to at most about ``limit`` characters (an open code
    fence closed), with a last line saying so: no hover grows without bound.

    >>> bounded("a\\nb\\nc", limit=3).splitlines()
    ['a', '… (cut: the hover is too long)']
    """
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    head = text[:cut if cut > 0 else limit]
    if head.count("```") % 2:
        head += "\n```"
    return head + "\n… (cut: the hover is too long)"


def _more(items: Sequence[object]) -> str:
    """`` … (48 in all)`` after a list cut at :data:`MAX_LISTED` entries."""
    return f" … ({len(items)} in all)" if len(items) > MAX_LISTED else ""


def word_at(line_text: str, column: int) -> str | None:
    """The identifier at 1-based code-point ``column`` (or just before it)."""
    for m in _WORD.finditer(line_text):
        if m.start() < column <= m.end() + 1:
            return m.group(0)
    return None


class HoverFeature:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    @property
    def markdown(self) -> bool:
        caps = self.ctx.capabilities
        hover = caps.text_document.hover if caps and caps.text_document else None
        formats = hover.content_format if hover else None
        return not formats or types.MarkupKind.Markdown in formats

    def _document(self, uri: str) -> tuple[Path, list[str], Callable[[int], int | None]] | None:
        """The file a document's lines are in, the document's lines and the file line of each of
        them (a notebook cell is part of its notebook's code; None past its code lines)."""
        found = self.ctx.notebooks.cell(uri)
        if found is not None:
            view, cell = found
            return view.path, list(cell.lines), lambda line: view.index.line_of(cell.number, line)
        path = uri_to_path(uri)
        if path is None:
            return None
        return path, split_lines(self.ctx.documents.text(path) or ""), lambda line: line

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        """The class summary under the cursor, else the graph nodes of the line."""
        document = self._document(params.text_document.uri)
        path = document[0] if document is not None else None
        folder = self.ctx.folders.for_path(path, create=False)
        if document is None or path is None or folder is None or not self.ctx.options_for(folder).enable:
            return None
        _, lines, file_line = document
        if params.position.line >= len(lines):
            return None
        line_in_doc, column = self.ctx.encoder.to_store(lines, params.position)
        line_no = file_line(line_in_doc)
        if line_no is None:
            return None
        classes = folder.workspace.classes_in(path)
        text = self.class_hover(folder, classes, lines[line_in_doc - 1], line_no, column)
        if text is None:
            owner = max((s for s in classes if s.line <= line_no), key=lambda s: s.line, default=None)
            text = nodes_markdown(folder.workspace.nodes_at(path, line_no), self.markdown,
                                  owner.type_name if owner is not None else None)
        if text is None:
            return None
        kind = types.MarkupKind.Markdown if self.markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=kind, value=bounded(text)))

    def class_hover(self, folder: Folder, classes: Sequence[ClassSummary], line_text: str, line_no: int,
                    column: int) -> str | None:
        word = word_at(line_text, column)
        if word is None:
            return None
        summaries = [s for s in classes if _short(s.qualname) == word]
        if not summaries:
            return None
        # the class defined on this line, else the only class of that name in the file
        exact = [s for s in summaries if s.line == line_no]
        summary = (exact or summaries)[0]
        status: dict[str, str] = {}
        for t in summary.targets[:6]:
            try:
                status[t] = folder.workspace.target_status(t)
            except KeyError:
                continue
        return class_markdown(summary, status, self.markdown)


def register(ls: LanguageServer, ctx: ServerContext) -> HoverFeature:
    feature = HoverFeature(ctx)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        return feature.hover(params)

    return feature
