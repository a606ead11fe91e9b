"""Where an import or build failure is reported: workspace frames, findings, missing modules."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from fxscope.project.files import ABSENT

__all__ = ["ABSENT", "absent_candidates", "error_finding", "missing_module", "one_line", "tb_locations",
           "user_file_predicate"]

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


def tb_locations(e: BaseException, is_user_file: Callable[[str], bool]) -> list[dict[str, Any]]:
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


def _external_cause(e: BaseException) -> tuple[str, str] | None:
    """A cause outside the model (the OS sandbox refusing a write), as the process running the
    job registered its explainers in :data:`fxscope.trace.classify.EXTERNAL_CAUSES`."""
    from fxscope.trace.classify import EXTERNAL_CAUSES

    for explain in EXTERNAL_CAUSES:
        explained = explain(e)
        if explained is not None:
            return explained[0], explained[1]
    return None


def error_finding(code: str, message: str, e: BaseException, is_user_file: Callable[[str], bool],
                  fallback: dict[str, Any]) -> dict[str, Any]:
    """A finding for an import/build failure at the innermost workspace frame."""
    from fxscope.model.codes import finding_dict

    external = _external_cause(e)
    if external is not None:  # e.g. the sandbox refused it: not the model's bug, say so and how to allow it
        code, message = external
    finding: dict[str, Any] = finding_dict(code, message)
    if isinstance(e, SyntaxError) and e.filename and is_user_file(os.path.abspath(e.filename)):
        finding.update(file=os.path.abspath(e.filename), line=max(e.lineno or 1, 1))
        if e.offset:
            finding["column"] = e.offset
            end = getattr(e, "end_offset", None)
            if end and end > e.offset and (getattr(e, "end_lineno", None) in (None, e.lineno)):
                finding["end_column"] = end
        related = tb_locations(e, is_user_file)
    else:
        related = tb_locations(e, is_user_file)
        if related:
            innermost = related.pop()
            innermost.pop("message")
            finding.update(innermost)
        else:
            finding.update(fallback)
    if related:
        finding["related"] = related[-8:]
    return finding


def missing_module(error: BaseException | None) -> str | None:
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


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
