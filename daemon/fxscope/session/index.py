"""Per-file indexes of the result store: graph nodes by source line, and module instances by the
line of their class. Plain data structures without locks (the store guards them); each target's
entries are replaced as a whole when its result is.

>>> from fxscope.model import Location, ModuleInfo
>>> modules = ModuleIndex()
>>> modules.put("m.py::Net", (ModuleInfo("", "m.Net", "traced", 0, Location("m.py", 3)),
...                           ModuleInfo("fc", "torch.nn.Linear", "leaf")))
>>> [(i.target, i.module.path) for i in modules.instances("m.py")[3]], modules.leaf_children("m.py::Net", "")
([('m.py::Net', '')], ('fc',))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fxscope.model import GraphInfo, ModuleInfo, NodeInfo
from fxscope.model.outcome import ANALYSIS_FX

__all__ = ["Instance", "ModuleIndex", "NodeIndex"]


class NodeIndex:
    """Graph nodes by (file, line) over every target. A target's graphs are indexed once, on the
    first query after they were put: reading a 2,000-node graph into typed nodes takes
    milliseconds, which the diagnostics of the edit that produced it never wait for. Only fxscope's
    FX graphs are indexed (a line's nodes per module instance); the graphs torch.compile captured
    are drawn by the graph view."""

    def __init__(self) -> None:
        self._lines: dict[str, dict[int, list[NodeInfo]]] = {}  # file -> line -> nodes
        self._files: dict[str, set[str]] = {}  # target -> files in _lines
        self._waiting: dict[str, Iterable[GraphInfo]] = {}  # target -> graphs not indexed yet

    def put(self, target: str, graphs: Iterable[GraphInfo] | None) -> None:
        """``target``'s nodes are now those of ``graphs`` (indexed by the next query)."""
        self._waiting[target] = graphs if graphs is not None else ()

    def drop(self, target: str) -> None:
        """Forget every node of ``target``."""
        self._waiting.pop(target, None)
        self._remove(target)

    def at(self, file: str, line: int) -> list[NodeInfo]:
        """The nodes produced by ``line`` of ``file``, over every target and instance."""
        if self._waiting:
            waiting, self._waiting = self._waiting, {}
            for target, graphs in waiting.items():
                self._remove(target)
                self._add(target, graphs)
        return list(self._lines.get(file, {}).get(line, ()))

    def _remove(self, target: str) -> None:
        for file in self._files.pop(target, ()):
            lines = self._lines.get(file, {})
            for line in list(lines):
                kept = [n for n in lines[line] if n.target_id != target]
                if kept:
                    lines[line] = kept
                else:
                    del lines[line]
            if not lines:
                self._lines.pop(file, None)

    def _add(self, target: str, graphs: Iterable[GraphInfo]) -> None:
        files: set[str] = set()
        for graph in graphs:
            if graph.analysis != ANALYSIS_FX:
                continue
            for node in graph.nodes:
                loc = node.location
                if loc is None:
                    continue
                self._lines.setdefault(loc.file, {}).setdefault(loc.line, []).append(node)
                files.add(loc.file)
        if files:
            self._files[target] = files


@dataclass(frozen=True)
class Instance:
    """One module instance of a traced target: the ``target`` id and its :class:`ModuleInfo`."""

    target: str
    module: ModuleInfo


class ModuleIndex:
    """Module instances by the file and line of their class (``classes_in``: which models contain
    a class, and how it fared there), and each target's leaf modules by their parent's path."""

    def __init__(self) -> None:
        self._classes: dict[str, dict[int, list[Instance]]] = {}  # file -> class line -> instances
        self._files: dict[str, set[str]] = {}  # target -> files in _classes
        self._leaves: dict[str, dict[str, tuple[str, ...]]] = {}  # target -> parent path -> leaf paths

    def put(self, target: str, modules: Iterable[ModuleInfo]) -> None:
        """``target``'s modules are now ``modules``."""
        self.drop(target)
        files: set[str] = set()
        leaves: dict[str, list[str]] = {}
        for m in modules:
            if m.location is not None:
                self._classes.setdefault(m.location.file, {}).setdefault(m.location.line, []).append(Instance(target, m))
                files.add(m.location.file)
            if m.status == "leaf" and m.path:
                leaves.setdefault(m.parent, []).append(m.path)
        if files:
            self._files[target] = files
        if leaves:
            self._leaves[target] = {parent: tuple(paths) for parent, paths in leaves.items()}

    def drop(self, target: str) -> None:
        """Forget every module of ``target``."""
        self._leaves.pop(target, None)
        for file in self._files.pop(target, ()):
            lines = self._classes.get(file, {})
            for line in list(lines):
                kept = [i for i in lines[line] if i.target != target]
                if kept:
                    lines[line] = kept
                else:
                    del lines[line]
            if not lines:
                self._classes.pop(file, None)

    def instances(self, file: str) -> dict[int, list[Instance]]:
        """Class line -> the instances of that class, for the classes defined in ``file``."""
        return {line: list(found) for line, found in self._classes.get(file, {}).items()}

    def leaf_children(self, target: str, path: str) -> tuple[str, ...]:
        """The leaf submodules directly under the module at ``path`` of ``target``."""
        return self._leaves.get(target, {}).get(path, ())
