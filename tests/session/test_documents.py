"""The document store: the only place versions live; every change that alters the text which
counts for a file makes a new snapshot, and says whether it did."""

from __future__ import annotations

from pathlib import Path

from fxscope.session.documents import DocumentStore


def test_open_change_save_close(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    key = str(path)
    docs = DocumentStore()
    opened = docs.open(key, 1, "x = 1\n")
    assert opened.files == () and opened.snapshot.generation == 1  # the disk text: nothing to re-run
    assert (docs.version(key), docs.text(key), docs.paths()) == (1, "x = 1\n", [key])
    changed = docs.change(key, 2, "x = 2\n")
    assert changed.files == (key,) and changed.snapshot.version(key) == 2 and changed.snapshot.text(key) == "x = 2\n"
    assert docs.change(key, 3, "x = 2\n").files == ()  # a new version of the same text
    assert docs.save(key, None).files == () and docs.save(key, "x = 3\n").files == (key,)
    assert docs.version(key) == 3 and docs.text(key) == "x = 3\n"
    closed = docs.close(key)
    assert closed.files == (key,)  # the disk text differs from the buffer: it counts again
    assert not docs.is_open(key) and docs.version(key) is None and closed.snapshot.texts == {}
    assert docs.close(key).files == ()


def test_snapshots_are_immutable_and_generations_grow(tmp_path: Path) -> None:
    docs = DocumentStore()
    key = str(tmp_path / "new.py")  # not on disk: opening it changes what counts
    first = docs.open(key, 1, "a\n")
    assert first.files == (key,)
    docs.change(key, 2, "b\n")
    assert first.snapshot.text(key) == "a\n"  # an earlier snapshot keeps its texts
    later = docs.next_generation()
    assert later.generation == 3 and later.text(key) == "b\n" and later.version(key) == 2
