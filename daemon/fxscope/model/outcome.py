"""A target's outcome as typed data: what one trace (or the cache) says about one target.

A job builds a :class:`TargetOutcome` in its child and sends :meth:`TargetOutcome.to_json` (the
report schema's target fields plus ``findings``, ``graphs``, ``files`` and ``warnings``); the engine
reads it back with one strict :meth:`TargetOutcome.from_json`, which raises
:class:`~fxscope.model.wire.WireError` on anything malformed. Every layer above works with the typed
outcome; the JSON is written again only for the cache and the report.

>>> body = {"status": "traced", "nodes": 2, "modules": [{"path": "", "type": "m.Net", "status": "traced",
...     "params": 0, "file": "m.py", "line": 3}], "findings": [], "graphs": [{"module": "", "nodes": [
...     {"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "m.Net", "inputs": []},
...     {"name": "relu", "op": "call_function", "target": "torch.relu", "scope": "", "scope_type": "m.Net",
...      "inputs": ["x"], "file": "m.py", "line": 6}]}], "files": {"m.py": "ab12"}}
>>> out = TargetOutcome.from_json(body, target="m.py::Net")
>>> out.status, out.modules[0].location, [n.name for n in out.graphs[0].nodes]
('traced', Location(file='m.py', line=3, column=None, end_line=None, end_column=None, message=None, target=None, cell=None), ['x', 'relu'])
>>> out.graphs[0].nodes[1].target_id, out.to_json()["graphs"] == body["graphs"]
('m.py::Net', True)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from fxscope.model.analysis import AnalysisSummary
from fxscope.model.finding import Finding
from fxscope.model.inputs import InferredInputs
from fxscope.model.location import Location
from fxscope.model.nodes import NodeInfo
from fxscope.model.recipe import Recipe
from fxscope.model.wire import WireError, count, items, need, only, opt, opt_position, position, strings

__all__ = ["ANALYSIS_FX", "MODULE_STATUSES", "STATUSES", "AnalysisSummary", "GraphInfo", "Graphs", "ModuleInfo",
           "TargetOutcome", "check_graph"]

#: Status of a target (the report schema's ``target.status``).
STATUSES = ("traced", "partial", "failed", "error", "skipped")
#: Status of one module of a target (the report schema's ``modules[].status``).
MODULE_STATUSES = ("traced", "leaf", "failed", "unvisited")

_NO_FILES: Mapping[str, str] = MappingProxyType({})
_NO_ANALYSES: Mapping[str, AnalysisSummary] = MappingProxyType({})
_OPS = frozenset({"placeholder", "get_attr", "call_function", "call_method", "call_module", "output"})
_LOCATION_KEYS = ("file", "line", "column", "end_line", "end_column")

#: The ``analysis`` of an FX graph that fxscope's tracer made (a graph another analysis captured
#: carries that analysis's name).
ANALYSIS_FX = "fx"


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """One submodule of a built model: its ``path`` (``""`` = the root), qualified ``type``,
    ``status`` (one of :data:`MODULE_STATUSES`), directly owned ``params`` and where its class is
    defined (``location``, when fxscope could tell)."""

    path: str
    type: str
    status: str
    params: int = 0
    location: Location | None = None

    @property
    def parent(self) -> str:
        """The path of the module that owns this one (``""`` for a child of the root)."""
        return self.path.rpartition(".")[0]

    def to_json(self) -> dict[str, Any]:
        """The schema ``modules[]`` entry."""
        out: dict[str, Any] = {"path": self.path, "type": self.type, "status": self.status, "params": self.params}
        if self.location is not None:
            out["file"] = self.location.file
            out["line"] = self.location.line
            if self.location.cell is not None:
                out["cell"] = self.location.cell
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "module") -> ModuleInfo:
        """Read a ``modules[]`` entry (strict; a model has hundreds, most without a location,
        which are read without building messages)."""
        if type(data) is dict and type(data.get("path")) is str and type(data.get("type")) is str:
            status, params = data.get("status"), data.get("params")
            if (type(status) is str and status in MODULE_STATUSES and (params is None or type(params) is int
                    and params >= 0) and all(key not in data for key in _LOCATION_KEYS)):
                return cls(data["path"], data["type"], status, params or 0)
        if not isinstance(data, dict):
            raise WireError(f"{where}: not an object")
        path, type_ = need(data, "path", str, where), need(data, "type", str, where)
        status = data.get("status")
        if not (isinstance(status, str) and status in MODULE_STATUSES):
            raise WireError(f"{where}: bad status")
        params = count(data, "params", where)
        located = "file" in data or "line" in data
        return cls(path, type_, status, params, Location.from_json(data, where) if located else None)


@dataclass(frozen=True, slots=True)
class GraphInfo:
    """One FX graph of a target: the ``module`` it traces (``""`` = the root) and its nodes.
    ``analysis`` says who made it: fxscope's tracer (``"fx"``) or torch.compile (``"compile"``:
    one of the graphs Dynamo captured, in order); ``ends`` is where the graph break that ended a
    captured graph is, its ``message`` the break's type."""

    module: str
    nodes: tuple[NodeInfo, ...]
    analysis: str = ANALYSIS_FX
    ends: Location | None = None

    def to_json(self) -> dict[str, Any]:
        """The schema ``graphs[]`` entry."""
        out: dict[str, Any] = {"module": self.module, "nodes": [n.graph_json() for n in self.nodes]}
        if self.analysis != ANALYSIS_FX:
            out["analysis"] = self.analysis
        if self.ends is not None:
            out["ends"] = {"reason": self.ends.message or "", "file": self.ends.file, "line": self.ends.line}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, target: str = "") -> GraphInfo:
        """Read a ``graphs[]`` entry; its nodes carry ``target`` as their ``target_id``."""
        module = str(data.get("module", ""))
        ends = data.get("ends")
        where = None
        if isinstance(ends, Mapping) and ends.get("file") and ends.get("line"):
            where = Location(str(ends["file"]), int(ends["line"]), message=str(ends.get("reason") or ""))
        return cls(module, tuple(NodeInfo.from_json(n, target=target, graph=module) for n in data.get("nodes") or ()),
                   str(data.get("analysis") or ANALYSIS_FX), where)


