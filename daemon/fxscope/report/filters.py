"""Report filters: code selection, suppression comments, exit status.

Each filter returns a new :class:`~fxscope.model.Report` (the input is not modified) whose
``summary.by_severity`` counts the findings that remain.

>>> from fxscope.model import Finding, Location, Report, Summary
>>> r = Report("/w", "2.3", (), (Finding("FXS101", "error", "m", Location("m.py", 1)),), Summary(0))
>>> len(select_findings(r, ["FXS2"], None).findings)
0
>>> exit_code(r, "error")
1
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from fxscope.model import Finding, Report
from fxscope.model.codes import CODES, SEVERITIES, severity_rank
from fxscope.report.locations import SourceCache

__all__ = [
    "FAIL_ON",
    "SUPPRESSION",
    "apply_suppressions",
    "exit_code",
    "is_suppressed",
    "parse_selectors",
    "recount",
    "select_findings",
    "suppressed_codes",
]

#: Accepted values of ``--fail-on``.
FAIL_ON = (*SEVERITIES, "never")

#: A suppression comment: ``# fxscope: ignore`` (every code) or ``# fxscope: ignore[FXS101, FXS104]``;
#: group ``list`` is the bracket with its leading spaces, ``codes`` what is inside it.
SUPPRESSION = re.compile(r"#\s*fxscope\s*:\s*ignore(?![\w-])(?P<list>\s*\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def recount(report: Report, findings: Sequence[Finding], *, suppressed: int | None = None,
            baselined: int | None = None) -> Report:
    """A copy of ``report`` with ``findings`` and a recomputed ``summary.by_severity``;
    ``suppressed``/``baselined`` are added to the summary's counts of those."""
    by_severity = {sev: 0 for sev in SEVERITIES}
    for finding in findings:
        by_severity[finding.severity] = by_severity.get(finding.severity, 0) + 1
    summary = replace(report.summary, by_severity=by_severity)
    if suppressed is not None:
        summary = replace(summary, suppressed=(summary.suppressed or 0) + suppressed)
    if baselined is not None:
        summary = replace(summary, baselined=(summary.baselined or 0) + baselined)
    return replace(report, findings=tuple(findings), summary=summary)


def parse_selectors(selectors: Iterable[str]) -> list[str]:
    """Normalise ``--select``/``--ignore`` values: split commas, upper-case, check each one.

    Raises ValueError for a selector that matches no known code (``FXS9``, ``E501``).
    """
    out: list[str] = []
    for item in selectors:
        for sel in item.split(","):
            sel = sel.strip().upper()
            if not sel:
                continue
            if sel != "ALL" and not any(code.startswith(sel) for code in CODES):
                raise ValueError(f"unknown code or prefix: {sel!r} (expected e.g. FXS101, FXS1 or ALL)")
            out.append(sel)
    return out


def _specificity(code: str, selectors: list[str]) -> int:
    """Length of the longest selector matching ``code`` (``ALL`` = 0), -1 when none matches."""
    best = -1
    for sel in selectors:
        if sel == "ALL":
            best = max(best, 0)
        elif code.startswith(sel):
            best = max(best, len(sel))
    return best


def select_findings(report: Report, select: list[str] | None, ignore: list[str] | None) -> Report:
    """Keep findings whose code is selected and not ignored, as ruff does.

    Selectors are codes or prefixes (``FXS1`` = FXS1xx, ``ALL``). ``select=None`` selects every code.
    When a code matches both lists the more specific selector wins (``--select FXS1 --ignore FXS104``
    drops FXS104, ``--select FXS104 --ignore FXS1`` keeps it); on a tie, ignore wins.
    """
    sel = parse_selectors(select) if select is not None else ["ALL"]
    ign = parse_selectors(ignore or [])
    kept = [f for f in report.findings if _specificity(f.code, sel) > _specificity(f.code, ign)]
    return recount(report, kept)


def suppressed_codes(line: str) -> set[str] | None:
    """Codes a ``# fxscope: ignore[...]`` comment on ``line`` suppresses; ``{"ALL"}`` for a bare
    ``# fxscope: ignore``; None when there is no such comment.

    >>> sorted(suppressed_codes("x = f(y)  # fxscope: ignore[ FXS101 , FXS104 ]"))
    ['FXS101', 'FXS104']
    """
    found: set[str] | None = None
    for match in SUPPRESSION.finditer(line):
        found = found if found is not None else set()
        if match.group("codes") is None:
            found.add("ALL")
        else:
            found.update(c.upper() for c in re.split(r"[\s,]+", match.group("codes")) if c)
    return found


def is_suppressed(finding: Finding, source: SourceCache) -> bool:
    """Whether the primary line of ``finding`` suppresses its code (``source`` gives the text:
    the disk, or the open editor buffers)."""
    loc = finding.primary
    text = source.line_at(loc)
    codes = suppressed_codes(text) if text is not None else None
    return codes is not None and ("ALL" in codes or finding.code in codes)


def apply_suppressions(report: Report, root: Path, texts: Mapping[str, str] | None = None) -> Report:
    """Drop findings whose line carries ``# fxscope: ignore`` or ``# fxscope: ignore[FXS101, ...]``.

    The line is the finding's primary location (the anchor when its file is outside the workspace),
    read from ``texts`` (absolute path -> unsaved buffer text) when given, else from the disk.
    The number dropped is added to ``summary.suppressed``.
    """
    source = SourceCache(root, texts)
    kept = [f for f in report.findings if not is_suppressed(f, source)]
    return recount(report, kept, suppressed=len(report.findings) - len(kept))


def exit_code(report: Report, fail_on: str) -> int:
    """1 when a finding is at or above the ``fail_on`` severity, else 0 (always 0 for ``never``)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"unknown --fail-on value {fail_on!r} (expected one of {', '.join(FAIL_ON)})")
    if fail_on == "never":
        return 0
    limit = severity_rank(fail_on)
    return int(any(severity_rank(f.severity) <= limit for f in report.findings))
