"""What torch.compile says about graph breaks and recompilations, read as data.

Dynamo reports every graph break on its ``graph_breaks`` log (``TORCH_LOGS=graph_breaks``) and
every recompilation on its ``recompiles`` log; :class:`DynamoLogCapture` collects those records
while a model runs under ``torch.compile``, and the parsers here turn them into
:class:`BreakEvent` and :class:`Recompile` values (the user stack, torch's reason text, the guard
that failed). :class:`BreakRegistry` maps a reason to its entry of torch's own table of graph-break
types (``torch/_dynamo/graph_break_registry.json``: ``GBxxxx`` -> type, explanation, hints), so a
finding's message and hint are torch's words, with the raw reason as the fallback.

>>> record = ('Graph break in user code at /w/m.py:10\\nGraph Break Reason: Data-dependent branching\\n'
...           '  Explanation: Detected data-dependent branching.\\n  Hint: Use `torch.cond`.\\n\\n'
...           'User code traceback:\\n  File "/w/m.py", line 10, in forward\\n    if x.sum() > 0:\\n')
>>> event = parse_break_record(record)
>>> event.innermost.file, event.innermost.line, event.reason.splitlines()[0]
('/w/m.py', 10, 'Data-dependent branching')
>>> text = explain_reason(event.reason, BreakRegistry({"Data-dependent branching": ("GB0170", "", ())}))
>>> text.gb_id, text.message, text.hints
('GB0170', 'Data-dependent branching: Detected data-dependent branching.', ('Use `torch.cond`.',))
>>> recompile = parse_recompile_record("Recompiling function forward in /w/m.py:8\\n    triggered by the "
...     "following guard failure(s):\\n    - 0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3")
>>> recompile.function, recompile.line, recompile.reasons
('forward', 8, ("0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3",))
"""

from __future__ import annotations

import json
import linecache
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fxscope.trace.stacks import StackFrame

__all__ = ["BreakEvent", "BreakRegistry", "BreakText", "DynamoLogCapture", "LogEntry", "Recompile",
           "explain_reason", "parse_break_record", "parse_recompile_record", "parse_stack"]

#: Dynamo's artifact loggers that fxscope reads (``torch._logging`` names them ``<module>.__<artifact>``).
GRAPH_BREAKS, RECOMPILES = "graph_breaks", "recompiles"


@dataclass(frozen=True)
class BreakEvent:
    """One graph break: the user stack where it happened (outermost first) and torch's reason."""

    frames: tuple[StackFrame, ...]
    reason: str

    @property
    def innermost(self) -> StackFrame:
        """Where the break happened (the last frame)."""
        return self.frames[-1]


@dataclass(frozen=True)
class Recompile:
    """A recompilation of ``function`` (defined at ``file``:``line``) and the guards that failed."""

    file: str
    line: int
    function: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class BreakText:
    """A break explained: the registry id (``GB0170``, None without an entry), the graph-break type,
    the message, torch's hints, the documentation link, and whether the whole function falls back
    to eager."""

    gb_id: str | None
    gb_type: str | None
    message: str
    hints: tuple[str, ...] = ()
    url: str | None = None
    skips_function: bool = False


class BreakRegistry:
    """torch's table of graph-break types: type -> (``GBxxxx``, explanation, hints).

    The registry holds each type's current and historical entries as torch's source wrote them;
    the explanation and hints kept are those of the first entry written as plain text (its
    placeholders, ``{fn}``, are filled in the live message, which is preferred)."""

    def __init__(self, entries: Mapping[str, tuple[str, str, tuple[str, ...]]]) -> None:
        self._entries = dict(entries)

    @classmethod
    def load(cls, path: str | None) -> BreakRegistry:
        """Read ``graph_break_registry.json`` (an empty registry when it is missing or unreadable:
        every break then keeps its raw reason)."""
        if not path:
            return cls({})
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return cls({})
        entries: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        for gb_id, versions in data.items() if isinstance(data, dict) else ():
            for entry in versions if isinstance(versions, list) else ():
                gb_type = entry.get("Gb_type") if isinstance(entry, dict) else None
                if not isinstance(gb_type, str) or not gb_type:
                    continue
                explanation = str(entry.get("Explanation") or "")
                hints = tuple(str(h) for h in entry.get("Hints") or () if isinstance(h, str))
                known = entries.get(gb_type)
                if known is None or (not _plain(known[1]) and _plain(explanation)):
                    entries[gb_type] = (str(gb_id), explanation if _plain(explanation) else "",
                                        hints if all(_plain(h) for h in hints) else ())
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, gb_type: str) -> tuple[str, str, tuple[str, ...]] | None:
        """The entry of a graph-break type."""
        return self._entries.get(gb_type)

    def find(self, reason: str) -> tuple[str, int] | None:
        """The first line of ``reason`` that names a graph-break type of the registry, as
        (type, index of that line); None when no line does."""
        for i, line in enumerate(reason.splitlines()):
            text = line.strip()
            if text and text in self._entries:
                return text, i
        return None


