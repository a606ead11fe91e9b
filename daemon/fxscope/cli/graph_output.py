"""``fxscope graph``: print a target's FX graphs with each node's scope and source line.

>>> report = {"targets": [{"id": "m.py::Net", "graphs": [{"module": "", "nodes": [
...     {"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "m.Net"}]}]}]}
>>> print(render_graphs(report, "m.py::Net", None, "text"), end="")
graph m.py::Net (root)
  x  placeholder  x  [<root> m.Net]
"""

from __future__ import annotations

import json
from typing import Any

from fxscope.project.discovery import Discovery, Target

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


def _graphs(report: dict[str, Any], target_id: str, module: str | None) -> list[dict[str, Any]]:
    entry = next((t for t in report["targets"] if t["id"] == target_id), None)
    graphs = (entry or {}).get("graphs") or []
    if module is not None:
        graphs = [g for g in graphs if g["module"] == module]
        if not graphs:
            raise GraphTargetError(f"target {target_id!r} has no graph for module {module!r}")
    return graphs


def _where(node: dict[str, Any]) -> str:
    return f"{node['file']}:{node['line']}" if node.get("file") else ""


def _text(target_id: str, graphs: list[dict[str, Any]]) -> str:
    lines: list[str] = []
    for g in graphs:
        lines.append(f"graph {target_id} ({g['module'] or 'root'})")
        rows = [(n["name"], n["op"], n["target"], f"[{n['scope'] or '<root>'} {n['scope_type']}]", _where(n))
                for n in g["nodes"]]
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]
        for r in rows:
            text = "  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3]
            lines.append((text + ("  " + r[4] if r[4] else "")).rstrip())
        lines.append("")
    if not graphs:
        lines.append(f"{target_id}: no graph (the target failed to trace; see `fxscope check`)")
    return "\n".join(lines).rstrip("\n") + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot(target_id: str, graphs: list[dict[str, Any]]) -> str:
    out = ["digraph fxscope {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for gi, g in enumerate(graphs):
        out.append(f'  subgraph cluster_{gi} {{ label="{_dot_escape(target_id)} ({_dot_escape(g["module"] or "root")})";')
        names = {n["name"] for n in g["nodes"]}
        for n in g["nodes"]:
            label = f"{n['name']}\\n{n['op']} {n['target']}\\n{n['scope'] or '<root>'}"
            if n.get("file"):
                label += f"\\n{n['file']}:{n['line']}"
            out.append(f'    "g{gi}_{_dot_escape(n["name"])}" [label="{_dot_escape(label).replace(chr(92) * 2 + "n", chr(92) + "n")}"];')
        for n in g["nodes"]:
            for dep in n.get("inputs", []):
                if dep in names:
                    out.append(f'    "g{gi}_{_dot_escape(dep)}" -> "g{gi}_{_dot_escape(n["name"])}";')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render_graphs(report: dict[str, Any], target_id: str, module: str | None, fmt: str) -> str:
    """The graphs of ``target_id`` (optionally only ``module``) as text, dot or json."""
    graphs = _graphs(report, target_id, module)
    if fmt == "json":
        return json.dumps({"target": target_id, "graphs": graphs}, indent=2) + "\n"
    if fmt == "dot":
        return _dot(target_id, graphs)
    return _text(target_id, graphs)
