"""One finding per cause: failures inside an installed library, grouped per file.

A failure whose offending code is in an installed library is shown at its anchor, the user's line
on the way there (:attr:`fxscope.model.Finding.primary`). When a file reaches the same library
failure from several lines (``rearrange`` called in five forwards), those are one *cause*: the
same code, the same library location, the same message and the same fix (hint). The editor and
the text and JSON reports show one finding per cause and file, at the first of its lines, and
keep every other line as a whole finding in ``sites`` (nothing is dropped: each site keeps its
own scopes, targets and call chain). Findings in workspace code are never grouped.

Suppressions and baselines apply to each site before grouping (a site can be ignored on its own
line); grouping is the last step before showing.

>>> from fxscope.model import Location
>>> lib = Location("/site-packages/einops/_backends.py", 62)
>>> a = Finding("FXS107", "error", "m", lib, hint="wrap it", anchor=Location("m.py", 12), target="m.py::A")
>>> b = replace(a, anchor=Location("m.py", 17), target="m.py::B")
>>> [(f.primary.line, [s.primary.line for s in f.sites]) for f in group_by_cause([b, a])]
[(12, [17])]
>>> recommended_setting("Record it with `wrap-functions = [\\"einops:rearrange\\"]` in [tool.fxscope]")
('wrap-functions', 'einops:rearrange')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from fxscope.model import Finding, Report
from fxscope.report.build import EXAMPLE_FUNCTION, library_of
from fxscope.report.filters import recount
from fxscope.report.locations import sort_key

__all__ = ["cause_key", "group_by_cause", "group_report", "library_name", "recommended_setting", "site_count",
           "site_lines", "ungroup"]

_SETTING = re.compile(r"`(leaf-modules|wrap-functions)\s*=\s*\[\s*\"([^\"]+)\"\s*\]`")


def cause_key(finding: Finding) -> tuple[Any, ...] | None:
    """What makes two findings one cause (None: a finding in workspace code, never grouped): the
    file it is shown in, the code, the library location, the message and the hint."""
    origin = finding.origin
    if origin is None:
        return None
    shown = finding.primary
    return (shown.file, shown.cell, finding.code, origin.range_key(), finding.message, finding.hint)


def group_by_cause(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per :func:`cause_key`, at the first of its places (by position), with the
    others as ``sites`` in position order; ungrouped findings as they are. Output in position
    order. Grouping grouped findings again is a no-op (their sites are flattened first)."""
    flat = sorted(ungroup(findings), key=sort_key)
    groups: dict[tuple[Any, ...], list[Finding]] = {}
    out: list[Finding | tuple[Any, ...]] = []
    for f in flat:
        key = cause_key(f)
        if key is None:
            out.append(f)
        elif key in groups:
            groups[key].append(f)
        else:
            groups[key] = [f]
            out.append(key)
    result = []
    for item in out:
        if isinstance(item, Finding):
            result.append(item)
        else:
            first, *rest = groups[item]
            result.append(replace(first, sites=tuple(rest)))
    return result


def ungroup(findings: Iterable[Finding]) -> list[Finding]:
    """Every site as a finding of its own (grouped findings flattened)."""
    out = []
    for f in findings:
        out.append(replace(f, sites=()) if f.sites else f)
        out.extend(ungroup(f.sites))
    return out


def site_count(findings: Iterable[Finding]) -> int:
    """How many places ``findings`` stand for (each finding and each of its sites)."""
    return sum(1 + site_count(f.sites) for f in findings)


def group_report(report: Report) -> Report:
    """``report`` with its findings grouped by cause (``summary.by_severity`` counts what is
    listed)."""
    return recount(report, group_by_cause(report.findings))


def recommended_setting(hint: str | None) -> tuple[str, str] | None:
    """The ``[tool.fxscope]`` entry a hint recommends first, as (key, value): the fix the
    tracer chose for what failed (``wrap-functions`` for a library function called from the
    user's code, ``leaf-modules`` for a library layer)."""
    for m in _SETTING.finditer(hint or ""):
        if m.group(2) != EXAMPLE_FUNCTION:  # the fallback hint's placeholder is no entry to add
            return m.group(1), m.group(2)
    return None


def library_name(finding: Finding) -> str | None:
    """The installed library (top-level package) the failing code of ``finding`` is in."""
    origin = finding.origin
    return library_of(origin.file) if origin is not None else None


def site_lines(finding: Finding) -> Sequence[int]:
    """The lines (in the file it is shown in) of a grouped finding's other sites."""
    return [s.primary.line for s in finding.sites]