def _plain(text: str) -> bool:
    """Whether registry text is prose (not a placeholder, a template or a source expression)."""
    return bool(text) and "{" not in text and not text.startswith(("_", '"', "'")) and "+" not in text


_LINK_RE = re.compile(r"For more details about this graph break, please visit:\s*(\S+)")


def explain_reason(reason: str, registry: BreakRegistry) -> BreakText:
    """Message and hints of a break from torch's ``reason`` text: with a registry entry, the type
    and the live explanation and hints that follow it (the registry's own when the reason has none);
    without one, the reason's first line. Either way, a reason saying that the function falls back to
    eager marks ``skips_function``."""
    lines = reason.splitlines()
    link = _LINK_RE.search(reason)
    url = link.group(1) if link else None
    found = registry.find(reason)
    prefix = " ".join(lines[: found[1]] if found else lines[:1]).lower()
    skips = "back to eager" in prefix or "results in a skip" in prefix
    if found is None:
        first = next((line.strip() for line in lines if line.strip()), "unknown reason")
        return BreakText(None, None, first.rstrip(":"), (), url, skips)
    gb_type, index = found
    explanation, hints = _sections(lines[index + 1:])
    gb_id, registry_explanation, registry_hints = registry.get(gb_type) or ("", "", ())
    explanation = explanation or registry_explanation
    message = f"{gb_type}: {explanation}" if explanation else gb_type
    return BreakText(gb_id or None, gb_type, message, hints or registry_hints, url, skips)


