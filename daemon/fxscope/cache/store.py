"""The result cache: trace payloads keyed by target, context and the content of every dependency.

One SQLite database (``results.sqlite3``, WAL mode) shared safely by threads and processes: the
daemon, concurrent ``fxscope check`` runs and a CLI. Payloads are JSON text, never pickle. A corrupt
database is moved aside and rebuilt with a warning; the cache never raises for corruption, and an
unusable cache degrades to misses.

Besides results it keeps what makes an unchanged check cheap, as ruff's and mypy's caches do: each
file's ``(mtime_ns, size, inode)`` with its content hash (:meth:`ResultCache.file_stats`), so an
unchanged file costs one ``stat`` and is never read again; and small JSON blobs by kind and key
(:meth:`ResultCache.get_blobs`), e.g. per-content AST summaries and the last discovery.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, TypeVar

from .hashing import hash_json


def _fcntl() -> ModuleType | None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    return fcntl


fcntl = _fcntl()

__all__ = ["DB_NAME", "SCHEMA_VERSION", "CacheHit", "CacheStats", "FileStat", "ResultCache",
           "claim_directory"]

SCHEMA_VERSION = 2
DB_NAME = "results.sqlite3"

_BUSY_TIMEOUT_S = 30.0  # SQLite waits this long for another writer's lock
_BUSY_RETRY_S = 60.0  # and we retry "database is locked" that escapes the busy handler this long
_MAX_FAILURES = 3  # non-busy errors per operation before it gives up and degrades
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 11, 26
_CORRUPT_MESSAGES = ("file is not a database", "malformed", "file is encrypted")
#: Marks a directory fxscope created (and so may fill, ignore in git and restrict); the standard
#: cache-directory tag, so backup tools skip it too.
MARKER_NAME = "CACHEDIR.TAG"
_MARKER = ("Signature: 8a477f597d28d172789f06886806bc55\n"
           "# fxscope's result cache, created by fxscope: safe to delete.\n")
SUBDIR_NAME = "fxscope"  # what fxscope owns inside a cache-dir it did not create

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE entries ("
    " target_id TEXT NOT NULL, context TEXT NOT NULL, deps_digest TEXT NOT NULL,"
    " deps TEXT NOT NULL, payload TEXT NOT NULL, created REAL NOT NULL, graphs TEXT,"
    " PRIMARY KEY (target_id, context, deps_digest))",
    "CREATE INDEX entries_by_context ON entries (context)",
    "CREATE TABLE files ("
    " scope TEXT NOT NULL, rel TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,"
    " ino INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (scope, rel))",
    "CREATE TABLE blobs ("
    " kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL,"
    " PRIMARY KEY (kind, key))",
)

#: A file's stat signature and content hash: ``(mtime_ns, size, inode, sha256 hex)``.
FileStat = tuple[int, int, int, str]

T = TypeVar("T")


@dataclass(frozen=True)
class CacheHit:
    """A cached result whose every dependency still has the hash the trace saw."""

    target_id: str
    deps: dict[str, str]
    payload: dict[str, Any]
    created: float


@dataclass(frozen=True)
class CacheStats:
    """Row counts, on-disk size, and this instance's hit/miss/store/rebuild counters."""

    path: str
    entries: int
    targets: int
    contexts: int
    size_bytes: int
    hits: int
    misses: int
    stores: int
    rebuilds: int


