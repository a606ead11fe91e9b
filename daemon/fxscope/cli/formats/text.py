"""``--format text``: findings for people, like ruff's and pyright's terminal output.

::

    models/gpt.py:42:12: FXS101 A traced value decides Python control flow
      42 |         if mask.any():
         |            ^^^^^^^^^^
      hint: Compute both branches and select with `torch.where`.
      in: blocks.0.attn (models.gpt.Attn), blocks.1.attn (models.gpt.Attn)
      via: models/gpt.py:80

    Found 1 error in 1 of 2 targets (1 traced, 1 partial) in 0.42s

A finding seen by several targets lists each module instance once, with the targets that saw it
(``in: <root> (models.gpt.GPT) [models/gpt.py::GPT, gpt-small]``), and each target's call chain
when they differ (``via: tools/build.py:7 (in build_small) [gpt-small]``).

Info-level findings (FXS405 "needs constructor arguments", ...) are listed only when asked
(``show_info``: ``--show-info``, or a ``--select`` that kept them); otherwise each code is one line
(``331 classes need constructor arguments: `fxscope init` writes factories for them``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fxscope.model import Finding, Location, Report, ReportTarget, Scope, Summary
from fxscope.model.codes import SEVERITIES
from fxscope.report.causes import ungroup
from fxscope.report.locations import SourceCache, display_path, sort_key
from fxscope.report.notebooks import cell_label

__all__ = ["hidden_info_lines", "render", "summary_line"]

#: How many scopes ``in:`` lists before "and N more".
MAX_SCOPES = 5

_STATUSES = ("traced", "partial", "failed", "error", "skipped")
#: Target statuses as the summary names them: "error" is a severity there, not a status.
_STATUS_LABEL = {"error": "could not run"}
_SEVERITY_STYLE = {"error": "1;31", "warning": "1;33", "info": "1;36", "hint": "1;36"}
_PLURAL = {"error": "errors", "warning": "warnings", "info": "info", "hint": "hints"}

#: One line for the hidden info findings of a code: (singular, plural, what to do).
_INFO_SUMMARY = {
    "FXS405": ("class needs constructor arguments", "classes need constructor arguments",
               "`fxscope init` writes factories for them"),
    "FXS406": ("model was built on CPU, not on the meta device",
               "models were built on CPU, not on the meta device",
               "make their constructors device-agnostic"),
    "FXS407": ("class uses a name only a notebook or script statement fxscope skips would set",
               "classes use names only notebook or script statements fxscope skips would set",
               "not traced"),
    "FXS501": ("graph is specialised on an example shape", "graphs are specialised on an example shape",
               "valid only for those shapes"),
}

#: How many blocked targets an import failure names before "and N more".
MAX_BLOCKED = 5


class _Style:
    """ANSI styling that is a no-op when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, sgr: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.color and text else text


def _position(loc: Location) -> str:
    """``12:9``, and in a notebook ``cell 3:12:9``."""
    return cell_label(loc)


