"""Serve unsaved editor buffers instead of the files on disk, inside a job's child process.

``install_overlays({"/abs/pkg/mod.py": "X = 2\\n"})`` makes ``import pkg.mod`` execute the given
text (regular modules and packages' ``__init__.py``), and makes ``linecache`` (hence tracebacks,
``inspect`` and torch.fx's source locations) return it for that path. Overlaid modules never read
or write bytecode caches. Call it only in a disposable process: it changes global import state.

``serve_from_source(is_user_file)`` makes the workspace's own modules load from their source
too, never from ``__pycache__``: a timestamp-validated ``.pyc`` is stale after an edit that keeps
the file's size within the same second. :func:`served_digest` then gives the sha256 of the bytes
that were actually executed, so a cache entry never pairs a result with content it did not see.

Example::

    install_overlays({"/ws/model.py": "import torch\\nclass M(torch.nn.Module): ..."})
    import model  # runs the overlay text
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fxscope.project.work import Modules

__all__ = ["OverlayFinder", "OverlayLoader", "get_overlay", "install_overlays", "is_user_path", "register_source",
           "serve_from_source", "served_digest", "workspace_import"]

_overlays: dict[str, str] = {}
_finder: OverlayFinder | None = None
_from_source: Callable[[str], bool] | None = None
_real_root: str | None = None  # realpath of the workspace root + os.sep, once confined
_served: dict[str, str] = {}  # normalised path -> sha256 of the source bytes given to the compiler
_sources: dict[str, str] = {}  # normalised path -> the Python source compiled for a file that is not one (a notebook)
_modules: Modules | None = None  # the workspace modules read for judging scripts (workspace_modules)
#: Runs a script's statements through the safe executor (``fxscope.job.safe_module.run_script``,
#: given to :func:`serve_from_source`: this module does not import the executor, which imports it).
ScriptRunner = Callable[[Any, ModuleType, str, Any], None]
_run_script: ScriptRunner | None = None


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


def get_overlay(path: str) -> str | None:
    """Return the overlay text for ``path`` (any spelling of an absolute path), or ``None``."""
    if not _overlays:
        return None
    text = _overlays.get(_norm(path))
    if text is None:
        text = _overlays.get(_norm(os.path.realpath(path)))
    return text


def served_digest(path: str) -> str | None:
    """sha256 of the source this process compiled for ``path`` (overlay or disk), if it did."""
    if not _served:
        return None
    return _served.get(_norm(path))


class OverlayLoader(importlib.machinery.SourceFileLoader):
    """Loads one module from overlay text, or its file; bytecode is neither read nor written."""

    def get_data(self, path: str) -> bytes:
        text = get_overlay(path)
        if text is not None:
            data = text.encode("utf-8")
        else:
            with open(path, "rb") as fh:
                data = fh.read()
        if path == self.path:
            _served[_norm(path)] = hashlib.sha256(data).hexdigest()
        return data

    def path_stats(self, path: str) -> Mapping[str, Any]:
        raise OSError("overlay sources have no stats")  # disables bytecode caching

    def exec_module(self, module: ModuleType) -> None:
        """Run the module's source; a script (``fxscope.project.toplevel.is_script``: its top
        level would call workspace code that does work) runs through the safe executor instead."""
        if not self.path.endswith(".py"):
            super().exec_module(module)
            return
        modules = workspace_modules()
        path = os.path.abspath(self.path)
        tree = modules.tree(path, self.get_data(self.path))  # parsed once with the judging of its importers
        from fxscope.project.toplevel import is_script

        top = modules.toplevel(tree, self.name, os.path.basename(self.path) == "__init__.py", path)
        if is_script(tree, top=top):
            if _run_script is None:  # never run a script's work: refuse it instead
                raise ImportError(f"{self.path} is a script and no safe executor is installed", path=self.path)
            _run_script(tree, module, self.path, top)
            return
        exec(compile(tree, self.path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102


class OverlayFinder(importlib.abc.MetaPathFinder):
    """Finds modules whose source file is overlaid; defers to the normal finders otherwise."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self.refresh()

    def refresh(self) -> None:
        """Recompute the cheap prefilter of module names that may be overlaid."""
        names: set[str] = set()
        for path in _overlays:
            head, base = os.path.split(path)
            if base == "__init__.py":
                names.add(os.path.basename(head))
            elif base.endswith(".py"):
                names.add(base[:-3])
        self._names = names

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        tail = fullname.rpartition(".")[2]
        overlaid = tail in self._names
        if not overlaid and _from_source is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin and spec.has_location:
            _refuse_escape(fullname, spec.origin)
            if overlaid and get_overlay(spec.origin) is not None:
                return _spec(fullname, spec.origin)
            if (_from_source is not None and spec.origin.endswith(".py")
                    and _from_source(os.path.abspath(spec.origin))):
                return _spec(fullname, spec.origin)
            return None
        if not overlaid:
            return None
        # Not found on disk, or only a namespace package there: an overlay may create it.
        entries = path if path is not None else sys.path
        for entry in entries:
            base = os.path.join(entry or os.getcwd(), tail)
            for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
                if get_overlay(candidate) is not None:
                    return _spec(fullname, candidate)
        return None

    def invalidate_caches(self) -> None:
        self.refresh()


