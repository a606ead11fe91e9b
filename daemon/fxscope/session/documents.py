"""The open editor buffers: the only place document versions live.

Every open, change, save or close that alters the text which counts for a file makes a new
immutable :class:`~fxscope.model.Snapshot` (its generation one higher); background work only
ever sees snapshots. Keys are absolute paths (``str``).

A buffer that does not parse (a half-typed line: the editor shows its syntax error) is not what
counts: the snapshot keeps its last text that parsed (the disk's when it never did since it was
opened), so nothing is traced for it, no FXS402 comes from it, and the files that import it keep
their results. The store also keeps how each document's lines moved between its versions
(:class:`BufferView`; a notebook's code lines), so results computed for an older version are
shown where their lines are now.

>>> docs = DocumentStore()
>>> docs.open("/ws/m.py", 1, "x = 1\\n").files, docs.snapshot().generation
(('/ws/m.py',), 1)
>>> docs.change("/ws/m.py", 2, "x = 1\\n").files, docs.version("/ws/m.py")
((), 2)
>>> docs.change("/ws/m.py", 3, "x = (\\n").files, docs.snapshot().text("/ws/m.py")   # does not parse
((), 'x = 1\\n')
>>> docs.view().line_map("/ws/m.py", 2).line(1) is None   # line 1 was edited since version 2
True
"""

from __future__ import annotations

import ast
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fxscope.model import Snapshot
from fxscope.project.notebooks import NotebookError, is_notebook, notebook_tree, read_notebook
from fxscope.session.linemap import LineEdit, LineMap, diff_edits, split_text
from fxscope.session.parsecheck import Spans, reparse, statement_spans

__all__ = ["BufferView", "DocumentChange", "DocumentStore", "buffer_parses", "disk_text"]

#: Edits kept per document for mapping results of older versions (older ones are withheld).
MAX_STEPS = 2000


def disk_text(path: str) -> str | None:
    """The text of ``path`` on disk, None when it cannot be read as UTF-8."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _code_lines(path: str, text: str | None) -> str:
    """The text whose lines results count in: a notebook's code lines (its code cells one after
    the other, as written), any other file's own text."""
    if text is None or not is_notebook(path):
        return text or ""
    try:
        return read_notebook(text).text
    except NotebookError:
        return ""


def _check(path: str, text: str, old: _Document | None = None,
           edits: Sequence[LineEdit] | None = None) -> tuple[bool, _Parsed | None]:
    """Whether ``text`` of ``path`` parses, and (Python) what the next check needs: after line
    edits of a text that parsed (or of one that did not, since the last that did), only the
    statements around the edited lines are parsed again."""
    if not path.endswith(".py"):
        return buffer_parses(path, text), None
    lines = split_text(text)
    parsed = old.parsed if old is not None else None
    if parsed is not None and edits is not None:
        since = parsed.since.then(edits)
        spans = reparse(parsed.spans, lines, since.covering(parsed.lines, len(lines)))
        if spans is None:
            return False, _Parsed(parsed.spans, parsed.lines, since)
    else:
        spans = statement_spans(text)
        if spans is None:
            return False, None
    return True, _Parsed(spans, len(lines))


