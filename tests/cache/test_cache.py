"""fxscope.cache: file hashing, the SQLite result store, corruption recovery, concurrency."""

from __future__ import annotations

import doctest
import json
import logging
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fxscope.cache import FileHasher, ResultCache, hash_bytes, hash_json, hash_text
from fxscope.cache import hashing as hashing_module
from fxscope.cache import store as store_module

DAEMON = Path(__file__).resolve().parents[2] / "daemon"
H1, H2, H3 = "1" * 64, "2" * 64, "3" * 64


def _future_mtime(path: Path) -> None:
    """Stamp ``path`` a minute ahead: "modified just now" for the racy-file rule however long the
    test takes to reach its next stat (a stalled machine cannot age it past two seconds)."""
    stamp = time.time_ns() + 60 * 10**9
    os.utime(path, ns=(stamp, stamp))


def _garbage(n: int) -> bytes:
    """``n`` bytes of noise, the same in every run (a failure reproduces)."""
    return random.Random(n).randbytes(n)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DAEMON), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def warnings_seen() -> list[str]:
    return []


@pytest.fixture
def cache(tmp_path: Path, warnings_seen: list[str]) -> Iterator[ResultCache]:
    with ResultCache(tmp_path / "cache", warnings_seen.append) as c:
        yield c


def _fill(directory: Path, n: int = 300) -> None:
    with ResultCache(directory) as c:
        for i in range(n):
            c.store(f"t{i}", "ctx", {f"f{i}.py": H1}, {"i": i, "pad": "x" * 200})


# -- hashing ----------------------------------------------------------------------------------


def test_hash_helpers() -> None:
    assert hash_text("é") == hash_bytes("é".encode())
    assert hash_json({"b": [1, 2], "a": None}) == hash_json({"a": None, "b": [1, 2]})
    assert hash_json({"a": 1}) != hash_json({"a": 2})


def test_file_hasher_memoises_by_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "pkg" / "m.py"
    f.parent.mkdir()
    f.write_text("a = 1\n")
    os.utime(f, ns=(10**18, 10**18))  # old enough not to be "racy"
    hasher = FileHasher(tmp_path)
    assert hasher.hash("pkg/m.py") == hash_text("a = 1\n")

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unchanged file was read again")

    monkeypatch.setattr(hashing_module, "open", no_open, raising=False)
    assert hasher.hash("pkg/m.py") == hash_text("a = 1\n")
    monkeypatch.undo()

    f.write_text("a = 2\n")  # same size, new mtime
    assert hasher.hash("pkg/m.py") == hash_text("a = 2\n")
    f.unlink()
    assert hasher.hash("pkg/m.py") is None
    assert hasher.hash("pkg") is None  # a directory
    assert hasher.hash("missing.py") is None