def _sections(lines: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The first paragraph of the ``Explanation:`` and each ``Hint:`` of a formatted graph-break
    message (``torch._dynamo.exc.format_graph_break_message``), up to its debug context."""
    explanation: list[str] = []
    hints: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        text = line.strip()
        if text.startswith(("Developer debug context:", "*** While handling")):
            break
        if text.startswith("Explanation:"):
            current, text = explanation, text[len("Explanation:"):].strip()
        elif text.startswith("Hint:"):
            hints.append([])
            current, text = hints[-1], text[len("Hint:"):].strip()
        elif not text:
            current = None  # a blank line ends the paragraph
        if current is not None and text:
            current.append(text)
    return " ".join(explanation), tuple(" ".join(h) for h in hints if h)


# ------------------------------------------------------------------------------ parsing the logs

_HEADER_RE = re.compile(r"in user code at (?P<file>[^\n]+):(?P<line>\d+)[ \t]*\nGraph Break Reason: (?P<reason>.*)",
                        re.DOTALL)
_FRAME_RE = re.compile(r'^  File "(?P<file>.+)", line (?P<line>\d+), in (?P<name>.+)$')
_STACK_MARKERS = ("User code traceback:", "The graph break occurred in the following user code:")
_CARETS_RE = re.compile(r"^ *[\^~]+ *$")


def parse_break_record(message: str, exc: BaseException | None = None) -> BreakEvent | None:
    """A :class:`BreakEvent` from one record of the ``graph_breaks`` log (``exc``: the exception
    the record carries, when it does); None for a record of another shape.

    Three shapes exist: ``Graph break in user code at F:L`` with the reason and the user stack; the
    same header when the stack was already logged (``user stack suppressed due to duplicate``: the
    stack is then the break's line alone); and ``Graph break: torch.compile cannot properly resume
    ...`` with the stack, whose reason is the exception's message."""
    header = _HEADER_RE.search(message)
    stack_at = -1
    for marker in _STACK_MARKERS:
        stack_at = message.find(marker)
        if stack_at >= 0:
            stack_at += len(marker)
            break
    frames = parse_stack(message[stack_at:]) if stack_at >= 0 else []
    if header is not None:
        reason = header.group("reason")
        if stack_at >= 0:
            reason = message[header.start("reason"): message.find("User code traceback:")]
        place = StackFrame(os.path.abspath(header.group("file")), int(header.group("line")))
        if (not frames or (frames[-1].file, frames[-1].line) != (place.file, place.line)) and not (
                header.group("file").startswith("<")):
            frames.append(place)
        if not frames:
            return None
        return BreakEvent(tuple(frames), reason.strip("\n"))
    if frames and message.startswith("Graph break"):
        reason = getattr(exc, "msg", None) or (str(exc) if exc is not None else message.split("\n", 1)[0])
        first = message.split("\n", 1)[0]
        return BreakEvent(tuple(frames), f"{first}\n{reason}")
    return None


def parse_stack(text: str) -> list[StackFrame]:
    """Frames of a stack formatted by ``traceback.format_list`` (Python 3.11+ carets give columns)."""
    frames: list[StackFrame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _FRAME_RE.match(line)
        if match is None or match.group("file").startswith("<"):  # <frozen runpy>, <string>: no file
            continue
        file, number = os.path.abspath(match.group("file")), int(match.group("line"))
        column = end_column = None
        if i + 2 < len(lines) and lines[i + 1].startswith("    ") and _CARETS_RE.match(lines[i + 2][4:] or "-"):
            column, end_column = _caret_columns(file, number, lines[i + 2][4:])
        frames.append(StackFrame(file, number, match.group("name").strip(), column, end_column))
    return frames


def _caret_columns(file: str, line: int, carets: str) -> tuple[int | None, int | None]:
    """The 1-based column range the carets under a stripped source line mark in the file's line."""
    source = linecache.getline(file, line)
    if not source:
        return None, None
    indent = len(source) - len(source.lstrip())
    start = len(carets) - len(carets.lstrip())
    end = len(carets.rstrip())
    return indent + start + 1, indent + end + 1


_RECOMPILE_RE = re.compile(r"^Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)\s*$")


def parse_recompile_record(message: str) -> Recompile | None:
    """A :class:`Recompile` from one record of the ``recompiles`` log (``Recompiling function F in
    FILE:LINE`` and the guard failures, one ``- ...`` line each); None for another shape."""
    lines = message.splitlines()
    match = _RECOMPILE_RE.match(lines[0]) if lines else None
    if match is None:
        return None
    reasons = tuple(line.strip()[2:].strip() for line in lines[1:] if line.strip().startswith("- "))
    return Recompile(os.path.abspath(match.group("file")), int(match.group("line")), match.group("name"), reasons)


# ------------------------------------------------------------------------------ capturing the logs


@dataclass(frozen=True)
class LogEntry:
    """One captured record: its artifact (``graph_breaks`` or ``recompiles``), text and exception."""

    artifact: str
    message: str
    exc: BaseException | None = None


class DynamoLogCapture(logging.Handler):
    """Collects the records of dynamo's ``graph_breaks`` and ``recompiles`` logs while active
    (``with DynamoLogCapture() as logs: ...``; ``logs.entries`` in order). The records do not reach
    torch's own handlers (stderr) meanwhile; logging is set back to torch's defaults at the end."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.entries: list[LogEntry] = []
        self._loggers: list[tuple[logging.Logger, bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        artifact = record.name.rpartition(".__")[2]
        if artifact not in (GRAPH_BREAKS, RECOMPILES):
            return
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record whose message cannot be formatted is skipped
            return
        exc = record.exc_info[1] if record.exc_info else None
        self.entries.append(LogEntry(artifact, message, exc))

    def __enter__(self) -> DynamoLogCapture:
        import torch._dynamo  # noqa: F401 - its modules create the loggers

        from fxscope.trace._torch_compat import artifact_loggers, enable_dynamo_logs

        enable_dynamo_logs((GRAPH_BREAKS, RECOMPILES))
        for logger in artifact_loggers((GRAPH_BREAKS, RECOMPILES)):
            self._loggers.append((logger, logger.propagate))
            logger.addHandler(self)
            logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        from fxscope.trace._torch_compat import enable_dynamo_logs

        for logger, propagate in self._loggers:
            logger.removeHandler(self)
            logger.propagate = propagate
        self._loggers.clear()
        enable_dynamo_logs(())

    def breaks(self, upto: int | None = None) -> list[BreakEvent]:
        """The graph breaks of the first ``upto`` entries (all by default), in order."""
        out = []
        for entry in self.entries[:upto]:
            if entry.artifact == GRAPH_BREAKS:
                event = parse_break_record(entry.message, entry.exc)
                if event is not None:
                    out.append(event)
        return out

    def recompiles(self, start: int = 0, upto: int | None = None) -> list[Recompile]:
        """The recompilations of the entries from ``start`` to ``upto`` (all by default), in order."""
        found = (parse_recompile_record(e.message) for e in self.entries[start:upto] if e.artifact == RECOMPILES)
        return [r for r in found if r is not None]
