"""What runs inside a forked child for one trace job: import, build, trace, record touched files.

A job is a :class:`~fxscope.worker.trace_job.TraceJob` as JSON::

    {"root": "/ws", "config": Config.to_json(), "target": Target.to_json(), "overlays": {...},
     "timeout": 30, "memory_limit_mb": 4096, "fallback": {"file": "/ws/m.py", "line": 3}}

The result is a JSON dict: the trace report body (``status``, ``modules``, ``findings`` with
absolute paths, ``graphs``, ``nodes``, ``forward_order``) plus ``files`` (root-relative path ->
sha256 of the content used), ``device`` and ``torch``. Import and build failures are findings
(FXS402, FXS401) with status ``error``, never exceptions; a discovered class whose constructor
takes arguments and raises without them is skipped (FXS405). When a module was missing, ``files``
also maps the places that would have provided it to ``"absent"`` (``dir/`` for a package
directory; absolute when outside the root), so the result is stale once one of them appears.

Workspace modules are compiled from their source, never from ``__pycache__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from fxscope.model.recipe import Recipe
from fxscope.project.notebooks import is_notebook
from fxscope.worker.construct import Attempt, AutomaticBuild
from fxscope.worker.hypothesis import build_fault  # before any user code runs: it compiles regexes
from fxscope.worker.overlay import OverlayLoader, serve_from_source
from fxscope.worker.safe_module import load_notebook, notebook_of
from fxscope.worker.sandbox import denial_of
from fxscope.worker.skips import import_of_skipped, name_errors, skipped_findings, uses_skipped
from fxscope.worker.touched import error_files, touched_files
from fxscope.project.discovery import Target
from fxscope.worker.trace_job import TraceJob

ABSENT = "absent"  # the dependency "hash" of a file that must stay missing (see the engine)
#: Set to "1" in the zygote's environment when the workspace runs the compile or export analysis:
#: :func:`warm_up` then also imports torch._dynamo and torch.export before the first fork.
WARM_PT2_ENV = "FXSCOPE_WARM_PT2"

__all__ = ["WARM_PT2_ENV", "absent_candidates", "run_trace_job", "user_file_predicate", "warm_up"]


def user_file_predicate(root: str, excluded: tuple[str, ...] = (
        ".venv", "venv", "site-packages", "dist-packages", "node_modules", ".tox", ".nox")) -> Callable[[str], bool]:
    """Files under ``root`` and outside virtualenv-like directories. Pseudo-files
    (``<frozen importlib._bootstrap>``, ``<string>``), which ``abspath`` turns into a path under
    the working directory, are never workspace files.

    >>> is_user = user_file_predicate("/ws")
    >>> is_user("/ws/m.py"), is_user("/ws/<frozen importlib._bootstrap>"), is_user("/ws/.venv/x.py")
    (True, False, False)
    """
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    parts = tuple(f"{os.sep}{d}{os.sep}" for d in excluded)

    def is_user_file(path: str) -> bool:
        return (path.startswith(prefix) and not any(p in path[len(prefix) - 1:] for p in parts)
                and not (path.endswith(">") and f"{os.sep}<" in path))

    return is_user_file


def _tb_locations(e: BaseException, is_user_file: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Workspace frames of ``e``'s traceback with exact ranges, outermost first, each with what
    the line is doing: ``imported from here`` (module-level code), else ``in <function>``."""
    from fxscope.trace.frames import traceback_location

    out = []
    tb = e.__traceback__
    while tb is not None:
        raw = tb.tb_frame.f_code.co_filename
        filename = os.path.abspath(raw)  # "<frozen importlib._bootstrap>" is no file (under the cwd)
        if not raw.startswith("<") and is_user_file(filename):
            loc = traceback_location(tb)
            function = tb.tb_frame.f_code.co_name
            note = "imported from here" if function == "<module>" else f"in {function}"
            out.append({**loc.to_json(), "message": note})
        tb = tb.tb_next
    return out


