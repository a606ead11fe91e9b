"""Write graph documents as one self-contained, offline HTML file.

The page embeds the bundled renderer (``static/fxscope-graph.js``) and its styles inline under a
strict Content-Security-Policy (hashes, no network), the documents as a JSON data block, each
target's findings as static HTML, and source snippets of the workspace files the graphs and
findings point at; nodes and findings link to their source line (``#src-<file>-L<line>``).

>>> page = render_html([{"version": 1, "target": "m.py::Net", "status": "traced", "module": None,
...                      "graphs": [], "modules": [], "findings": []}], title="m.py::Net")
>>> page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
True
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from fxscope.graphview.document import GraphDocument
from fxscope.project.notebooks import NotebookError, is_notebook, read_notebook

__all__ = ["render_html", "write_report", "renderer_assets"]

MAX_FULL_FILE_LINES = 2000  # larger files are embedded as snippets around the lines used
SNIPPET_CONTEXT = 4
OPEN_WITH_FINDINGS = 3

PAGE_CSS = """
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: #1f2328; background: #fff; }
header { padding: 12px 20px; border-bottom: 1px solid #d0d7de; }
header h1 { font-size: 18px; margin: 0 0 4px; }
header p { margin: 0; color: #57606a; }
main { padding: 8px 20px 40px; }
details.fxscope-target { border: 1px solid #d0d7de; border-radius: 6px; margin: 10px 0; }
details.fxscope-target > summary { padding: 8px 12px; cursor: pointer; font-family: ui-monospace, monospace; }
.fxscope-graph { height: 70vh; border-top: 1px solid #d0d7de; }
.st { display: inline-block; min-width: 64px; padding: 0 6px; margin-right: 8px; border-radius: 8px; text-align: center; font-family: system-ui, sans-serif; font-size: 12px; border: 1px solid #8c959f; }
.st-failed, .st-partial, .st-error, .st-timeout, .st-crashed { color: #cf222e; border-color: #cf222e; }
.st-traced { color: #1a7f37; border-color: #1a7f37; }
ul.findings { margin: 6px 12px 10px; padding-left: 18px; }
ul.findings li { margin: 4px 0; }
.sev-error { color: #cf222e; } .sev-warning { color: #9a6700; } .sev-info, .sev-hint { color: #57606a; }
.hint { color: #57606a; font-size: 13px; }
.nograph { margin: 6px 12px; }
.loc { font-family: ui-monospace, monospace; }
h2 { font-size: 16px; margin: 24px 0 8px; }
details.fxscope-source { margin: 6px 0; }
details.fxscope-source > summary { cursor: pointer; font-family: ui-monospace, monospace; }
pre.src { margin: 4px 0 8px; padding: 6px 0; background: #f6f8fa; overflow-x: auto; font: 12px/1.5 ui-monospace, monospace; }
pre.src .ln { display: block; padding: 0 10px; }
pre.src .ln:target { background: #fff8c5; outline: 1px solid #d4a72c; }
pre.src .ln.used { background: #eef6ff; }
pre.src .ln.flagged { background: #ffebe9; }
pre.src .no { display: inline-block; width: 4em; color: #8c959f; user-select: none; }
pre.src .gap { color: #8c959f; padding: 0 10px; }
"""


def renderer_assets() -> tuple[str, str]:
    """The bundled renderer's JavaScript and CSS, read from the package data."""
    static = resources.files("fxscope.graphview") / "static"
    return (static / "fxscope-graph.js").read_text(encoding="utf-8"), (static / "fxscope-graph.css").read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _script_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _is_workspace_file(file: str) -> bool:
    return bool(file) and not file.startswith("/") and ".." not in Path(file).parts and ":" not in file


def _referenced_lines(documents: Sequence[Mapping[str, Any]]) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    used: dict[str, set[int]] = {}
    flagged: dict[str, set[int]] = {}
    for doc in documents:
        for g in doc.get("graphs") or ():
            for n in g.get("nodes") or ():
                if n.get("file") and n.get("line"):
                    used.setdefault(n["file"], set()).add(int(n["line"]))
        for f in doc.get("findings") or ():
            for loc in (f, f.get("anchor") or {}):
                if loc.get("file") and loc.get("line"):
                    flagged.setdefault(loc["file"], set()).add(int(loc["line"]))
    return used, flagged


def _source_section(file: str, anchor: str, text: str, used: set[int], flagged: set[int],
                    labels: Mapping[int, str] | None = None) -> str:
    lines = text.splitlines()
    labels = labels or {}
    wanted = used | flagged
    if len(lines) <= MAX_FULL_FILE_LINES:
        shown = set(range(1, len(lines) + 1))
    else:
        shown = {i for w in wanted for i in range(w - SNIPPET_CONTEXT, w + SNIPPET_CONTEXT + 1) if 1 <= i <= len(lines)}
    out = [f'<details class="fxscope-source" id="src-{anchor}"><summary>{_esc(file)}</summary><pre class="src">']
    previous = 0
    for no in sorted(shown):
        if previous and no != previous + 1:
            out.append('<span class="gap">\u2026</span>')
        cls = "ln flagged" if no in flagged else "ln used" if no in used else "ln"
        label = labels.get(no, str(no))
        out.append(f'<span class="{cls}" id="src-{anchor}-L{no}"><span class="no">{_esc(label)}</span>'
                   f'{_esc(lines[no - 1])}</span>')
        previous = no
    out.append("</pre></details>")
    return "".join(out)


def _finding_item(f: Mapping[str, Any], anchors: Mapping[str, str]) -> str:
    loc = f"{f.get('file', '')}:{f.get('line', '')}" + (f":{f['column']}" if f.get("column") else "")
    file, line = f.get("file"), f.get("line")
    loc_html = (f'<a class="loc" href="#src-{anchors[file]}-L{int(line)}">{_esc(loc)}</a>'
                if isinstance(file, str) and file in anchors and line else f'<span class="loc">{_esc(loc)}</span>')
    scopes = [s.get("path") or "<root>" for s in f.get("scopes") or ()]
    parts = [f'<li><span class="sev-{_esc(f.get("severity", ""))}">{_esc(f.get("code", ""))}</span> {loc_html} {_esc(f.get("message", ""))}']
    anchor = f.get("anchor") or {}
    if anchor.get("file") in anchors and anchor.get("line"):
        parts.append(f' (from your code at <a class="loc" href="#src-{anchors[anchor["file"]]}-L{int(anchor["line"])}">'
                     f'{_esc(anchor["file"])}:{int(anchor["line"])}</a>)')
    if scopes:
        parts.append(f'<div class="hint">in: {_esc(", ".join(scopes[:8]))}{", …" if len(scopes) > 8 else ""}</div>')
    if f.get("hint"):
        parts.append(f'<div class="hint">hint: {_esc(f["hint"])}</div>')
    parts.append("</li>")
    return "".join(parts)


def _target_section(index: int, doc: Mapping[str, Any], anchors: Mapping[str, str], open_: bool) -> str:
    nodes = sum(len(g.get("nodes") or ()) for g in doc.get("graphs") or ())
    findings = doc.get("findings") or []
    module = f" › {doc['module']}" if doc.get("module") else ""
    summary = (f'<span class="st st-{_esc(doc.get("status", ""))}">{_esc(doc.get("status", ""))}</span>'
               f'{_esc(doc["target"])}{_esc(module)} · {nodes} nodes · {len(findings)} finding{"s" if len(findings) != 1 else ""}')
    items = "".join(_finding_item(f, anchors) for f in findings)
    graph = '<div class="fxscope-graph"></div>' if nodes else '<p class="hint nograph">no graph nodes</p>'
    return (f'<details class="fxscope-target" data-doc="{index}" id="target-{index}"{" open" if open_ else ""}>'
            f'<summary>{summary}</summary>{"<ul class=findings>" + items + "</ul>" if items else ""}{graph}</details>')


def render_html(documents: Sequence[GraphDocument | Mapping[str, Any]], *, title: str, root: Path | None = None,
                subtitle: str = "", open_all: bool | None = None) -> str:
    """One self-contained HTML page drawing ``documents``; source snippets are read from files
    under ``root`` (workspace-relative paths only)."""
    script, graph_css = renderer_assets()
    if "</script" in script.lower():
        raise ValueError("the renderer bundle contains '</script' and cannot be inlined")
    used, flagged = _referenced_lines(documents)
    anchors: dict[str, str] = {}
    sources: list[str] = []
    if root is not None:
        for file in sorted(set(used) | set(flagged)):
            if not _is_workspace_file(file):
                continue
            path = root / file
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                labels = None
                if is_notebook(file):  # its code cells, each line labelled `cell:line`
                    nb = read_notebook(text)
                    text = nb.text
                    labels = {line: f"{cell}:{at}" for line, cell, at in nb.index.lines()}
            except (OSError, NotebookError):
                continue
            anchors[file] = f"f{len(anchors)}"
            sources.append(_source_section(file, anchors[file], text, used.get(file, set()), flagged.get(file, set()),
                                           labels))
    if open_all is None:
        open_all = len(documents) == 1
    # A report opens (and draws) its first few targets with findings; the rest draw when opened.
    with_findings = [i for i, d in enumerate(documents) if d.get("findings")][:OPEN_WITH_FINDINGS]
    sections = "".join(_target_section(i, d, anchors, open_all or i in with_findings) for i, d in enumerate(documents))
    css = PAGE_CSS + graph_css
    data = {"documents": list(documents), "anchors": anchors}
    csp = f"default-src 'none'; style-src {_sha256(css)}; script-src {_sha256(script)}; img-src data:; base-uri 'none'; form-action 'none'"
    source_html = f"<h2>Source</h2>{''.join(sources)}" if sources else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>{css}</style></head>\n<body>\n"
        f"<header><h1>fxscope: {_esc(title)}</h1><p>{_esc(subtitle)}</p></header>\n"
        f'<main><section class="targets">{sections}</section>\n<section class="sources">{source_html}</section></main>\n'
        f'<script type="application/json" id="fxscope-data">{_script_json(data)}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )


def _summary_line(summary: Mapping[str, Any]) -> str:
    by_status = ", ".join(f"{n} {k}" for k, n in (summary.get("by_status") or {}).items() if n)
    by_sev = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in (summary.get("by_severity") or {}).items() if n)
    head = f"{summary.get('targets', 0)} targets" + (f" ({by_status})" if by_status else "")
    return " · ".join(x for x in (head, by_sev or "no findings") if x)


def write_report(report: Mapping[str, Any], directory: Path, *, root: Path | None = None) -> Path:
    """Write ``directory/index.html``: every target of a report made with graphs, with its graph
    and findings linked to source snippets. Returns the file written."""
    from fxscope.graphview.document import build_document

    docs = []
    for t in sorted(report.get("targets") or (), key=lambda t: (t.get("status") == "traced", t.get("id", ""))):
        docs.append(build_document(t["id"], status=str(t.get("status", "")), graphs=t.get("graphs") or (),
                                   modules=t.get("modules") or (), findings=report.get("findings") or ()))
    ids = {t.get("id") for t in report.get("targets") or ()}
    orphans = [f for f in report.get("findings") or () if f.get("target") not in ids
               and not any(s.get("target") in ids for s in f.get("scopes") or ())]
    for f in orphans:  # e.g. FXS402 for a file that does not import: its target id is the file
        docs.append(build_document(str(f.get("target") or f.get("file") or "?"), status="error", graphs=(),
                                   findings=[f]))
    counts = _summary_line(report.get("summary") or {})
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "index.html"
    out.write_text(render_html(docs, title=f"{len(docs)} targets", root=root, subtitle=counts, open_all=False),
                   encoding="utf-8")
    return out