def printable(text: object) -> str:
    r"""``text`` with every non-printable character (controls, escape sequences, newlines, line
    separators) shown as a Python escape, so text from model code can neither drive the terminal
    (title, screen clear) nor start a line of its own (a forged ``::error`` workflow command).

    >>> printable("a\x1b]0;title\x07\nb")
    'a\\x1b]0;title\\x07\\nb'
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] if c not in "'\\" else c for c in text)


def _visible_line(text: str) -> str:
    """A source line for display: tabs kept, other non-printables one U+FFFD each (columns stay)."""
    if text.isprintable():
        return text
    return "".join(c if c == "\t" or c.isprintable() else "\ufffd" for c in text)


def _snippet(loc: Location, source: SourceCache, style: _Style, sgr: str) -> list[str]:
    """The source line with a caret range under ``column..end_column`` (to the end of the line
    when the range spans lines, under the whole statement when there is no column)."""
    text = source.line_at(loc)
    if text is None:
        return []
    text = _visible_line(text.rstrip())
    if loc.column is None:
        start, end = len(text) - len(text.lstrip()), len(text)
    else:
        start = loc.column - 1
        if loc.end_line not in (None, loc.line):
            end = len(text)
        elif loc.end_column is not None:
            end = min(loc.end_column - 1, len(text))
        else:
            end = start + 1
    end = max(end, start + 1)
    number = str(loc.line)
    gutter = " " * len(number)
    lines = [f"  {style(number, '36')} {style('|', '36')} {text}"]
    if start <= len(text):
        # Keep tabs in the padding so the carets line up with the source in a terminal.
        pad = "".join(c if c == "\t" else " " for c in text[:start])
        lines.append(f"  {gutter} {style('|', '36')} {pad}{style('^' * (end - start), sgr)}")
    return lines


#: How many targets one scope of ``in:`` names before "and N more".
MAX_TARGETS = 3


def _scopes(scopes: Sequence[Scope]) -> str:
    """``blocks.0 (m.Block), blocks.1 (m.Block)``; a finding merged across targets lists each
    module instance once, with the targets it was seen in: ``<root> (m.Net) [a.py::Net, tiny]``."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for s in scopes:
        targets = grouped.setdefault((s.path, s.type), [])
        if s.target and s.target not in targets:
            targets.append(s.target)
    several = len({t for ts in grouped.values() for t in ts}) > 1
    shown = []
    for (path, kind), targets in list(grouped.items())[:MAX_SCOPES]:
        text = f"{path or '<root>'} ({kind})"
        if several and targets:
            more = len(targets) - MAX_TARGETS
            text += f" [{', '.join(targets[:MAX_TARGETS])}{f' and {more} more' if more > 0 else ''}]"
        shown.append(printable(text))
    more = len(grouped) - MAX_SCOPES
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _blocked(finding: Finding, targets: Mapping[str, ReportTarget], style: _Style) -> list[str]:
    """``blocked: 3 targets (a.py::A, ...) in a.py, b.py``: what one failing import kept from
    being traced (every target that saw it, and their files)."""
    ids = [t for t in finding.all_targets() if t in targets]
    if not ids:
        return []
    shown = ", ".join(ids[:MAX_BLOCKED]) + (f" and {len(ids) - MAX_BLOCKED} more" if len(ids) > MAX_BLOCKED else "")
    files = sorted({targets[t].file for t in ids if targets[t].file})
    where = f" in {', '.join(files)}" if files else ""
    return [f"  {style('blocked:', '1')} {_count(len(ids), 'target', 'targets')} ({shown}){where}"]


