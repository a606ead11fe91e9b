"""A target's outcome as typed data: what one trace (or the cache) says about one target.

A worker answers with a JSON body (the report schema's target fields plus ``findings``,
``graphs``, ``files`` and ``warnings``); the engine checks its shape
(:func:`fxscope.engine.payload.payload_problem`) and reads it once into a :class:`TargetOutcome`.
Every layer above works with the typed outcome; the JSON is written again only for the cache and
the report.

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

from fxscope.model.finding import Finding
from fxscope.model.inputs import InferredInputs
from fxscope.model.location import Location
from fxscope.model.nodes import NodeInfo
from fxscope.model.recipe import Recipe

__all__ = ["ANALYSIS_FX", "MODULE_STATUSES", "STATUSES", "CompileSummary", "ExportSummary", "GraphInfo", "Graphs",
           "ModuleInfo", "TargetOutcome"]

#: Status of a target (the report schema's ``target.status``).
STATUSES = ("traced", "partial", "failed", "error", "skipped")
#: Status of one module of a target (the report schema's ``modules[].status``).
MODULE_STATUSES = ("traced", "leaf", "failed", "unvisited")

_NO_FILES: Mapping[str, str] = MappingProxyType({})

#: The ``analysis`` of an FX graph that fxscope's tracer made (a graph torch.compile captured is
#: ``"compile"``).
ANALYSIS_FX = "fx"


def _cell(data: Mapping[str, Any]) -> int | None:
    cell = data.get("cell")
    return cell if isinstance(cell, int) and not isinstance(cell, bool) else None


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
    def from_json(cls, data: Mapping[str, Any]) -> ModuleInfo:
        """Read a ``modules[]`` entry."""
        located = data.get("file") and data.get("line")
        return cls(str(data["path"]), str(data["type"]), str(data["status"]), int(data.get("params") or 0),
                   Location(str(data["file"]), int(data["line"]), cell=_cell(data)) if located else None)


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


@dataclass(frozen=True)
class CompileSummary:
    """What the compile analysis measured: the ``graphs`` torch.compile captured on the first call,
    the places it broke the graph (``breaks``), the functions it ``recompiled`` for a second batch
    size, the ``dynamic`` setting (``"auto"``, true or false) and how long it took."""

    graphs: int
    breaks: int
    recompiles: int
    dynamic: str | bool = "auto"
    duration_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The body's ``compile`` object."""
        return {"graphs": self.graphs, "breaks": self.breaks, "recompiles": self.recompiles,
                "dynamic": self.dynamic, "duration_ms": self.duration_ms}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompileSummary:
        """Read a ``compile`` object."""
        dynamic = data.get("dynamic", "auto")
        return cls(int(data.get("graphs") or 0), int(data.get("breaks") or 0), int(data.get("recompiles") or 0),
                   dynamic if isinstance(dynamic, bool) else str(dynamic), float(data.get("duration_ms") or 0.0))


@dataclass(frozen=True)
class ExportSummary:
    """What the export analysis found: whether the model ``exported``, in ``strict`` mode, with a
    dynamic batch (``dynamic_batch``), how many ``problems`` it reported and how long it took."""

    exported: bool
    strict: bool = False
    dynamic_batch: bool = False
    problems: int = 0
    duration_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The body's ``export`` object."""
        return {"exported": self.exported, "strict": self.strict, "dynamic_batch": self.dynamic_batch,
                "problems": self.problems, "duration_ms": self.duration_ms}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExportSummary:
        """Read an ``export`` object."""
        return cls(bool(data.get("exported")), bool(data.get("strict")), bool(data.get("dynamic_batch")),
                   int(data.get("problems") or 0), float(data.get("duration_ms") or 0.0))


@dataclass(frozen=True)
class TargetOutcome:
    """What is known about one target after a trace (or from the cache).

    ``status``: one of :data:`STATUSES`; ``nodes``: FX nodes over every graph; ``modules``: every
    submodule of the built model; ``findings``: its problems (each with ``target`` set);
    ``graphs``: its FX graphs (None when they were not loaded: a cached check without graphs);
    ``files``: root-relative path -> content hash of every file the trace read; ``warnings``:
    one-line configuration warnings; ``output``: the tail of what the job printed; ``torch``: the
    version that traced it; ``device``: where the model was built; ``fault``: the kind of worker
    fault (timeout, crash, ...) when the outcome is one; ``compile`` and ``export``: the summaries
    of those analyses when they ran.
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
    compile: CompileSummary | None = None
    export: ExportSummary | None = None
    #: The example inputs inferred for a class target that torch.compile and torch.export ran on.
    inputs: InferredInputs | None = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any], *, target: str = "") -> TargetOutcome:
        """Read a well-formed result body (see ``fxscope.engine.payload.payload_problem``); every
        finding gets ``target`` as its target, every graph node as its ``target_id``."""
        graphs = body.get("graphs")
        files = body.get("files")

        def text(key: str) -> str | None:
            value = body.get(key)
            return value if isinstance(value, str) else None

        return cls(
            status=str(body.get("status", "error")),
            nodes=int(body.get("nodes") or 0),
            modules=tuple(ModuleInfo.from_json(m) for m in body.get("modules") or ()),
            findings=tuple(Finding.from_json(f, target=target or None) for f in body.get("findings") or ()),
            graphs=Graphs(json=graphs, target=target) if isinstance(graphs, list) else None,
            files=MappingProxyType(dict(files)) if isinstance(files, dict) else _NO_FILES,
            warnings=tuple(str(w) for w in body.get("warnings") or ()),
            output=text("output"), torch=text("torch"), device=text("device"), fault=text("fault"),
            build=Recipe.from_json(body["build"]) if isinstance(body.get("build"), dict) else None,
            build_key=text("build_key"), covered_by=text("covered_by"),
            compile=CompileSummary.from_json(body["compile"]) if isinstance(body.get("compile"), Mapping) else None,
            export=ExportSummary.from_json(body["export"]) if isinstance(body.get("export"), Mapping) else None,
            inputs=InferredInputs.from_json(body["inputs"]) if isinstance(body.get("inputs"), Mapping) else None,
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
        if self.compile is not None:
            out["compile"] = self.compile.to_json()
        if self.export is not None:
            out["export"] = self.export.to_json()
        if self.inputs is not None:
            out["inputs"] = self.inputs.to_json()
        return out

    @property
    def root_type(self) -> str | None:
        """The qualified type of the built model (its root module), when it was built."""
        return self.modules[0].type if self.modules else None
