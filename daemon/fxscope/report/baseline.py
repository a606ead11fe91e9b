"""Baselines: accept today's findings, fail only on new ones.

A fingerprint identifies a finding without its line number, so edits above it keep it stable: it
hashes the code, the workspace file, the stripped text of the offending line, the column range
relative to that text, and an occurrence index among otherwise identical findings. It leaves out
the target: a problem in a block that several targets use is reported once, under whichever of
them was checked (``--shard`` runs see different ones), and renaming a model keeps its baseline.

>>> import tempfile
>>> from dataclasses import replace
>>> from fxscope.model import Location
>>> root = Path(tempfile.mkdtemp()); _ = (root / "m.py").write_text("if x:\\n")
>>> f = Finding("FXS101", "error", "m", Location("m.py", 1), target="t")
>>> fingerprint(f, root) == fingerprint(replace(f, message="other", target="u"), root)
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fxscope.model import Finding, Report
from fxscope.report.filters import recount
from fxscope.report.locations import SourceCache

__all__ = ["BASELINE_VERSION", "filter_baseline", "fingerprint", "fingerprints", "write_baseline"]

BASELINE_VERSION = 1


def _stable_file(file: str, outside: bool) -> str:
    """An outside file without anchor: drop the machine-specific prefix up to site-packages."""
    if outside:
        posix = file.replace("\\", "/")
        marker = "/site-packages/"
        if marker in posix:
            return posix.rsplit(marker, 1)[1]
    return file


def _key(finding: Finding, source: SourceCache) -> tuple[str, ...]:
    """Everything a fingerprint hashes except the occurrence index."""
    loc = finding.primary
    text = source.line_at(loc)
    if text is None:
        line_part, span = f"line {loc.line}", f"{loc.column}:{loc.end_line}:{loc.end_column}"
    else:
        line_part = text.strip()
        indent = len(text) - len(text.lstrip())
        if loc.column is None:
            span = ""
        elif loc.end_line in (None, loc.line) and loc.end_column is not None:
            span = f"{loc.column - indent}+{loc.end_column - loc.column}"
        else:
            span = f"{loc.column - indent}+{(loc.end_line or loc.line) - loc.line}l"
    return (
        finding.code,
        _stable_file(loc.file, loc.outside),
        line_part,
        span,
    )


def _digest(key: tuple[str, ...], occurrence: int) -> str:
    return hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8")).hexdigest()


def fingerprints(findings: Sequence[Finding], root: Path, texts: Mapping[str, str] | None = None) -> list[str]:
    """The fingerprint of each finding, in order; identical findings get distinct occurrence indexes
    (numbered in source order). Lines are read from ``texts`` (absolute path -> buffer) or the disk."""
    source = SourceCache(root, texts)
    keys = [_key(f, source) for f in findings]
    locs = [f.primary for f in findings]
    order = sorted(range(len(findings)), key=lambda i: (locs[i].cell or 0, locs[i].line, locs[i].column or 0, i))
    seen: dict[tuple[str, ...], int] = {}
    out = [""] * len(findings)
    for i in order:
        occurrence = seen.get(keys[i], 0)
        seen[keys[i]] = occurrence + 1
        out[i] = _digest(keys[i], occurrence)
    return out


def fingerprint(finding: Finding, root: Path, occurrence: int = 0) -> str:
    """The fingerprint of one finding (use :func:`fingerprints` to number duplicates)."""
    return _digest(_key(finding, SourceCache(root)), occurrence)


def write_baseline(path: Path, report: Report, root: Path) -> int:
    """Write every finding of ``report`` to the baseline file ``path``; returns how many."""
    findings = report.findings
    entries: list[dict[str, Any]] = []
    for finding, fp in zip(findings, fingerprints(findings, root)):
        loc = finding.primary
        entries.append(
            {"fingerprint": fp, "code": finding.code, "file": loc.file, "line": loc.line,
             "message": finding.message}
        )
    entries.sort(key=lambda e: (e["file"], e["line"], e["code"], e["fingerprint"]))
    doc = {"version": BASELINE_VERSION, "findings": entries}
    Path(path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return len(entries)


def _load(path: Path) -> set[str]:
    """The fingerprints in a baseline file; ValueError (one line) when it is missing or malformed."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"baseline {path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION:
        raise ValueError(f"baseline {path} is not an fxscope baseline (version {BASELINE_VERSION})")
    entries = doc.get("findings")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries
    ):
        raise ValueError(
            f"baseline {path} is malformed: 'findings' must be a list of entries with a 'fingerprint'"
        )
    return {e["fingerprint"] for e in entries}


def filter_baseline(report: Report, path: Path, root: Path) -> Report:
    """Drop findings recorded in the baseline file ``path``; their number goes to ``summary.baselined``."""
    known = _load(path)
    findings = report.findings
    kept = [f for f, fp in zip(findings, fingerprints(findings, root)) if fp not in known]
    return recount(report, kept, baselined=len(findings) - len(kept))