def _spec(fullname: str, origin: str) -> importlib.machinery.ModuleSpec | None:
    is_pkg = os.path.basename(origin) == "__init__.py"
    return importlib.util.spec_from_file_location(
        fullname,
        origin,
        loader=OverlayLoader(fullname, origin),
        submodule_search_locations=[os.path.dirname(origin)] if is_pkg else None,
    )


_orig_updatecache = linecache.updatecache


def register_source(path: str, text: str) -> None:
    """Make ``linecache`` (tracebacks, ``inspect``, the tracer's snippets) return ``text`` for
    ``path``, a file whose compiled code is not its content (a notebook's code cells)."""
    _sources[_norm(path)] = text
    linecache.cache.pop(path, None)
    if _finder is None:
        install_overlays({})
    _updatecache(path)


def _updatecache(filename: str, module_globals: Any = None) -> list[str]:
    text = None
    if filename and not filename.startswith("<"):
        text = _sources.get(_norm(filename)) if _sources else None
        if text is None:
            text = get_overlay(filename)
    if text is None:
        return _orig_updatecache(filename, module_globals)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(text), None, lines, filename)
    return lines


def is_user_path(path: str) -> bool:
    """Whether ``path`` (absolute) is a workspace file this process loads from source."""
    return _from_source is not None and _from_source(path)


def workspace_import(level: int, module: str) -> bool:
    """Whether an import statement (``level``, ``module``) brings workspace code: a relative
    import, or a top-level package or module found (without importing it) among workspace files."""
    if level > 0:
        return True
    head = module.partition(".")[0]
    if not head or _from_source is None:
        return False
    found = sys.modules.get(head)
    if isinstance(found, ModuleType):
        attrs = vars(found)  # never the module's own __getattr__
        origin, locations = attrs.get("__file__"), list(attrs.get("__path__") or ())
    else:
        try:
            spec = importlib.machinery.PathFinder.find_spec(head)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        origin, locations = spec.origin, list(spec.submodule_search_locations or ())
    paths = [origin] if isinstance(origin, str) else []
    paths += [os.path.join(location, "__init__.py") for location in locations if isinstance(location, str)]
    return any(is_user_path(os.path.abspath(path)) for path in paths)


def workspace_modules() -> Modules:
    """The workspace modules this process can read (files under the workspace on ``sys.path``,
    overlays first), for judging what a script's top level calls."""
    global _modules
    if _modules is None:
        from fxscope.project.work import Modules

        _modules = Modules(_find_workspace_module, _read_workspace_file, workspace_import)
    return _modules


def _find_workspace_module(name: str) -> str | None:
    parts = name.split(".")
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        base = os.path.join(entry or os.getcwd(), *parts)
        for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
            path = os.path.abspath(candidate)
            if is_user_path(path) and (get_overlay(path) is not None or os.path.isfile(path)):
                return path
    return None


def _read_workspace_file(path: str) -> str | bytes | None:
    text = get_overlay(path)
    if text is not None:
        return text
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def serve_from_source(is_user_file: Callable[[str], bool], root: str | None = None,
                      run_script: ScriptRunner | None = None) -> None:
    """Load every module whose absolute ``.py`` path satisfies ``is_user_file`` from its source
    (or overlay), ignoring and never writing ``__pycache__``. With ``root``, such a module whose
    real path is outside ``root`` (a symlinked file or directory pointing elsewhere) is refused
    with an ImportError: only files under the workspace root are imported. ``run_script`` runs a
    script's statements safely (a script met without one is refused, never run)."""
    global _from_source, _real_root, _modules, _run_script
    _from_source = is_user_file
    if run_script is not None:
        _run_script = run_script
    _modules = None
    if root is not None:
        _real_root = os.path.realpath(root).rstrip(os.sep) + os.sep
    install_overlays({})


def _refuse_escape(fullname: str, origin: str) -> None:
    """ImportError when ``origin`` is a workspace path whose real path lies outside the root."""
    if _real_root is None or _from_source is None:
        return
    path = os.path.abspath(origin)
    if not _from_source(path):
        return
    real = os.path.realpath(path)
    if not real.startswith(_real_root):
        raise ImportError(f"{path} resolves to {real}, outside the workspace: fxscope imports only "
                          "files under the workspace root", name=fullname, path=path)


def install_overlays(overlays: Mapping[str, str]) -> None:
    """Serve ``overlays`` ({absolute file path: source text}) to imports and ``linecache``."""
    global _finder, _modules
    _modules = None
    for path, text in overlays.items():
        key = _norm(path)
        _overlays[key] = text
        real = _norm(os.path.realpath(path))
        if real != key:
            _overlays[real] = text
        linecache.cache.pop(path, None)
        _updatecache(path)
    if _finder is None:
        _finder = OverlayFinder()
        sys.meta_path.insert(0, _finder)
        linecache.updatecache = _updatecache  # survives linecache.clearcache()
    else:
        _finder.refresh()
        if sys.meta_path[0] is not _finder:
            sys.meta_path.remove(_finder)
            sys.meta_path.insert(0, _finder)
