"""A notebook (or script) class that uses what a skipped statement would set is not built: FXS407.

The safe executor (:mod:`fxscope.job.safe_module`) leaves names unset when the statement that
sets them is not one it runs (a training loop, a call, a data loader). Building or tracing a class
that reads one would fail with a NameError that plain Python, running the whole notebook, does
not have: fxscope never reports that. The class is skipped instead, with one info finding per
statement it depends on, at that statement (merged across the classes that share it).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from fxscope.model.codes import CODES, finding_dict
from fxscope.project.discovery import Target
from fxscope.project.toplevel import dependencies
from fxscope.job.module_patches import missing_attribute
from fxscope.job.safe_module import TREE, Skipped, skipped_of

__all__ = ["import_of_skipped", "name_errors", "skipped_findings", "uses_skipped"]

_NOT_DEFINED = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")
_CANNOT_IMPORT = re.compile(r"cannot import name '([A-Za-z_][A-Za-z0-9_]*)' from '([A-Za-z_][A-Za-z0-9_.]*)'")
_NO_ATTRIBUTE = re.compile(r"module '([A-Za-z_][A-Za-z0-9_.]*)' has no attribute '([A-Za-z_][A-Za-z0-9_]*)'")


def _owner(target: Target) -> str:
    """The module-level name of the class (or factory function) a target builds from."""
    if target.kind == "factory":
        return (target.factory or "").partition(":")[2].split(".")[0]
    return (target.qualname or "").split(".")[0]


def uses_skipped(target: Target, module: Any) -> dict[str, Skipped]:
    """The skipped names of ``module`` that building ``target`` and tracing its forward read
    (its class or factory itself, when its own statement was skipped)."""
    skipped = skipped_of(module)
    if not skipped:
        return {}
    owner = _owner(target)
    if owner in skipped:
        return {owner: skipped[owner]}
    tree = getattr(module, TREE, None)
    if not isinstance(tree, ast.Module):
        return {}
    used = dependencies(tree, owner)
    return {name: skipped[name] for name in used if name in skipped}


def name_errors(errors: Iterable[BaseException | str | None], module: Any) -> dict[str, Skipped]:
    """The skipped names behind NameErrors of ``module`` (exceptions, or finding messages that
    quote one) raised while building or tracing: what the static dependencies did not see (a
    method reached through ``getattr``); and behind AttributeErrors of another script module
    (``config.HIDDEN`` where ``config``'s statement setting it did not run), or of a module patch
    of ``module`` that did not run (``f.softargmax = ...``)."""
    skipped = skipped_of(module)
    found: dict[str, Skipped] = {}
    for error in errors:
        name = getattr(error, "name", None) if isinstance(error, NameError) else None
        if isinstance(name, str) and name in skipped:
            found[name] = skipped[name]
        elif isinstance(error, AttributeError) and isinstance(getattr(error, "obj", None), types.ModuleType):
            patch = missing_attribute(error) or ""
            if patch in skipped:  # `f.softargmax = ...` was skipped here
                found[patch] = skipped[patch]
            elif (record := skipped_of(error.obj).get(error.name or "")) is not None:
                found[error.name or ""] = record
        elif isinstance(error, str):
            for name in _NOT_DEFINED.findall(error):
                if name in skipped:
                    found[name] = skipped[name]
            for owner, name in _NO_ATTRIBUTE.findall(error):
                patch = f"{owner}.{name}"
                record = skipped.get(patch) or skipped_of(sys.modules.get(owner)).get(name)
                if record is not None:
                    found[patch if patch in skipped else name] = record
    return found


def import_of_skipped(error: BaseException) -> tuple[Any, dict[str, Skipped]] | None:
    """The script module and its skipped name behind ``from script import NAME`` failing with
    ImportError (the module fxscope imported without its work did not set ``NAME``): plain
    Python, running the script, would have had it; None for any other error."""
    if not isinstance(error, ImportError):
        return None
    found = _CANNOT_IMPORT.search(str(error))
    if found is None:
        return None
    module = sys.modules.get(found.group(2))
    record = skipped_of(module).get(found.group(1))
    return (module, {found.group(1): record}) if record is not None else None


def skipped_findings(target: Target, blocked: Mapping[str, Skipped], module: Any) -> list[dict[str, Any]]:
    """FXS407 at each statement ``target`` depends on (one per statement)."""
    default_file = getattr(module, "__file__", None) or ""
    owner = target.qualname if target.kind == "class" else target.factory
    by_statement: dict[Skipped, list[str]] = {}
    for name, record in blocked.items():
        by_statement.setdefault(record, []).append(name)
    findings = []
    for record, names in sorted(by_statement.items(), key=lambda item: (item[0].line, item[0].column)):
        quoted = ", ".join(f"`{n}`" for n in sorted(names))
        if _owner(target) in names:
            message = (f"`{owner}` is defined by a statement fxscope does not run ({record.reason}), so it is not "
                       "built or traced")
        else:
            message = (f"`{owner}` uses {quoted}, set by a statement fxscope does not run ({record.reason}), so "
                       f"`{owner}` is not built or traced")
        file = record.file or default_file  # the statement may be another module's (a script it imports)
        where: dict[str, Any] = {"file": os.path.abspath(file), "line": record.line, "column": record.column}
        if record.end_line == record.line:  # a block is shown at its first line
            where.update(end_line=record.end_line, end_column=record.end_column)
        findings.append(finding_dict("FXS407", message, hint=CODES["FXS407"].help, **where))
    return findings