def hidden_info_lines(findings: Sequence[Finding]) -> list[str]:
    """One line per code for info findings not listed: ``331 classes need constructor arguments:
    `fxscope init` writes factories for them``."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    lines = []
    for code in sorted(counts):
        n = counts[code]
        if code in _INFO_SUMMARY:
            one, many, todo = _INFO_SUMMARY[code]
            lines.append(f"{n} {one if n == 1 else many}: {todo} ({code}; --show-info lists them)")
        else:
            lines.append(f"{n} {code} info {'finding' if n == 1 else 'findings'} (--show-info lists them)")
    return lines


def _finding(finding: Finding, root: Path, source: SourceCache, style: _Style,
             targets: Mapping[str, ReportTarget] | None = None) -> list[str]:
    sgr = _SEVERITY_STYLE.get(finding.severity, "1")
    loc = finding.primary
    head = f"{style(printable(display_path(loc.file, root)), '1')}:{_position(loc)}: "
    lines = [head + f"{style(printable(finding.code), sgr)} {printable(finding.message)}"]
    lines += _snippet(loc, source, style, sgr)
    origin = finding.origin
    if origin is not None:
        lines.append(f"  {style('origin:', '1')} {printable(origin.file)}:{_position(origin)}")
        lines += _snippet(origin, source, style, sgr)
    if finding.hint:
        lines.append(f"  {style('hint:', '1;36')} {printable(finding.hint)}")
    if finding.scopes:
        lines.append(f"  {style('in:', '1')} {_scopes(finding.scopes)}")
    if finding.sites:
        lines.append(f"  {style('also:', '1')} {_sites(finding.sites)}")
    if finding.code == "FXS402":
        lines += _blocked(finding, targets or {}, style)
    for where in finding.related:
        if where.file.startswith("<") or "<frozen " in where.file:
            continue  # importlib's own frames (<frozen importlib._bootstrap>): not the user's chain
        path = where.file if where.outside else display_path(where.file, root)
        note = f" ({printable(where.message)})" if where.message else ""
        if where.target:  # merged chains of several targets: whose this step is
            note += f" [{printable(where.target)}]"
        lines.append(f"  {style('via:', '1')} {printable(path)}:{_position(where)}{note}")
    return lines


#: How many other places of one cause ``also:`` lists before "and N more".
MAX_SITES = 8


def _sites(sites: Sequence[Finding]) -> str:
    """``lines 17:16, 22:16 (same cause)``: the other places of a grouped finding."""
    shown = [_position(s.primary) for s in sites[:MAX_SITES]]
    more = f" and {len(sites) - MAX_SITES} more" if len(sites) > MAX_SITES else ""
    noun = "line" if len(sites) == 1 else "lines"
    return f"{noun} {', '.join(shown)}{more} of this file (the same cause)"


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


def _targets_phrase(summary: Summary) -> str:
    """``5 targets traced (3 cached)`` or ``5 targets (4 traced, 1 partial; 1 cached)``."""
    total = summary.targets
    by_status = {s: n for s, n in summary.by_status.items() if n}
    order = [s for s in _STATUSES if s in by_status] + sorted(set(by_status) - set(_STATUSES))
    cached = summary.cached
    noun = "target" if total == 1 else "targets"
    if by_status and list(by_status) == ["traced"] and by_status["traced"] == total:
        core, parts = f"{total} {noun} traced", []
    else:
        core, parts = f"{total} {noun}", [f"{by_status[s]} {_STATUS_LABEL.get(s, s)}" for s in order]
    extra = ", ".join(parts)
    if cached:
        extra = f"{extra}; {cached} cached" if extra else f"{cached} cached"
    return f"{core} ({extra})" if extra else core


def summary_line(report: Report, *, color: bool = False) -> str:
    """The closing line: ``Found 3 errors, 1 warning in 2 of 5 targets (...) in 0.42s`` or
    ``All checks passed: 5 targets traced (3 cached) in 0.12s; sandbox on (Landlock)``."""
    style = _Style(color)
    summary = report.summary
    findings = report.findings
    seconds = summary.duration_ms / 1000
    dropped = [f"{count} {label}" for count, label in ((summary.suppressed, "suppressed"),
                                                      (summary.baselined, "in baseline")) if count]
    tail = f" in {seconds:.2f}s" + (f" ({', '.join(dropped)})" if dropped else "")
    if report.sandbox is not None:  # never silent about whether model code ran contained
        tail += f"; {report.sandbox.phrase()}"
    if not findings:
        if not summary.targets:
            return style("No targets to check", "1") + tail
        return style("All checks passed", "1;32") + f": {_targets_phrase(summary)}{tail}"
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    found = ", ".join(
        _count(counts[s], s, _PLURAL[s]) for s in SEVERITIES if counts.get(s)
    )
    worst = next(s for s in SEVERITIES if counts.get(s))
    hit = len({t for f in ungroup(findings) for t in [*f.all_targets(), *(s.target for s in f.scopes)]
               if t})  # every target that saw a finding, merged and grouped ones included
    head = style(f"Found {found}", _SEVERITY_STYLE[worst])
    return f"{head} in {hit} of {_targets_phrase(summary)}{tail}"


def analysis_lines(targets: Sequence[ReportTarget]) -> list[str]:
    """``models.py::Net: export not ok: failed (1 problem)``: one line per analysis summary of
    each target, as the analysis words it (none when only fx ran)."""
    return [f"{printable(t.id)}: {printable(s.line(name))}" for t in targets for name, s in t.analyses.items()]


def render(report: Report, *, color: bool = False, root: Path, show_info: bool = False) -> str:
    """Every finding (sorted by file, line, column, code) with its source line, then the summary.
    Info-level findings are listed only with ``show_info``; otherwise one line per code."""
    style = _Style(color)
    source = SourceCache(root)
    targets = {t.id: t for t in report.targets}
    listed = [f for f in report.findings if show_info or f.severity != "info"]
    hidden = [f for f in report.findings if not (show_info or f.severity != "info")]
    blocks = ["\n".join(_finding(f, root, source, style, targets)) for f in sorted(listed, key=sort_key)]
    if hidden:
        blocks.append("\n".join(style(line, _SEVERITY_STYLE["info"]) for line in hidden_info_lines(hidden)))
    analyses = analysis_lines(report.targets)
    if analyses:
        blocks.append("\n".join(analyses))
    blocks.append(summary_line(report, color=color))
    return "\n\n".join(blocks) + "\n"
