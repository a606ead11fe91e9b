"""``fxscope graph``: print a target's FX graphs with each node's scope and source line.

``--module PATH`` shows that module's own graph, or, for a module traced inline in its parent's
graph, the nodes of its scope cut out of the parent's graph; a module's findings are listed too.
``--format html`` writes one self-contained page drawn by the bundled graph renderer.

>>> from fxscope.model import Graphs, Report, ReportTarget, Summary
>>> graphs = Graphs(json=[{"module": "", "nodes": [
...     {"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "m.Net"}]}])
>>> report = Report("/w", "2.3", (ReportTarget("m.py::Net", "class", "m.py", 3, "traced", graphs=graphs),), (),
...                 Summary(1))
>>> print(render_graphs(report, "m.py::Net", None, "text"), end="")
graph m.py::Net (root)
  x  placeholder  x  [<root> m.Net]
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from fxscope.graphview import GraphModuleError, graph_document, render_html
from fxscope.model import Report
from fxscope.model.recipe import Recipe
from fxscope.project.discovery import Discovery, Target
from fxscope.report.notebooks import cell_report

__all__ = ["resolve_target", "render_graphs", "GraphTargetError"]


class GraphTargetError(ValueError):
    """The requested target or module does not exist (a usage error)."""


def resolve_target(discovery: Discovery, name: str) -> Target:
    """The target with id ``name``, or the only target whose class/factory name is ``name``."""
    for t in discovery.targets:
        if t.id == name:
            return t
    matches = [t for t in discovery.targets if t.qualname == name or t.id.endswith(f"::{name}")]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise GraphTargetError(f"no target {name!r} (see `fxscope check --format json` for target ids)")
    raise GraphTargetError(f"{name!r} is ambiguous: {', '.join(t.id for t in matches)}")


def _document(report: Report, target_id: str, module: str | None) -> dict[str, Any]:
    try:
        return dict(graph_document(report.to_json(), target_id, module))
    except GraphModuleError as e:
        raise GraphTargetError(str(e)) from None


def _where(node: dict[str, Any]) -> str:
    if not node.get("file"):
        return ""
    cell = f"cell {node['cell']}:" if node.get("cell") else ""
    return f"{node['file']}:{cell}{node['line']}"


def _captured_title(target_id: str, g: dict[str, Any], index: int, count: int) -> str:
    """``compile graph 2 of 3 of T`` (a graph an analysis captured), and the graph break that ended it."""
    title = f"{g['analysis']} graph {index} of {count} of {target_id}"
    ends = g.get("ends")
    if ends:
        title += f" (ends at the graph break at {ends['file']}:{ends['line']}: {ends['reason']})"
    return title


def _titles(target_id: str, graphs: list[dict[str, Any]], module: str | None) -> list[str]:
    """The title of each graph of a document: fx's by module, those another analysis captured
    numbered in capture order."""
    counts: dict[str, int] = {}
    for g in graphs:
        if g.get("analysis") not in (None, "fx"):
            counts[g["analysis"]] = counts.get(g["analysis"], 0) + 1
    titles, seen = [], dict.fromkeys(counts, 0)
    for g in graphs:
        analysis = g.get("analysis")
        if analysis in counts:
            seen[analysis] += 1
            titles.append(_captured_title(target_id, g, seen[analysis], counts[analysis]))
        else:
            titles.append(_title(target_id, g["module"], module))
    return titles


def _title(target_id: str, graph_module: str, module: str | None) -> str:
    if module is None or module == graph_module:
        return f"graph {target_id} ({graph_module or 'root'})"
    return f"graph {target_id} ({module}, traced inline in the graph of {graph_module or 'root'})"


def _name(node: dict[str, Any]) -> str:
    """``add_3``, or ``add_3: f32[2, 16, 64]`` when the node has a shape (shape-aware tracing)."""
    shape = node.get("shape")
    if shape is None:
        return node["name"]
    return f"{node['name']}: {node.get('dtype') or '?'}[{', '.join(str(d) for d in shape)}]"


def _text(doc: dict[str, Any]) -> str:
    target_id, module = doc["target"], doc["module"]
    lines: list[str] = []
    for g, title in zip(doc["graphs"], _titles(target_id, doc["graphs"], module)):
        lines.append(title)
        rows = [(_name(n), n["op"], n["target"], f"[{n['scope'] or '<root>'} {n['scope_type']}]", _where(n))
                for n in g["nodes"]]
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]
        for r in rows:
            text = "  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3]
            lines.append((text + ("  " + r[4] if r[4] else "")).rstrip())
        lines.append("")
    if not doc["graphs"]:
        if module is not None:
            status = next((m["status"] for m in doc["modules"] if m.get("path") == module), doc["status"])
            lines.append(f"{target_id}: module {module or '<root>'} has no graph nodes (status {status})")
        else:
            lines.append(f"{target_id}: no graph (the target failed to trace; see `fxscope check`)")
    if doc["findings"] and (module is not None or not doc["graphs"]):
        if doc["graphs"]:
            lines.append("findings:")
        for f in doc["findings"]:
            col = f":{f['column']}" if f.get("column") else ""
            cell = f"cell {f['cell']}:" if f.get("cell") else ""
            lines.append(f"  {f.get('file', '')}:{cell}{f.get('line', '')}{col}: {f['code']} {f['message']}")
    return "\n".join(lines).rstrip("\n") + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot(target_id: str, graphs: list[dict[str, Any]]) -> str:
    """Graphviz source: one cluster per graph, an edge per node input."""
    out = ["digraph fxscope {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for gi, (g, title) in enumerate(zip(graphs, _titles(target_id, graphs, None))):
        out.append(f'  subgraph cluster_{gi} {{ label="{_dot_escape(title.removeprefix("graph "))}";')
        names = {n["name"] for n in g["nodes"]}
        for n in g["nodes"]:
            label = f"{n['name']}\\n{n['op']} {n['target']}\\n{n['scope'] or '<root>'}"
            if n.get("file"):
                label += f"\\n{_where(n)}"
            out.append(f'    "g{gi}_{_dot_escape(n["name"])}" [label="{_dot_escape(label).replace(chr(92) * 2 + "n", chr(92) + "n")}"];')
        for n in g["nodes"]:
            for dep in n.get("inputs", []):
                if dep in names:
                    out.append(f'    "g{gi}_{_dot_escape(dep)}" -> "g{gi}_{_dot_escape(n["name"])}";')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render_graphs(report: Report, target_id: str, module: str | None, fmt: str,
                  root: Path | None = None) -> str:
    """The graphs of ``target_id`` (optionally only ``module``) as text, dot, json or html
    (html reads source snippets from files under ``root``). Lines in a notebook name their cell
    (``model.ipynb:cell 3:12``) except in html, which links them to the notebook's code."""
    if fmt != "html" and root is not None:
        report = cell_report(report, root)
    doc = _document(report, target_id, module)
    build = _build(report, target_id)
    if fmt == "json":
        out: dict[str, Any] = {"target": target_id, "graphs": doc["graphs"]}
        if build is not None:
            out["build"] = build.to_json()
        if module is not None:
            out.update(module=module, findings=doc["findings"])
        return json.dumps(out, indent=2) + "\n"
    if fmt == "dot":
        return _dot(target_id, doc["graphs"])
    built = f"built as {build.describe()}" if build is not None else None
    if fmt == "html":
        title = target_id + (f" \u203a {module}" if module else "")
        subtitle = f"status: {doc['status']}" + (f" \u00b7 {built}" if built else "")
        return render_html([doc], title=title, root=root, subtitle=subtitle)
    return (f"{built}\n" if built else "") + _text(doc)


def _build(report: Report, target_id: str) -> Recipe | None:
    """How fxscope built the target on its own, when it did (not from the defaults)."""
    recipe = next((t.build for t in report.targets if t.id == target_id), None)
    return recipe if recipe is not None and recipe.kind != "defaults" else None


def write_html_report(report: Report, directory: Path, root: Path, *, keep_graphs: bool) -> Report:
    """``check --html-report DIR``: write DIR/index.html from a report made with graphs; return
    the report for the other outputs (without graphs unless ``--graphs`` asked for them)."""
    from fxscope.graphview import write_report

    out = write_report(report.to_json(), directory, root=root)
    sys.stderr.write(f"fxscope: wrote {out}\n")
    if keep_graphs:
        return report
    return replace(report, targets=tuple(replace(t, graphs=None) for t in report.targets))
