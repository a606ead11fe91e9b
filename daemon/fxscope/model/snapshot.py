"""An immutable view of the open editor buffers: their texts, versions and a generation number.

Background work receives a :class:`Snapshot` as an argument; nothing below the session stores
buffer state. A newer snapshot has a larger ``generation``.

>>> s = Snapshot.of({"/ws/m.py": "x = 1\\n"}, {"/ws/m.py": 3}, generation=7)
>>> s.text("/ws/m.py"), s.version("/ws/m.py"), s.generation
('x = 1\\n', 3, 7)
>>> s.texts["/ws/m.py"] = "changed"
Traceback (most recent call last):
...
TypeError: 'mappingproxy' object does not support item assignment
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["EMPTY_SNAPSHOT", "Snapshot"]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """``texts`` and ``versions`` of the open buffers keyed by absolute path (``str``)."""

    generation: int = 0
    texts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    versions: Mapping[str, int | None] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, texts: Mapping[str, str], versions: Mapping[str, int | None] | None = None, *,
           generation: int = 0) -> Snapshot:
        """A snapshot holding copies of ``texts`` and ``versions``."""
        return cls(generation, MappingProxyType(dict(texts)), MappingProxyType(dict(versions or {})))

    def text(self, path: str) -> str | None:
        """The buffer text of ``path``, or None when it is not open."""
        return self.texts.get(path)

    def version(self, path: str) -> int | None:
        """The document version of ``path``, or None."""
        return self.versions.get(path)

    def __bool__(self) -> bool:
        return bool(self.texts)


#: No open buffer.
EMPTY_SNAPSHOT = Snapshot()