def buffer_parses(path: str, text: str) -> bool:
    """Whether the buffer ``text`` of ``path`` parses: a Python file as a module, a notebook cell
    by cell (other files are not Python and always count)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning: invalid escapes and the like
            if is_notebook(path):
                return not notebook_tree(read_notebook(text)).errors
            if path.endswith(".py"):
                ast.parse(text, filename=path)
    except NotebookError:
        return True  # not a notebook at all: discovery says so
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@dataclass(frozen=True)
class DocumentChange:
    """What one document operation did: the files whose text that counts changed (the buffer
    against the previous buffer, or against the disk when a buffer opens or closes) and the
    snapshot after it."""

    files: tuple[str, ...]
    snapshot: Snapshot


@dataclass(frozen=True)
class _Step:
    """One version of a document: its ``version`` (None: the disk text it was opened over), the
    hash of its lines (a notebook's code lines), and the edits from the previous step's lines."""

    version: int | None
    digest: int
    edits: tuple[LineEdit, ...]


@dataclass(frozen=True)
class _Parsed:
    """The top-level statements and line count of the last Python text that parsed, and how the
    buffer's lines moved since (identity while the buffer is that text)."""

    spans: Spans
    lines: int
    since: LineMap = LineMap.IDENTITY


@dataclass(frozen=True)
class _Document:
    version: int | None
    text: str
    #: What the snapshot holds for it: (version, text) of its last text that parsed; None: the disk.
    counts: tuple[int | None, str] | None
    #: Its versions since it was opened (empty: its lines are not tracked).
    steps: tuple[_Step, ...] = ()
    #: Python: what the next edit's parse check starts from (it re-parses only the statements
    #: around the edited lines).
    parsed: _Parsed | None = None

    @property
    def parses(self) -> bool:
        return self.counts is not None and self.counts[0] == self.version and self.counts[1] == self.text


@dataclass(frozen=True)
class BufferView:
    """The open buffers as the editor has them (which the snapshot does not hold while one does
    not parse), and where lines of their earlier versions are now. Immutable.

    ``held``: the open documents that do not parse now (their FXS402 is the editor's to show)."""

    generation: int
    texts: Mapping[str, str]
    versions: Mapping[str, int | None]
    held: frozenset[str]
    steps: Mapping[str, tuple[_Step, ...]]
    _memo: dict[tuple[str, int | None], LineMap | None] = field(default_factory=dict, compare=False, repr=False)

    def tracks(self, key: str) -> bool:
        """Whether ``key`` is open with its lines tracked (results are mapped to its buffer)."""
        return key in self.steps

    def line_map(self, key: str, version: int | None) -> LineMap | None:
        """Where the lines of ``key`` at ``version`` (None: the disk text it was opened over) are in
        its buffer now; None when that is not known (a version older than the edits kept). A file
        that is not open, or whose lines are not tracked, maps to itself."""
        steps = self.steps.get(key)
        if steps is None:
            return LineMap.IDENTITY
        memo_key = (key, version)
        if memo_key in self._memo:
            return self._memo[memo_key]
        found: LineMap | None = None
        for i in range(len(steps) - 1, -1, -1):
            if steps[i].version == version:
                if steps[i].digest == steps[-1].digest:
                    found = LineMap.IDENTITY
                else:
                    found = LineMap.IDENTITY.then(e for step in steps[i + 1:] for e in step.edits)
                break
            kept = steps[i].version
            if version is not None and kept is not None and kept < version:
                break  # versions only grow: it is not kept
        self._memo[memo_key] = found
        return found


class DocumentStore:
    """Versioned buffers of the documents an editor has open (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, _Document] = {}
        self._snapshot = Snapshot.of({}, {}, generation=0)

    def snapshot(self) -> Snapshot:
        """The current snapshot: the texts that count for open documents, their versions, generation."""
        with self._lock:
            return self._snapshot

    def view(self) -> BufferView:
        """The buffers as the editor has them now, and how their lines moved (see :class:`BufferView`)."""
        with self._lock:
            docs = dict(self._docs)
            generation = self._snapshot.generation
        return BufferView(generation, {k: d.text for k, d in docs.items()}, {k: d.version for k, d in docs.items()},
                          frozenset(k for k, d in docs.items() if not d.parses),
                          {k: d.steps for k, d in docs.items() if d.steps})

    def version(self, path: str) -> int | None:
        """The version of the open document ``path`` (None when it is not open)."""
        with self._lock:
            doc = self._docs.get(path)
        return doc.version if doc is not None else None

    def text(self, path: str) -> str | None:
        """The buffer text of ``path`` (None when it is not open)."""
        with self._lock:
            doc = self._docs.get(path)
        return doc.text if doc is not None else None

    def is_open(self, path: str) -> bool:
        """Whether an editor has ``path`` open."""
        with self._lock:
            return path in self._docs

    def parses(self, path: str) -> bool:
        """Whether the buffer of ``path`` parses (True when it is not open)."""
        with self._lock:
            doc = self._docs.get(path)
        return doc is None or doc.parses

    def paths(self) -> list[str]:
        """Every open document."""
        with self._lock:
            return list(self._docs)

    def open(self, path: str, version: int, text: str) -> DocumentChange:
        """An editor opened ``path`` at ``version`` with ``text`` (changed when what counts differs
        from the disk: a buffer that does not parse leaves the disk counting)."""
        disk = disk_text(path)
        parses, parsed = _check(path, text)
        counts = (version, text) if parses else None
        lines, disk_lines = _code_lines(path, text), _code_lines(path, disk)
        first = _Step(version, hash(lines), diff_edits(disk_lines, lines) if disk is not None else ())
        steps = (_Step(None, hash(disk_lines), ()), first) if disk is not None else (first,)
        with self._lock:
            self._docs[path] = _Document(version, text, counts, steps, parsed)
            snapshot = self._bump()
        return DocumentChange((path,) if counts is not None and disk != text else (), snapshot)

    def change(self, path: str, version: int, text: str, edits: Sequence[LineEdit] | None = None) -> DocumentChange:
        """The buffer of ``path`` is now ``text`` at ``version``; ``edits``: how its lines moved
        (None: found by a line diff with the previous text)."""
        with self._lock:
            old = self._docs.get(path)
        if old is None:
            parses, parsed = _check(path, text)
            with self._lock:
                self._docs[path] = _Document(version, text, (version, text) if parses else None, parsed=parsed)
                return DocumentChange((path,) if parses else (), self._bump())
        return self._update(path, old, version, text, edits)

    def _update(self, path: str, old: _Document, version: int | None, text: str,
                edits: Sequence[LineEdit] | None) -> DocumentChange:
        parses, parsed = _check(path, text, old, edits)
        counts = (version, text) if parses else old.counts
        steps = old.steps
        if steps:
            lines = _code_lines(path, text)
            moved = tuple(edits) if edits is not None else diff_edits(_code_lines(path, old.text), lines)
            steps = (*steps, _Step(version, hash(lines), moved))[-MAX_STEPS:]
        before = old.counts[1] if old.counts is not None else None
        after = counts[1] if counts is not None else None
        if before is None or after is None:  # the disk counted, or counts again
            disk = disk_text(path)
            before, after = before if before is not None else disk, after if after is not None else disk
        with self._lock:
            if self._docs.get(path) is not old:  # changed or closed meanwhile: the newer state wins
                return DocumentChange((), self._snapshot)
            self._docs[path] = _Document(version, text, counts, steps, parsed)
            snapshot = self._bump()
        return DocumentChange((path,) if before != after else (), snapshot)

    def save(self, path: str, text: str | None = None) -> DocumentChange:
        """``path`` was saved (with ``text`` when the client sent it)."""
        with self._lock:
            old = self._docs.get(path)
            if old is None or text is None or old.text == text:
                return DocumentChange((), self._snapshot)
        return self._update(path, old, old.version, text, None)

    def close(self, path: str) -> DocumentChange:
        """The editor closed ``path``: its disk text counts again (changed when it differs from
        what counted)."""
        with self._lock:
            old = self._docs.pop(path, None)
            if old is None:
                return DocumentChange((), self._snapshot)
            snapshot = self._bump()
        if old.counts is None:
            return DocumentChange((), snapshot)
        return DocumentChange((path,) if disk_text(path) != old.counts[1] else (), snapshot)

    def next_generation(self) -> Snapshot:
        """A new snapshot of the same buffers (a round started now, or a cancel, supersedes every
        older one)."""
        with self._lock:
            old = self._snapshot
            self._snapshot = Snapshot(old.generation + 1, old.texts, old.versions)
            return self._snapshot

    def _bump(self) -> Snapshot:
        """A new snapshot of what counts for the open documents (lock held)."""
        counting = {k: d.counts for k, d in self._docs.items() if d.counts is not None}
        self._snapshot = Snapshot.of({k: c[1] for k, c in counting.items()}, {k: c[0] for k, c in counting.items()},
                                     generation=self._snapshot.generation + 1)
        return self._snapshot