def _plain_node(node: Any) -> bool:
    """A well-formed node (a graph has thousands): strings, a known op and, if located, a file and
    a line number; anything else is described by :func:`check_graph`."""
    if type(node) is not dict:
        return False
    op = node.get("op")
    if type(op) is not str or op not in _OPS:
        return False
    for key in ("name", "target", "scope", "scope_type"):
        if type(node.get(key)) is not str:
            return False
    if "file" not in node and "line" not in node:
        located = True
    else:
        file, line = node.get("file"), node.get("line")
        located = type(file) is str and type(line) is int and line >= 1
    return located and all(node.get(k) is None for k in ("column", "end_line", "end_column"))


def check_graph(g: Any, where: str) -> None:
    """Raise :class:`~fxscope.model.wire.WireError` unless ``g`` is a well-formed ``graphs[]``
    entry (its nodes are read into :class:`NodeInfo` on first use, see :class:`Graphs`)."""
    if not isinstance(g, dict):
        raise WireError(f"{where}: not an object")
    need(g, "module", str, where)
    opt(g, "analysis", str, where)
    ends = g.get("ends")
    if ends is not None:
        if not isinstance(ends, dict):
            raise WireError(f"{where}.ends: not an object")
        if "file" in ends or "line" in ends:
            need(ends, "file", str, f"{where}.ends")
            position(ends, "line", f"{where}.ends")
        opt(ends, "reason", str, f"{where}.ends")
    for i, node in enumerate(need(g, "nodes", list, where)):
        if _plain_node(node):
            continue
        at = f"{where}.nodes[{i}]"
        if not isinstance(node, dict):
            raise WireError(f"{at}: not an object")
        for key in ("name", "target", "scope", "scope_type"):
            need(node, key, str, at)
        op = node.get("op")
        if not isinstance(op, str) or op not in _OPS:
            raise WireError(f"{at}: bad op")
        if "file" in node or "line" in node:
            need(node, "file", str, at)
            position(node, "line", at)
        for key in ("column", "end_line", "end_column"):
            opt_position(node, key, at)


