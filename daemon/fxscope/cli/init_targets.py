"""``fxscope init``: pin how fxscope builds each model class, as factories a user can edit.

Runs a check (from the cache when nothing changed), then writes, for every class fxscope built on
its own from a recipe, a factory making the same call into ``fxscope_targets.py`` (in the first
``python-path`` directory) and a ``[tool.fxscope.targets.NAME]`` table into ``pyproject.toml``;
for every class it could not build, a template and a commented-out table to fill in; for every
installed library the workspace imports whose settings are known (einops), its ``leaf-modules``
and ``wrap-functions`` entries (:mod:`fxscope.report.libraries`). Entries that exist are never
touched, so running it again writes nothing new.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from fxscope.engine.results import TargetResult
from fxscope.lsp.config_edits import with_entries
from fxscope.project.config import Config
from fxscope.report.factories import FactoryPlan, configured_targets, factories_text, plans_from_results, targets_text
from fxscope.report.libraries import settings_for

__all__ = ["InitResult", "init_workspace"]


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_workspace` wrote (or would write, with ``dry_run``)."""

    factories_file: Path
    pyproject: Path
    written: list[FactoryPlan]
    templates: list[FactoryPlan]
    factories_added: str
    targets_added: str
    #: The libraries whose known settings were added to ``[tool.fxscope]``.
    libraries: tuple[str, ...] = ()


def init_workspace(root: Path, config: Config, results: list[TargetResult], *, module: str = "fxscope_targets",
                   dry_run: bool = False, libraries: tuple[str, ...] = ()) -> InitResult:
    """Write (unless ``dry_run``) the factories and targets for ``results`` of the workspace at
    ``root`` under ``config``, and the known settings of the installed ``libraries`` it imports."""
    base = Path(config.python_path[0]) if config.python_path else root
    factories_file = base / f"{module}.py"
    pyproject = root / "pyproject.toml"
    plans = plans_from_results(results)
    configured = configured_targets(pyproject.read_text(encoding="utf-8")) if pyproject.exists() else set()
    plans = [p for p in plans if p.name not in configured]
    existing = factories_file.read_text(encoding="utf-8") if factories_file.exists() else ""
    py_text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    added_functions = factories_text(existing, plans)
    added_targets = targets_text(py_text, plans, module)
    new_py = py_text + added_targets
    with_settings: list[str] = []
    for name in libraries:
        settings = settings_for(name)
        updated = with_entries(new_py if new_py or pyproject.exists() else None, settings.entries()) \
            if settings is not None else None
        if updated is not None:
            new_py = updated
            with_settings.append(name)
    if not dry_run:
        if added_functions:
            factories_file.write_text(existing + added_functions, encoding="utf-8")
        if new_py != py_text:
            pyproject.write_text(new_py, encoding="utf-8")
    return InitResult(factories_file, pyproject, [p for p in plans if not p.template],
                      [p for p in plans if p.template], added_functions, added_targets, tuple(with_settings))


def print_summary(result: InitResult, root: Path, dry_run: bool) -> None:
    """What was written, one line per file and one per template to fill in."""
    out = sys.stdout
    verb = "would write" if dry_run else "wrote"
    rel_f = result.factories_file.relative_to(root) if result.factories_file.is_relative_to(root) else result.factories_file
    if result.libraries:
        names = ", ".join(result.libraries)
        out.write(f"fxscope init: {verb} the settings for {names} to pyproject.toml (leaf-modules, wrap-functions: "
                  "their layers and functions become single graph nodes)\n")
    if not result.factories_added and not result.targets_added:
        if not result.libraries:
            out.write("fxscope init: nothing new to write (every class builds with its defaults or has a target)\n")
        return
    if result.written:
        out.write(f"fxscope init: {verb} {len(result.written)} factories to {rel_f} and their targets to "
                  f"pyproject.toml:\n")
        for p in result.written:
            out.write(f"  {p.name}: {p.code}  ({p.provenance})\n")
    if result.templates:
        out.write(f"fxscope init: {verb} {len(result.templates)} templates to fill in (their targets are "
                  "commented out in pyproject.toml until you do):\n")
        for p in result.templates:
            out.write(f"  {p.name}: {p.function} in {rel_f}\n")