class ResultCache:
    """Trace results keyed by ``(target_id, context)`` and the hashes of the files they depend on.

    ``context`` is an opaque string (config fingerprint, torch and fxscope versions). Several
    entries are kept per target and context (e.g. the saved files and an unsaved buffer), the
    ``max_entries`` most recent. Thread-safe (one connection behind a lock) and process-safe.

    >>> import tempfile
    >>> from fxscope.cache.hashing import FileHasher
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "m.py").write_text("a = 1\\n")
    >>> hasher = FileHasher(root)
    >>> with ResultCache(root / ".fxscope_cache") as cache:
    ...     cache.store("m:Net", "ctx", {"m.py": hasher.hash("m.py")}, {"findings": []})
    ...     cache.lookup("m:Net", "ctx", hasher.hash).payload
    {'findings': []}
    """

    def __init__(
        self,
        directory: Path,
        on_warning: Callable[[str], None] | None = None,
        *,
        max_entries: int = 4,
    ) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self._lock_path = self.directory / "results.lock"
        self._on_warning = on_warning or logging.getLogger("fxscope.cache").warning
        self._max_entries = max(1, int(max_entries))
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._closed = False
        self._warned: set[str] = set()
        self._hits = self._misses = self._stores = self._rebuilds = 0
        self._run(lambda conn: None, None)

    # -- public API ---------------------------------------------------------------------------

    def lookup(
        self, target_id: str, context: str, current: Callable[[str], str | None], *,
        graphs: bool = True,
    ) -> CacheHit | None:
        """The newest entry whose every dep equals ``current(dep)`` (the file's hash now, None if
        gone), or None. Entries with unreadable JSON count as misses and are deleted. A payload's
        ``graphs`` (the bulk of a real model's result) are stored apart and read only when
        ``graphs`` is true."""
        return self.lookup_many([target_id], context, current, graphs=graphs).get(target_id)

    def lookup_many(
        self, target_ids: Iterable[str], context: str, current: Callable[[str], str | None], *,
        graphs: bool = True,
    ) -> dict[str, CacheHit]:
        """:meth:`lookup` for many targets: target id -> its newest valid entry (targets without
        one are absent). ``current`` is called once per distinct dependency. The dependencies of
        every entry are read first; a payload (hundreds of KB for a large model) only for the entry
        chosen, so a miss after an edit reads none."""
        wanted = set(target_ids)
        if not wanted:
            return {}
        single = next(iter(wanted)) if len(wanted) == 1 else None
        rows: list[tuple[int, str, str, str]] = self._run(
            lambda conn: conn.execute(
                "SELECT rowid, target_id, deps_digest, deps FROM entries WHERE context = ?"
                + (" AND target_id = ?" if single is not None else "")
                + " ORDER BY target_id, rowid DESC",  # newest first: rowids grow with each store
                (context,) if single is None else (context, single),
            ).fetchall(),
            [],
        )
        candidates: dict[str, list[tuple[int, str, dict[str, str] | None]]] = {}
        for rowid, target_id, digest, deps_text in rows:
            if target_id in wanted:
                candidates.setdefault(target_id, []).append((rowid, digest, _load_deps(deps_text)))
        seen: dict[str, str | None] = {}
        hits: dict[str, CacheHit] = {}
        bad: dict[str, list[tuple[str, str]]] = {}
        for target_id, entries in candidates.items():
            for rowid, digest, deps in entries:
                if deps is None:
                    bad.setdefault(target_id, []).append((digest, self._payload_text(rowid) or ""))
                    continue
                if not all(_current(current, seen, dep) == h for dep, h in deps.items()):
                    continue
                row = self._entry(rowid, target_id, context, digest, graphs)
                if row is None:
                    continue  # replaced or pruned by another process since the first query
                payload_text, created, graphs_text = row
                payload = _load_payload(payload_text, graphs_text)
                if payload is None:
                    bad.setdefault(target_id, []).append((digest, payload_text))
                    continue
                hits[target_id] = CacheHit(target_id, deps, payload, float(created))
                break
        for target_id, unreadable in bad.items():
            self._delete_rows(target_id, context, unreadable)
        with self._lock:
            self._hits += len(hits)
            self._misses += len(wanted) - len(hits)
        return hits

    def _entry(self, rowid: int, target_id: str, context: str, digest: str,
               graphs: bool) -> tuple[str, float, str | None] | None:
        """``(payload, created, graphs)`` of the entry at ``rowid`` if it is still the one the
        dependencies were read from (a row id may be reused once its row is deleted)."""
        row = self._run(
            lambda conn: conn.execute(
                "SELECT payload, created, " + ("graphs" if graphs else "NULL") + " FROM entries"
                " WHERE rowid = ? AND target_id = ? AND context = ? AND deps_digest = ?",
                (rowid, target_id, context, digest),
            ).fetchone(),
            None,
        )
        return None if row is None else (row[0], row[1], row[2])

    def _payload_text(self, rowid: int) -> str | None:
        row = self._run(lambda conn: conn.execute(
            "SELECT payload FROM entries WHERE rowid = ?", (rowid,)).fetchone(), None)
        return None if row is None else row[0]

    def store(
        self, target_id: str, context: str, deps: Mapping[str, str], payload: Mapping[str, Any]
    ) -> None:
        """Record ``payload`` for the target in ``context`` as valid while every file in ``deps``
        keeps its hash; one transaction, pruning all but the newest ``max_entries``."""
        deps = dict(deps)
        deps_text = json.dumps(deps, sort_keys=True, separators=(",", ":"))
        body = dict(payload)
        graphs = body.pop("graphs", None)
        payload_text = json.dumps(body, separators=(",", ":"))
        graphs_text = None if graphs is None else json.dumps(graphs, separators=(",", ":"))
        row = (target_id, context, hash_json(deps), deps_text, payload_text, time.time(), graphs_text)
        keep = (target_id, context, target_id, context, self._max_entries)

        def op(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)", row)
                conn.execute(
                    "DELETE FROM entries WHERE target_id = ? AND context = ? AND rowid NOT IN"
                    " (SELECT rowid FROM entries WHERE target_id = ? AND context = ?"
                    "  ORDER BY rowid DESC LIMIT ?)",
                    keep,
                )

        self._run(op, None)
        with self._lock:
            self._stores += 1

    def deps_index(self, context: str) -> dict[str, set[str]]:
        """target_id -> the union of the dep files of its entries in ``context``."""
        rows: list[tuple[str, str]] = self._run(
            lambda conn: conn.execute(
                "SELECT target_id, deps FROM entries WHERE context = ?", (context,)
            ).fetchall(),
            [],
        )
        index: dict[str, set[str]] = {}
        for target_id, deps_text in rows:
            deps = _load_deps(deps_text)
            if deps is not None:
                index.setdefault(target_id, set()).update(deps)
        return index

    def file_stats(self, scope: str) -> dict[str, FileStat]:
        """The recorded ``(mtime_ns, size, inode, digest)`` of every file of ``scope`` (a
        workspace root), keyed by root-relative path."""
        rows: list[tuple[str, int, int, int, str]] = self._run(
            lambda conn: conn.execute(
                "SELECT rel, mtime_ns, size, ino, digest FROM files WHERE scope = ?", (scope,)
            ).fetchall(),
            [],
        )
        return {rel: (int(m), int(s), int(i), str(d)) for rel, m, s, i, d in rows}

    def save_file_stats(
        self, scope: str, changed: Mapping[str, FileStat], removed: Iterable[str] = ()
    ) -> None:
        """Record ``changed`` file signatures of ``scope`` and forget ``removed`` paths."""
        rows = [(scope, rel, *stat) for rel, stat in changed.items()]
        gone = [(scope, rel) for rel in removed]
        if not rows and not gone:
            return

        def op(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", rows)
                conn.executemany("DELETE FROM files WHERE scope = ? AND rel = ?", gone)

        self._run(op, None)

    def get_blobs(self, kind: str, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """JSON values stored under ``kind`` (all of them, or those of ``keys``); unreadable
        ones are left out."""
        if keys is None:
            rows: list[tuple[str, str]] = self._run(
                lambda conn: conn.execute(
                    "SELECT key, value FROM blobs WHERE kind = ?", (kind,)).fetchall(), [])
        else:
            wanted = list(dict.fromkeys(keys))
            rows = []
            for start in range(0, len(wanted), 500):
                rows += self._run(_select_blobs(kind, wanted[start:start + 500]), [])
        out: dict[str, Any] = {}
        for key, text in rows:
            try:
                out[key] = json.loads(text)
            except (TypeError, ValueError, RecursionError):
                continue
        return out

    def put_blobs(self, kind: str, items: Mapping[str, Any], *, keep: Iterable[str] | None = None) -> None:
        """Store JSON ``items`` under ``kind``; with ``keep``, every other key of ``kind`` not in
        ``keep`` or ``items`` is deleted (pruning what the workspace no longer has)."""
        now = time.time()
        rows = [(kind, key, json.dumps(value, separators=(",", ":")), now) for key, value in items.items()]
        keep_set = None if keep is None else set(keep) | set(items)

        def op(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO blobs VALUES (?, ?, ?, ?)", rows)
                if keep_set is not None:
                    stale = [(kind, key) for (key,) in conn.execute(
                        "SELECT key FROM blobs WHERE kind = ?", (kind,)) if key not in keep_set]
                    conn.executemany("DELETE FROM blobs WHERE kind = ? AND key = ?", stale)

        if rows or keep_set is not None:
            self._run(op, None)

    def clear(self) -> None:
        """Delete every entry (the database file stays; other processes may have it open)."""

        def op(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute("DELETE FROM entries")
                conn.execute("DELETE FROM files")
                conn.execute("DELETE FROM blobs")

        self._run(op, None)

    def stats(self) -> CacheStats:
        """Row counts, size on disk (database and WAL) and this instance's counters."""
        counts: tuple[int, int, int] = self._run(
            lambda conn: conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT target_id), COUNT(DISTINCT context) FROM entries"
            ).fetchone(),
            (0, 0, 0),
        )
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(str(self.path) + suffix)
        with self._lock:
            return CacheStats(
                str(self.path), *counts, size, self._hits, self._misses, self._stores,
                self._rebuilds,
            )

    def close(self) -> None:
        """Close the database connection; further use raises ValueError."""
        with self._lock:
            self._disconnect()
            self._closed = True

    def __enter__(self) -> ResultCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- connection, retries and recovery -----------------------------------------------------

    def _run(self, op: Callable[[sqlite3.Connection], T], fallback: T) -> T:
        """Run ``op`` on the connection: retry busy errors, rebuild a corrupt database, reconnect
        after other errors; after repeated failures warn and return ``fallback``."""
        with self._lock:
            if self._closed:
                raise ValueError("operation on a closed ResultCache")
            deadline = time.monotonic() + _BUSY_RETRY_S
            delay = 0.005
            failures = 0
            while True:
                try:
                    return op(self._connection())
                except sqlite3.ProgrammingError:
                    raise
                except sqlite3.DatabaseError as exc:
                    kind = _classify(exc)
                    if kind == "busy":
                        if time.monotonic() < deadline:
                            time.sleep(delay)
                            delay = min(delay * 2, 0.25)
                            continue
                        return self._give_up(exc, fallback)
                    failures += 1
                    if failures > _MAX_FAILURES:
                        return self._give_up(exc, fallback)
                    if kind == "corrupt" or self._quick_check_fails():
                        self._recover(exc)
                    else:
                        self._disconnect()

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # forked: the parent's connection must not be used or closed
            self._conn, self._pid = None, os.getpid()
        if self._conn is not None:
            if _identity(self.path) == self._identity:
                return self._conn
            self._disconnect()  # the file was replaced or removed (e.g. rebuilt by another process)
        with contextlib.suppress(OSError):
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            _write_gitignore(self.directory)
        _private_file(self.path)
        with _file_lock(self._lock_path, exclusive=False):
            conn = sqlite3.connect(
                str(self.path),
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                self._identity = _identity(self.path)
                conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                _ensure_schema(conn)
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        return conn

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _quick_check_fails(self) -> bool:
        """Whether ``PRAGMA quick_check`` on a fresh connection finds the database corrupt."""
        self._disconnect()
        try:
            conn = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error:
            return False
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
            return rows != [("ok",)]
        except sqlite3.DatabaseError as exc:
            return _classify(exc) == "corrupt"
        finally:
            conn.close()

    def _recover(self, exc: BaseException) -> None:
        """Move the corrupt database aside (or remove it) so the next connect starts afresh."""
        self._disconnect()
        with _file_lock(self._lock_path, exclusive=True):
            if self._identity is not None and _identity(self.path) not in (None, self._identity):
                return  # another process already replaced it; reconnect to the new file
            backup = self.path.with_name(self.path.name + ".corrupt")
            try:
                os.replace(self.path, backup)
                action = f"moved it to {backup.name}"
            except FileNotFoundError:
                action = "it was already gone"
            except OSError:
                with contextlib.suppress(OSError):
                    self.path.unlink()
                action = "removed it"
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.unlink(str(self.path) + suffix)
        self._identity = None
        self._rebuilds += 1
        self._on_warning(
            f"fxscope cache {self.path} was corrupt ({exc}); {action} and started a fresh cache"
        )

    def _give_up(self, exc: BaseException, fallback: T) -> T:
        self._disconnect()
        message = f"fxscope cache {self.path} is unavailable ({exc}); continuing without it"
        if message not in self._warned:
            self._warned.add(message)
            self._on_warning(message)
        return fallback

    def _delete_rows(self, target_id: str, context: str, rows: list[tuple[str, str]]) -> None:
        def op(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.executemany(
                    "DELETE FROM entries WHERE target_id = ? AND context = ?"
                    " AND deps_digest = ? AND payload = ?",
                    [(target_id, context, digest, payload) for digest, payload in rows],
                )

        self._run(op, None)


# -- helpers ----------------------------------------------------------------------------------


def _classify(exc: sqlite3.DatabaseError) -> str:
    """``busy`` (retry), ``corrupt`` (rebuild) or ``other``."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    message = str(exc).lower()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in message:
        return "busy"
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or any(m in message for m in _CORRUPT_MESSAGES):
        return "corrupt"
    return "other"


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE (take the write lock up front) ... COMMIT, or ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def _schema_version(conn: sqlite3.Connection) -> str | None:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    if conn.execute(query).fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


def _ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the tables, or drop and recreate everything if the schema version differs."""
    if _schema_version(conn) == str(SCHEMA_VERSION):
        return
    with _transaction(conn):
        if _schema_version(conn) == str(SCHEMA_VERSION):
            return
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for (name,) in tables:
            conn.execute('DROP TABLE IF EXISTS "{}"'.format(name.replace('"', '""')))
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


@contextlib.contextmanager
def _file_lock(path: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock between processes (POSIX flock); a no-op where unavailable."""
    fd = -1
    if fcntl is not None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:
            pass
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _write_gitignore(directory: Path) -> None:
    """``*`` in the ``.gitignore`` of a directory fxscope owns, unless one is there already."""
    gitignore = directory / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("*\n")


def _private_file(path: Path) -> None:
    """Create ``path`` readable by its owner only (results hold model output; SQLite gives its
    WAL and shared-memory files the same mode), or restrict it if fxscope made it wider."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)
        finally:
            os.close(fd)


def _marked(directory: Path) -> bool:
    """Whether fxscope made ``directory`` (its tag, or a database of an older fxscope)."""
    return (directory / MARKER_NAME).is_file() or (directory / DB_NAME).is_file()


def claim_directory(directory: Path) -> Path:
    """The directory fxscope may own for a configured cache directory: ``directory`` itself when
    fxscope creates it now (atomically, with its tag) or created it before; otherwise (an existing
    directory of the user's) its ``fxscope/`` sub-directory, so nothing fxscope did not create is
    ever rewritten or chmod-ed. Where nothing can be created, ``directory`` as is.

    >>> import tempfile
    >>> mine = Path(tempfile.mkdtemp())
    >>> claim_directory(mine) == mine / SUBDIR_NAME, claim_directory(mine / "new") == mine / "new"
    (True, True)
    """
    directory = Path(directory)
    if not directory.exists() and not directory.is_symlink():
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        except OSError:
            return directory  # read-only: the cache degrades to misses
        try:
            (staging / MARKER_NAME).write_text(_MARKER)
            os.rename(staging, directory)  # fails when another process just made it
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    if not directory.is_dir() or _marked(directory):
        return directory
    owned = directory / SUBDIR_NAME
    if not owned.exists():
        with contextlib.suppress(OSError):
            owned.mkdir(mode=0o700)
            (owned / MARKER_NAME).write_text(_MARKER)
    return owned


def _select_blobs(kind: str, keys: list[str]) -> Callable[[sqlite3.Connection], list[tuple[str, str]]]:
    """The query of the blobs of ``kind`` with one of ``keys`` (at most SQLite's variable limit)."""
    marks = ",".join("?" * len(keys))

    def query(conn: sqlite3.Connection) -> list[tuple[str, str]]:
        return conn.execute(f"SELECT key, value FROM blobs WHERE kind = ? AND key IN ({marks})",
                            (kind, *keys)).fetchall()

    return query


def _load_dict(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _load_payload(text: str, graphs_text: str | None) -> dict[str, Any] | None:
    payload = _load_dict(text)
    if payload is not None and graphs_text is not None:
        try:
            payload["graphs"] = json.loads(graphs_text)
        except (TypeError, ValueError, RecursionError):
            return None
    return payload


def _load_deps(text: str) -> dict[str, str] | None:
    deps = _load_dict(text)
    if deps is None or not all(isinstance(v, str) for v in deps.values()):
        return None
    return deps


def _current(
    current: Callable[[str], str | None], seen: dict[str, str | None], dep: str
) -> str | None:
    if dep not in seen:
        seen[dep] = current(dep)
    return seen[dep]