class Graphs(Sequence[GraphInfo]):
    """The FX graphs of one outcome, read from their JSON on first use.

    A large model's graphs are most of its result (a 2,000-node graph takes milliseconds to read
    into typed nodes); the diagnostics of an edit need only the findings, so they never wait for
    that, and the cache writes the JSON as it came. The JSON is dropped once read.
    """

    __slots__ = ("_json", "_typed", "_target")

    def __init__(self, graphs: Sequence[GraphInfo] = (), *, json: Sequence[Mapping[str, Any]] | None = None,
                 target: str = "") -> None:
        self._json = json
        self._typed: tuple[GraphInfo, ...] | None = None if json is not None else tuple(graphs)
        self._target = target

    def _graphs(self) -> tuple[GraphInfo, ...]:
        typed = self._typed
        if typed is None:
            raw = self._json or ()
            typed = self._typed = tuple(GraphInfo.from_json(g, target=self._target) for g in raw)
            self._json = None
        return typed

    @overload
    def __getitem__(self, index: int) -> GraphInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[GraphInfo]: ...

    def __getitem__(self, index: int | slice) -> GraphInfo | Sequence[GraphInfo]:
        return self._graphs()[index]

    def __len__(self) -> int:
        raw = self._json
        return len(raw) if raw is not None else len(self._graphs())

    def __iter__(self) -> Iterator[GraphInfo]:
        return iter(self._graphs())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graphs):
            return NotImplemented
        return self._graphs() == other._graphs()

    def __repr__(self) -> str:
        return f"Graphs({len(self)} graphs)"

    def node_count(self) -> int:
        """Nodes over every graph."""
        raw = self._json
        if raw is not None:
            return sum(len(g.get("nodes") or ()) for g in raw)
        return sum(len(g.nodes) for g in self._graphs())

    def to_json(self) -> list[dict[str, Any]]:
        """The schema ``graphs`` list."""
        raw = self._json
        if raw is not None:
            return [dict(g) for g in raw]
        return [g.to_json() for g in self._graphs()]


#: The fields of a result body (what a job returns and the cache stores).
_BODY_KEYS = frozenset({"status", "nodes", "modules", "findings", "graphs", "files", "warnings", "output", "torch",
                        "device", "fault", "build", "build_key", "covered_by", "analyses",
                        "inputs", "inputs_for"})


