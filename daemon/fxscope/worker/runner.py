"""What runs inside a forked child for one trace job: import, build, trace, record touched files.

A job is a JSON dict::

    {"root": "/ws", "config": Config.to_json(), "target": Target.to_json(), "overlays": {...},
     "timeout": 30, "memory_limit_mb": 4096}

The result is a JSON dict: the trace report body (``status``, ``modules``, ``findings`` with
absolute paths, ``graphs``, ``nodes``, ``forward_order``) plus ``files`` (root-relative path ->
sha256 of the content used), ``device`` and ``torch``. Import and build failures are findings
(FXS402, FXS401) with status ``error``, never exceptions.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from fxscope.project.config import Config
from fxscope.worker.touched import touched_files

__all__ = ["run_trace_job", "user_file_predicate"]


def user_file_predicate(root: str, excluded: tuple[str, ...] = (
        ".venv", "venv", "site-packages", "dist-packages", "node_modules", ".tox", ".nox")) -> Callable[[str], bool]:
    """Files under ``root`` and outside virtualenv-like directories."""
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    parts = tuple(f"{os.sep}{d}{os.sep}" for d in excluded)

    def is_user_file(path: str) -> bool:
        return path.startswith(prefix) and not any(p in path[len(prefix) - 1:] for p in parts)

    return is_user_file


def _tb_locations(e: BaseException, is_user_file: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Workspace frames of ``e``'s traceback with exact ranges, outermost first."""
    from fxscope.trace.frames import traceback_location

    out = []
    tb = e.__traceback__
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if is_user_file(filename):
            out.append(traceback_location(tb).to_json())
        tb = tb.tb_next
    return out


def _error_finding(code: str, message: str, e: BaseException, is_user_file: Callable[[str], bool],
                   fallback: dict[str, Any]) -> dict[str, Any]:
    """A finding for an import/build failure at the innermost workspace frame."""
    from fxscope.trace.codes import CODES

    finding: dict[str, Any] = {"code": code, "severity": CODES[code].severity, "message": message}
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
            finding.update(related.pop())
        else:
            finding.update(fallback)
    if related:
        finding["related"] = [{**r, "message": "imported from here"} for r in related[-8:]]
    return finding


def _import_target(job: dict[str, Any]) -> Callable[[], Any]:
    target = job["target"]
    if target["kind"] == "factory":
        module_name, _, attr = target["factory"].partition(":")
        obj: Any = importlib.import_module(module_name)
    else:
        module_name = target.get("module")
        if module_name:
            obj = importlib.import_module(module_name)
        else:
            path = os.path.join(job["root"], target["file"])
            name = "_fxscope_target_" + "".join(c if c.isalnum() else "_" for c in target["file"])
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {target['file']}")
            obj = importlib.util.module_from_spec(spec)
            sys.modules[name] = obj
            spec.loader.exec_module(obj)
        attr = target["qualname"]
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


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


def run_trace_job(job: dict[str, Any]) -> dict[str, Any]:
    """Import, build and trace one target; see the module docstring for the shapes."""
    import torch

    from fxscope.trace.analysis import analyze
    from fxscope.trace.build import BuildError, build_model

    root = job["root"]
    config = Config.from_json(job["config"])
    target = job["target"]
    for p in reversed(config.python_path):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    is_user_file = user_file_predicate(root)
    target_file = os.path.join(root, target["file"]) if target.get("file") else root
    fallback = {"file": target_file, "line": target.get("line") or 1}
    result: dict[str, Any] = {"torch": torch.__version__, "warnings": []}
    extra_deps: dict[str, str] = {}

    def finish(body: dict[str, Any], error: BaseException | None = None) -> dict[str, Any]:
        files = touched_files(Path(root))
        if error is not None:  # files that failed to import are not in sys.modules
            from fxscope.worker.touched import _digest

            paths = [os.path.abspath(f) for f in {getattr(error, "filename", None) or ""} if f]
            tb = error.__traceback__
            while tb is not None:
                paths.append(os.path.abspath(tb.tb_frame.f_code.co_filename))
                tb = tb.tb_next
            for path in paths:
                if is_user_file(path) and os.path.exists(path):
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    digest = _digest(path)
                    if digest:
                        files.setdefault(rel, digest)
        files.update(extra_deps)
        body.update(result)
        body["files"] = files
        return body

    try:
        factory = _import_target(job)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if isinstance(e, SystemExit):
            raise
        msg = f"{type(e).__name__}: {e}" if not isinstance(e, SyntaxError) else f"SyntaxError: {e.msg}"
        return finish({"status": "error", "modules": [], "nodes": 0,
                       "findings": [_error_finding("FXS402", f"could not import: {msg}", e, is_user_file, fallback)]}, e)

    leaf_types, problems = _leaf_types(list(config.leaf_modules))
    result["warnings"].extend(problems)
    try:
        built = build_model(factory, device=config.device, is_user_file=is_user_file)
    except BuildError as be:
        cause = be.__cause__ or be
        what = "factory" if target["kind"] == "factory" else "constructor"
        return finish({"status": "error", "modules": [], "nodes": 0,
                       "findings": [_error_finding("FXS401", f"the {what} raised {be}", cause, is_user_file, fallback)]}, cause)

    concrete = dict(target.get("concrete_args") or {})
    if built.concrete_args:
        concrete.update(built.concrete_args)
    result["device"] = built.device
    try:
        report = analyze(built.model, concrete or None, is_user_file=is_user_file, leaf_types=leaf_types,
                         sites=built.sites, extra_findings=built.findings)
    except Exception as e:  # a bug in the tracer itself must still give a located answer
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return finish({"status": "error", "modules": [], "nodes": 0,
                       "findings": [_error_finding("FXS107", f"internal tracing error: {detail}", e, is_user_file, fallback)]}, e)
    return finish(report.to_json(graphs=True))