def test_file_hasher_recent_file_not_trusted_by_stat(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    _future_mtime(f)
    hasher = FileHasher(tmp_path)
    assert hasher.hash("m.py") == hash_text("a = 1\n")
    st = f.stat()
    f.write_text("a = 9\n")  # same size; force the same mtime: only content tells them apart
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert hasher.hash("m.py") == hash_text("a = 9\n")


def test_file_hasher_overlays(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("disk\n")
    hasher = FileHasher(tmp_path)
    overlays = {"m.py": hash_text("buffer\n"), "new.py": hash_text("unsaved file\n")}
    assert hasher.hash("m.py", overlays) == hash_text("buffer\n")
    assert hasher.hash("new.py", overlays) == hash_text("unsaved file\n")
    # the overlays are an argument, never hasher state: without them the disk counts
    assert hasher.hash("m.py") == hash_text("disk\n")
    assert hasher.hash("new.py") is None
    assert hasher.hash("m.py", overlays) == hash_text("buffer\n")


def test_file_hasher_invalidate(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    os.utime(f, ns=(10**18, 10**18))
    hasher = FileHasher(tmp_path)
    hasher.hash("m.py")
    f.write_text("a = 2\n")
    os.utime(f, ns=(10**18, 10**18))  # an edit invisible to stat
    assert hasher.hash("m.py") == hash_text("a = 1\n")
    hasher.invalidate("m.py")
    assert hasher.hash("m.py") == hash_text("a = 2\n")


def test_docstring_examples() -> None:
    for module in (hashing_module, store_module):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0


# -- the store --------------------------------------------------------------------------------


def test_directory_setup(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b"
    with ResultCache(directory):
        pass
    assert (directory / ".gitignore").read_text() == "*\n"
    conn = sqlite3.connect(directory / "results.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_hit_and_miss_on_dep_change(tmp_path: Path, cache: ResultCache) -> None:
    (tmp_path / "m.py").write_text("a = 1\n")
    hasher = FileHasher(tmp_path)
    deps = {"m.py": hasher.hash("m.py")}
    assert cache.lookup("m:Net", "ctx", hasher.hash) is None
    cache.store("m:Net", "ctx", deps, {"findings": [{"code": "FXS101", "line": 3}]})

    hit = cache.lookup("m:Net", "ctx", hasher.hash)
    assert hit is not None
    assert hit.deps == deps and hit.payload == {"findings": [{"code": "FXS101", "line": 3}]}
    assert cache.lookup("m:Net", "other-context", hasher.hash) is None
    assert cache.lookup("m:Other", "ctx", hasher.hash) is None

    (tmp_path / "m.py").write_text("a = 22\n")
    assert cache.lookup("m:Net", "ctx", hasher.hash) is None
    (tmp_path / "m.py").unlink()
    assert cache.lookup("m:Net", "ctx", hasher.hash) is None
    stats = cache.stats()
    assert (stats.hits, stats.stores, stats.entries, stats.targets) == (1, 1, 1, 1)
    assert stats.misses == 5 and stats.size_bytes > 0


def test_overlay_state_is_its_own_entry(tmp_path: Path, cache: ResultCache) -> None:
    (tmp_path / "m.py").write_text("saved\n")
    hasher = FileHasher(tmp_path)
    cache.store("t", "ctx", {"m.py": hasher.hash("m.py")}, {"state": "saved"})
    overlays = {"m.py": hash_text("unsaved\n")}

    def buffered(rel: str) -> str | None:
        return hasher.hash(rel, overlays)

    assert cache.lookup("t", "ctx", buffered) is None
    cache.store("t", "ctx", {"m.py": buffered("m.py")}, {"state": "unsaved"})
    assert cache.lookup("t", "ctx", buffered).payload == {"state": "unsaved"}
    # buffer closed without saving: the saved result is back
    assert cache.lookup("t", "ctx", hasher.hash).payload == {"state": "saved"}


def test_newest_matching_entry_wins(cache: ResultCache) -> None:
    cache.store("t", "ctx", {"a.py": H1}, {"n": 1})
    cache.store("t", "ctx", {"a.py": H1, "b.py": H2}, {"n": 2})
    files = {"a.py": H1, "b.py": H2}
    assert cache.lookup("t", "ctx", files.get).payload == {"n": 2}
    files["b.py"] = H3
    assert cache.lookup("t", "ctx", files.get).payload == {"n": 1}
    cache.store("t", "ctx", {"a.py": H1}, {"n": 3})  # same deps: replaces, becomes newest
    files["b.py"] = H2
    assert cache.lookup("t", "ctx", files.get).payload == {"n": 3}
    assert cache.stats().entries == 2


def test_newest_is_the_last_stored_even_if_the_clock_stepped_back(
        cache: ResultCache, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([2000.0, 1000.0, 500.0])  # the wall clock steps back between stores
    monkeypatch.setattr(store_module.time, "time", lambda: next(clock))
    cache.store("t", "ctx", {"a.py": H1}, {"n": 1})
    cache.store("t", "ctx", {"a.py": H1, "b.py": H2}, {"n": 2})
    assert cache.lookup("t", "ctx", {"a.py": H1, "b.py": H2}.get).payload == {"n": 2}
    cache.store("t", "ctx", {"a.py": H1}, {"n": 3})
    assert cache.lookup("t", "ctx", {"a.py": H1, "b.py": H2}.get).payload == {"n": 3}


def test_pruning_keeps_most_recent(tmp_path: Path) -> None:
    with ResultCache(tmp_path, max_entries=4) as cache:
        for i in range(7):
            cache.store("t", "ctx", {"a.py": f"{i:064d}"}, {"n": i})
        cache.store("u", "ctx", {"a.py": H1}, {"n": "u"})
        cache.store("t", "ctx2", {"a.py": H1}, {"n": "ctx2"})
        assert cache.stats().entries == 6
        for i in range(7):
            hit = cache.lookup("t", "ctx", {"a.py": f"{i:064d}"}.get)
            assert (hit is not None) == (i >= 3)
        assert cache.lookup("u", "ctx", {"a.py": H1}.get).payload == {"n": "u"}


def test_deps_index_and_clear(cache: ResultCache) -> None:
    cache.store("t", "ctx", {"a.py": H1}, {})
    cache.store("t", "ctx", {"a.py": H2, "b.py": H1}, {})
    cache.store("u", "ctx", {"c.py": H1}, {})
    cache.store("v", "other", {"d.py": H1}, {})
    assert cache.deps_index("ctx") == {"t": {"a.py", "b.py"}, "u": {"c.py"}}
    cache.clear()
    assert cache.deps_index("ctx") == {} and cache.stats().entries == 0


def test_closed_cache_refuses_use(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    cache.close()
    cache.close()
    with pytest.raises(ValueError):
        cache.lookup("t", "ctx", lambda f: None)


def test_payload_corruption_is_a_miss(cache: ResultCache, warnings_seen: list[str]) -> None:
    cache.store("t", "ctx", {"a.py": H1}, {"n": "old"})
    cache.store("t", "ctx", {"a.py": H1, "b.py": H2}, {"n": "new"})
    conn = sqlite3.connect(cache.path)
    with conn:
        conn.execute("UPDATE entries SET payload = '{not json' WHERE payload LIKE '%new%'")
    conn.close()
    files = {"a.py": H1, "b.py": H2}
    assert cache.lookup("t", "ctx", files.get).payload == {"n": "old"}  # falls back to older one
    assert cache.stats().entries == 1  # the bad row was deleted
    conn = sqlite3.connect(cache.path)
    with conn:
        conn.execute("UPDATE entries SET payload = '[1, 2]', deps = 'garbage'")
    conn.close()
    assert cache.lookup("t", "ctx", files.get) is None
    assert cache.deps_index("ctx") == {}
    assert cache.stats().entries == 0
    assert warnings_seen == []


def test_schema_mismatch_rebuilds(tmp_path: Path, warnings_seen: list[str]) -> None:
    with ResultCache(tmp_path) as cache:
        cache.store("t", "ctx", {}, {"n": 1})
    conn = sqlite3.connect(tmp_path / "results.sqlite3")
    with conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.close()
    with ResultCache(tmp_path, warnings_seen.append) as cache:
        assert cache.lookup("t", "ctx", lambda f: None) is None
        cache.store("t", "ctx", {}, {"n": 2})
        assert cache.lookup("t", "ctx", lambda f: None).payload == {"n": 2}
    assert warnings_seen == []


# -- corruption -------------------------------------------------------------------------------


def _assert_works(cache: ResultCache) -> None:
    cache.store("fresh", "ctx", {"a.py": H1}, {"ok": True})
    assert cache.lookup("fresh", "ctx", {"a.py": H1}.get).payload == {"ok": True}
    conn = sqlite3.connect(cache.path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty-header"])
def test_corrupt_file_is_rebuilt_with_warning(tmp_path: Path, damage: str) -> None:
    _fill(tmp_path)
    db = tmp_path / "results.sqlite3"
    data = db.read_bytes()
    if damage == "truncate":
        db.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        db.write_bytes(_garbage(len(data)))
    else:
        db.write_bytes(b"\0" * 100 + data[100:])
    seen: list[str] = []
    with ResultCache(tmp_path, seen.append) as cache:
        assert cache.lookup("t299", "ctx", {"f299.py": H1}.get) is None
        cache.deps_index("ctx")
        assert len(seen) == 1 and "corrupt" in seen[0] and str(db) in seen[0]
        assert cache.stats().rebuilds == 1
        _assert_works(cache)
    assert (tmp_path / "results.sqlite3.corrupt").exists()


def test_corruption_found_during_lookup(tmp_path: Path, warnings_seen: list[str]) -> None:
    _fill(tmp_path)
    with ResultCache(tmp_path, warnings_seen.append) as cache:
        assert warnings_seen == []  # the schema page is intact, so opening succeeds
        db = tmp_path / "results.sqlite3"
        page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
        with open(db, "r+b") as fh:  # keep page 1 (schema), ruin the rest
            fh.seek(page)
            fh.write(_garbage(os.path.getsize(db) - page))
        assert cache.lookup("t150", "ctx", {"f150.py": H1}.get) is None
        assert len(warnings_seen) == 1 and "corrupt" in warnings_seen[0]
        _assert_works(cache)


def test_corruption_found_during_store(tmp_path: Path, warnings_seen: list[str]) -> None:
    _fill(tmp_path)
    with ResultCache(tmp_path, warnings_seen.append) as cache:
        db = tmp_path / "results.sqlite3"
        with open(db, "r+b") as fh:
            fh.seek(4096)
            fh.write(b"\xff" * (os.path.getsize(db) - 4096))
        cache.store("t150", "ctx", {"f150.py": H2}, {"i": "new"})
        assert len(warnings_seen) == 1
        assert cache.lookup("t150", "ctx", {"f150.py": H2}.get).payload == {"i": "new"}


def test_file_replaced_under_open_cache(tmp_path: Path, warnings_seen: list[str]) -> None:
    with ResultCache(tmp_path, warnings_seen.append) as cache:
        cache.store("t", "ctx", {}, {"n": 1})
        db = tmp_path / "results.sqlite3"
        replacement = tmp_path / "garbage"
        replacement.write_bytes(b"this is not sqlite" * 1000)
        os.replace(replacement, db)
        for suffix in ("-wal", "-shm"):
            os.unlink(str(db) + suffix)
        cache.store("t", "ctx", {}, {"n": 2})
        assert cache.lookup("t", "ctx", lambda f: None).payload == {"n": 2}
        assert len(warnings_seen) == 1
        _assert_works(cache)


def test_rebuild_by_another_instance_is_followed(tmp_path: Path) -> None:
    _fill(tmp_path)
    seen_a: list[str] = []
    seen_b: list[str] = []
    with ResultCache(tmp_path, seen_a.append) as a, ResultCache(tmp_path, seen_b.append) as b:
        assert a.lookup("t1", "ctx", {"f1.py": H1}.get) is not None
        db = tmp_path / "results.sqlite3"
        with open(db, "r+b") as fh:
            fh.seek(4096)
            fh.write(b"\xff" * (os.path.getsize(db) - 4096))
        assert b.lookup("t150", "ctx", {"f150.py": H1}.get) is None
        assert len(seen_b) == 1
        b.store("after", "ctx", {}, {"from": "b"})
        assert a.lookup("after", "ctx", lambda f: None).payload == {"from": "b"}
        a.store("after-a", "ctx", {}, {"from": "a"})
        assert b.lookup("after-a", "ctx", lambda f: None).payload == {"from": "a"}
        assert seen_a == [] and a.stats().rebuilds == 0
        _assert_works(a)


def test_default_warning_goes_to_logging(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "results.sqlite3").write_bytes(b"garbage" * 100)
    with caplog.at_level(logging.WARNING, logger="fxscope.cache"):
        with ResultCache(tmp_path) as cache:
            _assert_works(cache)
    assert [r.name for r in caplog.records] == ["fxscope.cache"]
    assert "corrupt" in caplog.records[0].getMessage()


def test_unusable_directory_degrades_to_misses(tmp_path: Path, warnings_seen: list[str]) -> None:
    (tmp_path / "results.sqlite3").mkdir()  # cannot be opened as a database at all
    with ResultCache(tmp_path, warnings_seen.append) as cache:
        cache.store("t", "ctx", {}, {})
        assert cache.lookup("t", "ctx", lambda f: None) is None
        assert cache.deps_index("ctx") == {}
    assert len(warnings_seen) == 1 and "unavailable" in warnings_seen[0]


# -- concurrency ------------------------------------------------------------------------------


def test_threads_share_one_cache(cache: ResultCache) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                cache.store(f"t{n}-{i}", "ctx", {"a.py": H1}, {"n": n, "i": i})
                hit = cache.lookup(f"t{n}-{i}", "ctx", {"a.py": H1}.get)
                assert hit is not None and hit.payload == {"n": n, "i": i}
                cache.deps_index("ctx")
        except BaseException as exc:  # noqa: BLE001  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.stats().entries == 240


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from fxscope.cache import ResultCache
    n, count = int(sys.argv[1]), int(sys.argv[2])
    warnings = []
    with ResultCache(Path(sys.argv[3]), warnings.append) as cache:
        for i in range(count):
            deps = {"a.py": f"{i:064d}", "w.py": f"{n:064d}"}
            cache.store(f"w{n}-{i}", "ctx", deps, {"n": n, "i": i})
            cache.store("shared", "ctx", deps, {"n": n, "i": i})
            assert cache.lookup(f"w{n}-{i}", "ctx", deps.get).payload == {"n": n, "i": i}
    assert not warnings, warnings
    """
)


def test_concurrent_processes(tmp_path: Path) -> None:
    directory = tmp_path / "cache"  # does not exist yet: schema creation races too
    writers, count = 4, 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(n), str(count), str(directory)],
            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in range(writers)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    conn = sqlite3.connect(directory / "results.sqlite3")
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with ResultCache(directory) as cache:
        for n in range(writers):
            for i in range(count):
                deps = {"a.py": f"{i:064d}", "w.py": f"{n:064d}"}
                assert cache.lookup(f"w{n}-{i}", "ctx", deps.get).payload == {"n": n, "i": i}
        assert cache.stats().entries == writers * count + 4  # "shared" pruned to 4
        assert cache.stats().rebuilds == 0


def test_no_torch_import(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from fxscope.cache import FileHasher, ResultCache
        root = Path(sys.argv[1])
        (root / "m.py").write_text("x = 1")
        hasher = FileHasher(root)
        with ResultCache(root / "cache") as cache:
            cache.store("t", "ctx", {"m.py": hasher.hash("m.py")}, {"ok": 1})
            assert cache.lookup("t", "ctx", hasher.hash).payload == {"ok": 1}
            cache.deps_index("ctx")
        assert "torch" not in sys.modules, "torch was imported"
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("fxscope"))))
        """
    ).replace("import sys", "import json, sys", 1)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env=_env(), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    assert "fxscope.cache.store" in loaded
    assert all(m == "fxscope" or m.startswith("fxscope.cache") for m in loaded), loaded


def test_cache_directory_removed_while_open(tmp_path: Path, warnings_seen: list[str]) -> None:
    import shutil

    directory = tmp_path / "cache"
    with ResultCache(directory, warnings_seen.append) as cache:
        cache.store("t", "ctx", {}, {"n": 1})
        shutil.rmtree(directory)  # e.g. the user deleted it to "clear the cache"
        assert cache.lookup("t", "ctx", lambda f: None) is None
        _assert_works(cache)
    assert (directory / ".gitignore").is_file()
    assert warnings_seen == []


# -- what an unchanged check reuses -----------------------------------------------------------


def test_lookup_many_matches_lookup(tmp_path: Path, cache: ResultCache) -> None:
    current = {"a.py": H1, "b.py": H2}
    cache.store("t1", "ctx", {"a.py": H1}, {"v": 1})
    cache.store("t1", "ctx", {"a.py": H3}, {"v": "stale"})
    cache.store("t2", "ctx", {"a.py": H1, "b.py": H2}, {"v": 2})
    cache.store("t3", "ctx", {"b.py": H3}, {"v": 3})
    cache.store("t4", "other", {"a.py": H1}, {"v": 4})
    calls: list[str] = []

    def now(rel: str) -> str | None:
        calls.append(rel)
        return current.get(rel)

    hits = cache.lookup_many(["t1", "t2", "t3", "t4", "t5"], "ctx", now)
    assert {k: h.payload for k, h in hits.items()} == {"t1": {"v": 1}, "t2": {"v": 2}}
    assert sorted(calls) == ["a.py", "b.py"]  # each dependency looked at once
    for target in ("t1", "t2", "t3", "t4"):
        one = cache.lookup(target, "ctx", current.get)
        assert (one.payload if one else None) == (hits[target].payload if target in hits else None)


def test_graphs_are_read_only_when_asked(cache: ResultCache) -> None:
    graphs = [{"module": "", "nodes": [{"name": "x", "op": "placeholder"}]}]
    cache.store("t", "ctx", {"m.py": H1}, {"status": "traced", "graphs": graphs})
    assert cache.lookup("t", "ctx", {"m.py": H1}.get).payload["graphs"] == graphs
    assert "graphs" not in cache.lookup("t", "ctx", {"m.py": H1}.get, graphs=False).payload
    assert cache.lookup_many(["t"], "ctx", {"m.py": H1}.get)["t"].payload["graphs"] == graphs
    assert cache.lookup_many(["t"], "ctx", {"m.py": H1}.get, graphs=False)["t"].payload == {
        "status": "traced"}


def test_file_stats_and_blobs_persist(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    with ResultCache(directory) as c:
        c.save_file_stats("/ws", {"a.py": (1, 2, 3, H1), "b.py": (4, 5, 6, H2)})
        c.save_file_stats("/other", {"a.py": (7, 8, 9, H3)})
        c.save_file_stats("/ws", {"a.py": (10, 2, 3, H3)}, removed=["b.py"])
        c.put_blobs("summary", {"k1": {"x": 1}, "k2": [1, 2]})
    with ResultCache(directory) as c:  # another process
        assert c.file_stats("/ws") == {"a.py": (10, 2, 3, H3)}
        assert c.file_stats("/other") == {"a.py": (7, 8, 9, H3)}
        assert c.get_blobs("summary") == {"k1": {"x": 1}, "k2": [1, 2]}
        assert c.get_blobs("summary", ["k2", "missing"]) == {"k2": [1, 2]}
        c.put_blobs("summary", {"k3": "v"}, keep=["k1"])  # k2 is no longer wanted
        assert c.get_blobs("summary") == {"k1": {"x": 1}, "k3": "v"}
        c.clear()
        assert c.file_stats("/ws") == {} and c.get_blobs("summary") == {}


def test_file_hasher_seeded_signatures_skip_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    old = 1_600_000_000 * 10**9
    os.utime(f, ns=(old, old))
    first = FileHasher(tmp_path)
    digest = first.hash("m.py")
    entries = first.memo_entries()
    assert entries["m.py"][3] == digest

    second = FileHasher(tmp_path)  # a later process, seeded from the persisted signatures
    second.seed(entries)
    reads: list[str] = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: reads.append(str(p)) or real_open(p, *a, **k))
    assert second.hash("m.py") == digest and reads == []
    f.write_text("a = 2\n")  # a new mtime: read again
    _future_mtime(f)
    assert second.hash("m.py") == hash_text("a = 2\n") and reads == [str(f)]
    assert "m.py" not in second.memo_entries()  # modified just now: not trusted yet