@dataclass(frozen=True)
class TargetOutcome:
    """What is known about one target after a trace (or from the cache).

    ``status``: one of :data:`STATUSES`; ``nodes``: FX nodes over every graph; ``modules``: every
    submodule of the built model; ``findings``: its problems (each with ``target`` set);
    ``graphs``: its FX graphs (None when they were not loaded: a cached check without graphs);
    ``files``: root-relative path -> content hash of every file the trace read; ``warnings``:
    one-line configuration warnings; ``output``: the tail of what the job printed; ``torch``: the
    version that traced it; ``device``: where the model was built; ``fault``: the kind of worker
    fault (timeout, crash, ...) when the outcome is one; ``analyses``: analysis name -> its
    :class:`AnalysisSummary`, for the analyses that ran and have one.
    """

    status: str
    nodes: int = 0
    modules: tuple[ModuleInfo, ...] = ()
    findings: tuple[Finding, ...] = ()
    graphs: Graphs | None = None
    files: Mapping[str, str] = field(default_factory=lambda: _NO_FILES)
    warnings: tuple[str, ...] = ()
    output: str | None = None
    torch: str | None = None
    device: str | None = None
    fault: str | None = None
    #: How fxscope built a class target on its own; the key of the recipes it was built from
    #: (a cached outcome built under another key is stale); the configured factory target that
    #: builds the same class, when this automatic build was set aside for it.
    build: Recipe | None = None
    build_key: str | None = None
    covered_by: str | None = None
    analyses: Mapping[str, AnalysisSummary] = field(default_factory=lambda: _NO_ANALYSES)
    #: The example inputs inferred for a class target, and the analyses that ran on them (by name).
    inputs: InferredInputs | None = None
    inputs_for: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any, *, target: str = "") -> TargetOutcome:
        """Read a result body, strictly: a field that is unknown, missing or of the wrong type
        raises :class:`~fxscope.model.wire.WireError` saying where (a body comes from a process
        that ran model code, or from a cache file anyone can edit). Every finding gets ``target``
        as its target, every graph node as its ``target_id``; graphs are checked here and read
        into typed nodes on first use."""
        body = only(body, _BODY_KEYS, "result")
        status = body.get("status")
        if not (isinstance(status, str) and status in STATUSES):
            raise WireError(f"status {status!r} is not one of {sorted(STATUSES)}")
        graphs = body.get("graphs")
        if graphs is not None:
            for i, g in enumerate(items(body, "graphs", "result")):
                check_graph(g, f"graphs[{i}]")
        files = body.get("files")
        if files is not None and not (isinstance(files, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
            raise WireError("'files' is not a map of paths to hashes")
        try:
            build = Recipe.from_json(body["build"]) if body.get("build") is not None else None
        except ValueError as e:
            raise WireError(f"'build' is not a recipe ({e})") from None
        analyses = body.get("analyses", {})
        if not isinstance(analyses, dict):
            raise WireError("'analyses' is not an object")
        return cls(
            status=status,
            nodes=count(body, "nodes", "result"),
            modules=tuple(ModuleInfo.from_json(m, f"modules[{i}]") for i, m in enumerate(items(body, "modules", "result"))),
            findings=tuple(Finding.from_json(f, target=target or None, where=f"findings[{i}]")
                           for i, f in enumerate(items(body, "findings", "result"))),
            graphs=Graphs(json=graphs, target=target) if graphs is not None else None,
            files=MappingProxyType(dict(files)) if files else _NO_FILES,
            warnings=strings(body, "warnings", "result"),
            output=opt(body, "output", str, "result"), torch=opt(body, "torch", str, "result"),
            device=opt(body, "device", str, "result"), fault=opt(body, "fault", str, "result"),
            build=build, build_key=opt(body, "build_key", str, "result"),
            covered_by=opt(body, "covered_by", str, "result"),
            analyses=MappingProxyType({str(name): AnalysisSummary.from_json(value, f"analyses.{name}")
                                       for name, value in analyses.items()}) if analyses else _NO_ANALYSES,
            inputs=InferredInputs.from_json(body["inputs"], "inputs") if body.get("inputs") is not None else None,
            inputs_for=strings(body, "inputs_for", "result"),
        )

    def to_json(self) -> dict[str, Any]:
        """The result body (what the cache stores)."""
        out: dict[str, Any] = {"status": self.status, "modules": [m.to_json() for m in self.modules],
                               "nodes": self.nodes, "findings": [f.to_json() for f in self.findings]}
        if self.graphs is not None:
            out["graphs"] = self.graphs.to_json()
        out["files"] = dict(self.files)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        for key in ("output", "torch", "device", "fault", "build_key", "covered_by"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.analyses:
            out["analyses"] = {name: s.to_json() for name, s in self.analyses.items()}
        if self.inputs is not None:
            out["inputs"] = self.inputs.to_json()
        if self.inputs_for:
            out["inputs_for"] = list(self.inputs_for)
        return out

    @property
    def root_type(self) -> str | None:
        """The qualified type of the built model (its root module), when it was built."""
        return self.modules[0].type if self.modules else None
