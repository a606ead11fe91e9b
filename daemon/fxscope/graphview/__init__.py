"""Graph documents and the self-contained HTML graph view (torch-free, no Node needed).

The graph document (version 1) is the one shape every front end draws: ``fxscope graph
--format html``, ``fxscope check --html-report`` and the language server's ``fxscope.showGraph``
(``result["graph"]``). The renderer that draws it is bundled JavaScript shipped as package data
(``static/fxscope-graph.js``, built from ``clients/graph``); docs/graph-format.md describes it.
"""

from fxscope.graphview.document import (
    GraphDocument,
    GraphModuleError,
    build_document,
    graph_document,
    module_subgraph,
)
from fxscope.graphview.html import render_html, write_report

__all__ = [
    "GraphDocument",
    "GraphModuleError",
    "build_document",
    "graph_document",
    "module_subgraph",
    "render_html",
    "write_report",
]
