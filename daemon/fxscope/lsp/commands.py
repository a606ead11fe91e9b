"""``workspace/executeCommand``: ``fxscope.showGraph`` (text, and the graph document of
docs/graph-format.md that the renderer draws), ``fxscope.retrace``, ``fxscope.clearCache``,
``fxscope.status``.

Arguments are checked here (a malformed call is an InvalidParams error, never a crash).

>>> from fxscope.model import GraphView, NodeInfo
>>> view = GraphView("m.py::Net", None, "traced", (("", (NodeInfo("x", "placeholder", "x", "", "m.Net"),)),), ())
>>> print(graph_text(view), end="")
graph m.py::Net (root) · traced
  x  placeholder  x  [<root> Net]
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from fxscope.graphview.document import GraphModuleError
from fxscope.lsp.context import ServerContext
from fxscope.lsp.workspaces import Folder, uri_to_path
from fxscope.model import GraphView

__all__ = ["register", "graph_text", "SHOW_GRAPH", "RETRACE", "CLEAR_CACHE", "STATUS"]

log = logging.getLogger("fxscope.lsp")

SHOW_GRAPH, RETRACE, CLEAR_CACHE, STATUS = "fxscope.showGraph", "fxscope.retrace", "fxscope.clearCache", "fxscope.status"


def graph_text(view: GraphView) -> str:
    """A plain-text rendering: one block per graph, one line per node with its scope and line."""
    out = []
    for module, nodes in view.graphs:
        title = "root" if module == "" else module
        out.append(f"graph {view.target} ({title}) · {view.status}")
        rows = [(n.name, n.op, n.target,
                 f"[{n.scope or '<root>'} {n.scope_type.rsplit('.', 1)[-1]}]",
                 f"{n.location.file}:{n.location.line}" if n.location else "") for n in nodes]
        if rows:
            widths = [max(len(r[i]) for r in rows) for i in range(3)]
            for r in rows:
                line = f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}"
                out.append(f"{line}  {r[4]}".rstrip() if r[4] else line.rstrip())
    if not view.graphs:
        out.append(f"graph {view.target} · {view.status} (no graph)")
    for f in view.findings:
        out.append(f"{f.location.file}:{f.location.line}: {f.code} {f.message}")
    return "\n".join(out) + "\n"


def _invalid(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message)


class Commands:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    def _folder(self, uri: Any) -> list[Folder]:
        if uri is None:
            return self.ctx.folders.all()
        if not isinstance(uri, str):
            raise _invalid("expected a folder or document URI")
        path = uri_to_path(uri)
        folder = self.ctx.folders.for_path(path, create=False)
        if folder is None:
            raise _invalid(f"{uri} is not in any workspace folder")
        return [folder]

    def show_graph(self, args: tuple[Any, ...]) -> dict[str, Any]:
        if not args or not isinstance(args[0], str) or len(args) > 3:
            raise _invalid("fxscope.showGraph expects (target id, module path or null, folder URI or null)")
        target = args[0]
        module = args[1] if len(args) > 1 else None
        if module is not None and not isinstance(module, str):
            raise _invalid("the module path must be a string or null")
        for folder in self._folder(args[2] if len(args) > 2 else None):
            try:
                document = folder.workspace.graph_document(target, module)
                view = folder.workspace.graph(target, module)
            except KeyError:
                continue  # not a target of this folder
            except GraphModuleError as e:
                raise _invalid(str(e)) from None
            return {"text": graph_text(view), "graph": document, "folder": folder.uri}
        raise _invalid(f"no target {target!r}")

    def retrace(self, args: tuple[Any, ...]) -> dict[str, Any]:
        if len(args) > 1:
            raise _invalid("fxscope.retrace expects at most one URI (a document or folder)")
        uri = args[0] if args else None
        path = uri_to_path(uri) if isinstance(uri, str) else None
        folders = self._folder(uri)
        for folder in folders:
            paths = None if path is None or path == folder.root else [path]
            self.ctx.progress.expect_round(folder, "fxscope: re-tracing")
            folder.workspace.retrace(paths)
        return {"retracing": [f.uri for f in folders]}

    def clear_cache(self, args: tuple[Any, ...]) -> dict[str, Any]:
        folders = self._folder(args[0] if args else None)
        for folder in folders:
            folder.workspace.clear_cache()
        return {"cleared": [f.uri for f in folders]}

    def status(self, args: tuple[Any, ...]) -> dict[str, Any]:
        out = []
        for folder in self._folder(args[0] if args else None):
            st = folder.workspace.status()
            out.append({"folder": folder.uri, "root": str(st.root), "total": st.total, "done": st.done,
                        "running": st.running, "queued": st.queued, "generation": st.generation,
                        "last_duration_ms": st.last_duration_ms, "worker": st.worker,
                        "config_error": st.config_error, "checks": st.checks, "torch": st.torch,
                        "sandbox": st.sandbox.to_json() if st.sandbox is not None else None})
        return {"server": {"pid": os.getpid(), "encoding": self.ctx.encoder.encoding,
                           "torch_imported": "torch" in sys.modules,
                           "diagnostics": "pull" if self.ctx.diagnostics.pull else "push"},
                "folders": out}


def register(ls: LanguageServer, ctx: ServerContext) -> Commands:
    commands = Commands(ctx)

    @ls.command(SHOW_GRAPH)
    def show_graph(*args: Any) -> dict[str, Any]:
        return commands.show_graph(args)

    @ls.command(RETRACE)
    def retrace(*args: Any) -> dict[str, Any]:
        return commands.retrace(args)

    @ls.command(CLEAR_CACHE)
    def clear_cache(*args: Any) -> dict[str, Any]:
        return commands.clear_cache(args)

    @ls.command(STATUS)
    def status(*args: Any) -> dict[str, Any]:
        return commands.status(args)

    return commands