def _error_finding(code: str, message: str, e: BaseException, is_user_file: Callable[[str], bool],
                   fallback: dict[str, Any]) -> dict[str, Any]:
    """A finding for an import/build failure at the innermost workspace frame."""
    from fxscope.model.codes import finding_dict

    denial = denial_of(e)
    if denial is not None:  # the sandbox refused it: not the model's bug, say so and how to allow it
        code, message = "FXS408", denial.message()
    finding: dict[str, Any] = finding_dict(code, message)
    if isinstance(e, SyntaxError) and e.filename and is_user_file(os.path.abspath(e.filename)):
        finding.update(file=os.path.abspath(e.filename), line=max(e.lineno or 1, 1))
        if e.offset:
            finding["column"] = e.offset
            end = getattr(e, "end_offset", None)
            if end and end > e.offset and (getattr(e, "end_lineno", None) in (None, e.lineno)):
                finding["end_column"] = end
        related = _tb_locations(e, is_user_file)
    else:
        related = _tb_locations(e, is_user_file)
        if related:
            innermost = related.pop()
            innermost.pop("message")
            finding.update(innermost)
        else:
            finding.update(fallback)
    if related:
        finding["related"] = related[-8:]
    return finding


def _takes_arguments(cls: Any) -> bool:
    """Whether the constructor of ``cls`` accepts any argument (optional ones too)."""
    try:
        return bool(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return False


def _import_module(name: str, root: str) -> Any:
    """Import workspace module ``name``; a notebook is named by its root-relative path."""
    if not is_notebook(name):
        return importlib.import_module(name)
    path = os.path.join(root, name)
    real, base = os.path.realpath(path), os.path.realpath(root).rstrip(os.sep) + os.sep
    if not real.startswith(base):
        raise ImportError(f"{path} resolves to {real}, outside the workspace: fxscope imports only files under "
                          "the workspace root", path=path)
    return load_notebook(path, name)


def _import_target(job: TraceJob) -> Callable[[], Any]:
    target = job.target
    if target.kind == "factory":
        module_name, _, attr = (target.factory or "").partition(":")
        obj: Any = _import_module(module_name, job.root)
    else:
        if target.module:
            obj = _import_module(target.module, job.root)
        else:
            path = os.path.join(job.root, target.file)
            name = "_fxscope_target_" + "".join(c if c.isalnum() else "_" for c in target.file)
            spec = importlib.util.spec_from_file_location(name, path, loader=OverlayLoader(name, path))
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {target.file}")
            obj = importlib.util.module_from_spec(spec)
            sys.modules[name] = obj
            spec.loader.exec_module(obj)
        attr = target.qualname or ""
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _target_module(target: Target) -> str | None:
    """The module the target's class or factory is defined in."""
    if target.kind == "factory":
        return (target.factory or "").partition(":")[0]
    return target.module


def _missing_module(error: BaseException | None) -> str | None:
    """The dotted name of the module whose absence caused ``error`` (or its causes), if any."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, ModuleNotFoundError) and error.name:
            return error.name
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def absent_candidates(name: str, root: str) -> dict[str, str]:
    """Where module ``name`` would be found if it existed: ``{path: "absent"}`` for ``x.py`` and
    the package directory ``x/`` in each search location of its parent (``sys.path`` for a top-level
    name). Paths under ``root`` are root-relative, others absolute."""
    parent, _, tail = name.rpartition(".")
    if parent:
        module = sys.modules.get(parent)
        locations = list(getattr(module, "__path__", None) or [])
        if not locations:
            return {}
    else:
        locations = list(sys.path)
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    out: dict[str, str] = {}
    for entry in locations:
        if not isinstance(entry, str):
            continue
        base = os.path.join(os.path.abspath(entry or "."), tail)
        if not os.path.isdir(os.path.dirname(base)):
            continue
        for candidate, suffix in ((base + ".py", ""), (base, "/")):
            if os.path.exists(candidate):
                continue
            key = candidate[len(prefix):].replace(os.sep, "/") if candidate.startswith(prefix) else candidate
            out[key + suffix] = ABSENT
    return out


def _leaf_types(names: list[str]) -> tuple[tuple[type, ...], list[str]]:
    types_, problems = [], []
    for dotted in names:
        module_name, _, cls_name = dotted.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module_name), cls_name)
            if not isinstance(cls, type):
                raise TypeError(f"{dotted} is not a class")
            types_.append(cls)
        except Exception as e:
            problems.append(f"leaf-modules entry {dotted!r} could not be imported: {type(e).__name__}: {e}")
    return tuple(types_), problems


def _wrap_functions(names: list[str]) -> tuple[tuple[Callable[..., Any], ...], list[str]]:
    """``wrap-functions`` entries (``"pkg.mod:func"``, also ``"pkg.mod.func"``) -> the functions;
    entries that cannot be imported become warnings."""
    functions, problems = [], []
    for entry in names:
        module_name, sep, attr = entry.partition(":")
        if not sep:
            module_name, _, attr = entry.rpartition(".")
        try:
            if not module_name or not attr:
                raise ValueError("expected 'package.module:function'")
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            if not callable(obj):
                raise TypeError(f"{entry} is not callable")
            functions.append(obj)
        except Exception as e:
            problems.append(f"wrap-functions entry {entry!r} could not be imported: {type(e).__name__}: {e}")
    return tuple(functions), problems


def _script_directory(root: str, file: str) -> str | None:
    """The directory of a target's file when it is a directory of scripts rather than a package
    (no ``__init__.py``) below the root: its files import their siblings by bare name (``from
    train import ...``), as Python allows a script run from there. None for the root itself and
    for packages."""
    if not file or "/" not in file:
        return None
    directory = os.path.join(root, os.path.dirname(file))
    if os.path.exists(os.path.join(directory, "__init__.py")):
        return None
    return directory


def _defaults_recipe(target: Target) -> Recipe:
    """``Net()`` at the class line: the build from the constructor's defaults."""
    from fxscope.model.recipe import Call, Ref

    line, cell = max(target.line, 1), None
    nb = notebook_of(sys.modules.get(target.module or ""))
    where = nb.locate(line) if nb is not None else None
    if where is not None:
        cell, line = where
    return Recipe(Call(Ref(target.module or "", (target.qualname or "",))), "defaults", target.file, line,
                  f"{target.qualname}()", cell)


def _build_class(cls: Any, target: Target, build: Callable[[Callable[[], Any]], Any],
                 is_user_file: Callable[[str], bool], rejected: tuple[Recipe, ...] = ()) -> AutomaticBuild:
    """Build a class target from its defaults (when it needs no argument) and its recipes, except
    the ``rejected`` ones."""
    from fxscope.worker.construct import build_automatically

    defaults = None if target.needs_args else _defaults_recipe(target)
    if defaults is not None and any(r.kind == "defaults" for r in rejected):
        defaults = None
    recipes = tuple(r for r in target.recipes if r not in rejected)
    return build_automatically(cls, recipes, defaults, build=build, is_user_file=is_user_file)


def _rebound(obj: Any, target: Target) -> str | None:
    """Why a discovered class is not a target after all (None: it is): its module-level name is
    bound to something else once the module ran (``Swish = nn.SiLU`` in the branch that ran), or
    what it names is no ``nn.Module`` class (a library base that was not a model)."""
    import torch

    name = target.qualname or ""
    if not inspect.isclass(obj) or getattr(obj, "__qualname__", None) != name or (
            target.module and not is_notebook(target.module) and getattr(obj, "__module__", None) != target.module):
        what = getattr(obj, "__module__", "") + "." + getattr(obj, "__qualname__", type(obj).__name__)
        return (f"`{name}` at {target.file}:{target.line} is not traced: after import the name `{name}` is "
                f"`{what.lstrip('.')}`, not the class defined there")
    if not issubclass(obj, torch.nn.Module):
        return f"`{name}` at {target.file}:{target.line} is not traced: it is not a torch.nn.Module subclass"
    return None


def _say_invented(findings: list[dict[str, Any]], recipe: Recipe, name: str,
                  is_user_file: Callable[[str], bool]) -> None:
    """Each finding at a workspace line of a build with invented values says so (its message, and
    so its hover). One located in a library keeps its message: the report groups those by
    message, one per library cause, whichever targets reached it."""
    note = f" (fxscope built `{name}` with invented values: {recipe.invented_values()}; no call site found)"
    for finding in findings:
        if (finding.get("severity") in ("error", "warning") and is_user_file(str(finding.get("file", "")))
                and note not in str(finding.get("message", ""))):
            finding["message"] = f"{finding.get('message', '')}{note}"


def _parameterless_failure(cls: Any, automatic: AutomaticBuild) -> BaseException | None:
    """What a constructor without parameters raised when fxscope built the class from its
    defaults and nothing else built it: a fault of the class, which no argument could avoid."""
    if _takes_arguments(cls):
        return None
    causes = [a.cause for a in automatic.attempts if a.recipe.kind == "defaults" and a.cause is not None]
    return causes[0] if len(causes) == len(automatic.attempts) == 1 else None


def _needs_arguments(target: Target, automatic: AutomaticBuild, is_user_file: Callable[[str], bool],
                     fallback: dict[str, Any]) -> dict[str, Any]:
    """FXS405 at the class: no candidate built (an assert on optional parameters, a constructor
    inherited past a mixin, no recipe at all); what was tried and what each raised, with the
    constructor frames of the first failure as related locations."""
    from fxscope.model.codes import CODES, finding_dict

    tried = "; ".join(f"`{a.recipe.text}` ({a.recipe.kind}, {a.recipe.origin}): {_one_line(a.error or '')}"
                      for a in automatic.attempts)
    needs = ", ".join(target.required_args) if target.required_args else "arguments its defaults do not give"
    message = f"`{target.qualname}` needs constructor arguments ({needs}) and no factory is configured"
    if tried:
        message += f"; fxscope could not build it on its own: tried {tried}"
    finding = finding_dict("FXS405", message, hint=CODES["FXS405"].help, **fallback)
    first = next((a.cause for a in automatic.attempts if a.cause is not None), None)
    related = _tb_locations(first, is_user_file) if first is not None else []
    if related:
        finding["related"] = related[-8:]
    return finding


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def warm_up() -> None:
    """Called once in the zygote, before any fork: import what every job imports and fill the
    pure-Python caches that the first trace in a process builds (torch's table of overridable
    functions, sysconfig's paths), so each forked child starts warm. Runs no torch operator."""
    import site
    import sysconfig

    import torch
    import torch.overrides

    import fxscope.trace.analysis  # noqa: F401
    import fxscope.trace.build
    from fxscope.trace._torch_compat import warm_imports, warm_override_tables

    warm_imports()  # imported lazily by nn.Module construction
    fxscope.trace.build.warm_up()

    sysconfig.get_paths()
    site.getsitepackages()
    torch.overrides.get_overridable_functions()
    warm_override_tables()
    if os.environ.get(WARM_PT2_ENV) == "1":  # the workspace runs the compile or export analysis
        from fxscope.trace.pt2 import warm_up as warm_pt2

        warm_pt2()


def run_trace_job(raw_job: Mapping[str, Any]) -> dict[str, Any]:
    """Import, build and trace one target (``raw_job``: a :class:`TraceJob` as JSON); see the
    module docstring for the result's shape."""
    import torch

    # Parallelism comes from the pool's workers: one intra-op thread per child (set here, in the
    # forked child; the zygote never runs a torch op, OpenMP state does not survive fork).
    torch.set_num_threads(1)

    from fxscope.trace.build import build_model

    from fxscope.trace.classify import EXTERNAL_CAUSES

    EXTERNAL_CAUSES.append(_sandbox_cause)  # a write or connection the sandbox refused while tracing
    job = TraceJob.from_json(raw_job)
    root, config, target = job.root, job.config, job.target
    for p in reversed(config.python_path):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    script_dir = _script_directory(root, target.file)
    if script_dir is not None and script_dir not in sys.path:  # as `python dir/main.py` would have it
        sys.path.insert(len(config.python_path), script_dir)
    # As `python file.py` run with no arguments: a module that parses the command line when it is
    # imported sees none of the worker's own.
    sys.argv = [str(Path(root) / target.file)]
    is_user_file = user_file_predicate(root)
    fallback = {"file": job.fallback_file, "line": job.fallback_line}
    result: dict[str, Any] = {"torch": torch.__version__, "warnings": []}

    def finish(body: dict[str, Any], error: BaseException | None = None) -> dict[str, Any]:
        files = touched_files(Path(root))
        if error is not None:  # files that failed to import are not in sys.modules
            for rel, digest in error_files(error, root, is_user_file).items():
                files.setdefault(rel, digest)
        missing = _missing_module(error)
        if missing:
            files.update(absent_candidates(missing, root))
        body.update(result)
        body["files"] = files
        return body

    serve_from_source(is_user_file, root=root)

    def skip_for(blocked: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a target that reads names a statement fxscope did not run would set."""
        module = sys.modules[_target_module(target) or ""]
        return finish({"status": "skipped", "modules": [], "nodes": 0,
                       "findings": skipped_findings(target, blocked, module)})

    try:
        factory = _import_target(job)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if isinstance(e, SystemExit):
            raise
        blocked = uses_skipped(target, sys.modules.get(_target_module(target) or "")) \
            if isinstance(e, AttributeError) else {}
        if blocked:  # the class's own statement was skipped (it reads a name that was)
            return skip_for(blocked)
        imported = import_of_skipped(e)  # `from script import NAME`, NAME set by a statement not run
        if imported is not None:
            return finish({"status": "skipped", "modules": [], "nodes": 0,
                           "findings": skipped_findings(target, imported[1], imported[0])})
        msg = f"{type(e).__name__}: {e}" if not isinstance(e, SyntaxError) else f"SyntaxError: {e.msg}"
        return finish({"status": "error", "modules": [], "nodes": 0,
                       "findings": [_error_finding("FXS402", f"could not import: {msg}", e, is_user_file, fallback)]}, e)

    home = sys.modules.get(_target_module(target) or "")
    blocked = uses_skipped(target, home)
    if blocked:  # a notebook (or script) class that reads what a statement fxscope did not run sets
        return skip_for(blocked)

    if target.kind == "class":
        rebound = _rebound(factory, target)
        if rebound:  # `Swish = nn.SiLU`: the name no longer names the class defined there
            result["warnings"].append(rebound)
            return finish({"status": "skipped", "modules": [], "nodes": 0, "findings": []})
    analyses = config.analyses_for(target.id)
    if "fx" not in analyses:  # only torch.compile / torch.export: they build the model themselves
        return finish(_run_pt2(job, factory, {"status": "traced", "modules": [], "nodes": 0, "findings": []},
                               is_user_file, fallback, result))

    def build(make: Callable[[], Any]) -> Any:
        return build_model(make, device=config.device, is_user_file=is_user_file, exact_meta=bool(target.inputs))

    rejected: list[Attempt] = []  # builds with invented values whose failure was the values' fault
    while True:
        outcome = _build_and_trace(job, factory, build, is_user_file, fallback, result, home, rejected)
        if not isinstance(outcome, Attempt):
            return finish(*outcome) if isinstance(outcome, tuple) else outcome
        rejected.append(outcome)


def _build_and_trace(job: TraceJob, factory: Any, build: Callable[[Callable[[], Any]], Any],
                     is_user_file: Callable[[str], bool], fallback: dict[str, Any], result: dict[str, Any],
                     home: Any, rejected: list[Attempt]) -> Any:
    """Build the target (a class: from its candidates, except the ``rejected`` ones) and trace it:
    ``(body, error)`` for :func:`finish`, a finished result, or the :class:`Attempt` of a build
    with invented values whose failure is their fault (the caller tries the next candidate)."""
    from fxscope.trace.analysis import analyze
    from fxscope.trace.build import BuildError
    from fxscope.trace.frames import SourceLocation

    config, target = job.config, job.target
    leaf_types, problems = _leaf_types(list(config.leaf_modules))
    result["warnings"].extend(p for p in problems if p not in result["warnings"])
    wrap_functions, problems = _wrap_functions(list(getattr(config, "wrap_functions", ())))
    result["warnings"].extend(p for p in problems if p not in result["warnings"])

    def skip_for(blocked: Mapping[str, Any]) -> tuple[dict[str, Any], None]:
        module = sys.modules[_target_module(target) or ""]
        return {"status": "skipped", "modules": [], "nodes": 0,
                "findings": skipped_findings(target, blocked, module)}, None

    recipe: Recipe | None = None
    if target.kind == "class":  # built on its own: from its defaults or the workspace's recipes
        automatic = _build_class(factory, target, build, is_user_file, tuple(a.recipe for a in rejected))
        automatic.attempts[:0] = rejected
        if automatic.built is None:
            blocked = name_errors((a.cause for a in automatic.attempts), home)
            if blocked:
                return skip_for(blocked)
            fatal = automatic.exhausted or _parameterless_failure(factory, automatic)
            if fatal is not None:  # too large for the limits, or a constructor without parameters that raises
                message = f"the constructor raised {type(fatal).__name__}: {fatal}"
                return {"status": "error", "modules": [], "nodes": 0,
                        "findings": [_error_finding("FXS401", message, fatal, is_user_file, fallback)]}, fatal
            return {"status": "skipped", "modules": [], "nodes": 0,
                    "findings": [_needs_arguments(target, automatic, is_user_file, fallback)]}, None
        built = automatic.built
        recipe = automatic.recipe
        assert recipe is not None
        result["build"] = recipe.to_json()
    else:
        try:
            built = build(factory)
        except BuildError as be:
            cause = be.__cause__ or be
            blocked = name_errors([cause], home)
            if blocked:
                return skip_for(blocked)
            return {"status": "error", "modules": [], "nodes": 0,
                    "findings": [_error_finding("FXS401", f"the factory raised {be}", cause, is_user_file,
                                                fallback)]}, cause

    concrete = dict(target.concrete_args)
    if built.concrete_args:
        concrete.update(built.concrete_args)
    result["device"] = built.device
    inputs = None
    if target.inputs or built.inputs:
        from fxscope.trace.inputs import default_concrete_args, resolve_inputs

        try:
            inputs = resolve_inputs(target.inputs or None, built.inputs, built.model)
        except ValueError as e:
            result["warnings"].append(f"example inputs ignored: {e}")
        if inputs is not None and target.inputs == "auto":
            concrete = {**default_concrete_args(built.model), **concrete}
    try:
        report = analyze(built.model, concrete or None, is_user_file=is_user_file, leaf_types=leaf_types,
                         sites=built.sites, extra_findings=built.findings, inputs=inputs,
                         wrap_functions=wrap_functions,
                         target_site=SourceLocation(job.fallback_file, max(job.fallback_line, 1))
                         if job.fallback_file else None)
    except Exception as e:  # a bug in the tracer itself must still give a located answer
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return {"status": "error", "modules": [], "nodes": 0,
                "findings": [_error_finding("FXS107", f"internal tracing error: {detail}", e, is_user_file, fallback)]}, e
    body = report.to_json(graphs=True)
    blocked = name_errors((f.get("message") for f in body.get("findings") or () if f.get("code") == "FXS107"), home)
    if blocked:  # forward read a name fxscope left unset: not an error plain Python would have
        return skip_for(blocked)
    fault = build_fault(recipe, built.model, body.get("findings") or [], inputs)
    if fault is not None and recipe is not None:  # the made-up values' fault, not the code's
        result.pop("build", None)
        return Attempt(recipe, fault)
    if recipe is not None and recipe.invented:
        _say_invented(body.get("findings") or [], recipe, target.qualname or "", is_user_file)
    return _run_pt2(job, factory, body, is_user_file, fallback, result), None


def _sandbox_cause(e: BaseException) -> tuple[str, str, str | None] | None:
    """FXS408 for an exception that is the sandbox refusing a write or a connection."""
    denial = denial_of(e)
    return None if denial is None else ("FXS408", denial.message(), None)


def _private_compile_caches() -> None:
    """torch.compile's on-disk caches (inductor's cache, with Dynamo's profile of which sizes were
    dynamic; triton's) in the job's temporary directory: nothing outlives the job, and no earlier
    run's profile changes what this one reports."""
    import tempfile

    from fxscope.trace.pt2 import CACHE_DIR_ENV

    scratch = tempfile.gettempdir()  # the job's own directory (see fxscope.worker.child)
    os.environ[CACHE_DIR_ENV] = os.path.join(scratch, "torchinductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")


def _run_pt2(job: TraceJob, factory: Callable[[], Any], body: dict[str, Any], is_user_file: Callable[[str], bool],
             fallback: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the target's torch.compile and torch.export analyses added (when its
    ``analyses`` list them): their findings and captured graphs, a ``compile``/``export`` summary,
    their warnings. Without fx, a model that cannot be built is FXS401 and a failed export leaves
    the target ``failed``."""
    from fxscope.trace.pt2 import PT2_ANALYSES, Pt2Options

    config, target = job.config, job.target
    analyses = config.analyses_for(target.id)
    if not any(a in analyses for a in PT2_ANALYSES):
        return body
    from fxscope.trace.build import BuildError
    from fxscope.trace.frames import SourceLocation
    from fxscope.trace.pt2 import run_pt2

    options = Pt2Options(analyses, config.compile_dynamic, config.export_strict, config.export_dynamic_batch)
    _private_compile_caches()
    where = SourceLocation(str(fallback["file"]), int(fallback["line"]))
    try:
        extra = run_pt2(factory, target.inputs, target.concrete_args, options, is_user_file=is_user_file,
                        fallback=where)
    except BuildError as be:
        if "fx" in analyses:  # fx built it (on meta); on the CPU it failed: say so, keep fx's result
            result["warnings"].append(f"{' and '.join(a for a in PT2_ANALYSES if a in analyses)} analysis "
                                      f"skipped: the model could not be built on the CPU: {be}")
            return body
        cause = be.__cause__ or be
        what = "factory" if target.kind == "factory" else "constructor"
        return {"status": "error", "modules": [], "nodes": 0,
                "findings": [_error_finding("FXS401", f"the {what} raised {be}", cause, is_user_file, fallback)]}
    except Exception as e:  # a bug in an analysis must still give a located answer
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        body["findings"].append(_error_finding("FXS107", f"internal error in the compile/export analysis: {detail}",
                                               e, is_user_file, fallback))
        return body
    body["findings"].extend(extra["findings"])
    body.setdefault("graphs", []).extend(extra["graphs"])
    result["warnings"].extend(extra["warnings"])
    for key in PT2_ANALYSES:
        if key in extra:
            body[key] = extra[key]
    if "fx" not in analyses and extra.get("export", {}).get("exported") is False:
        body["status"] = "failed"
    return body
