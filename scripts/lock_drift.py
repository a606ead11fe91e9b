"""Print the installed packages whose version differs from the lock (for `make test-latest`).

    python scripts/lock_drift.py requirements/test.lock

A failure in `make test-latest` is read next to this list: the packages that moved since the lock
was made are the first suspects.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock: Path) -> dict[str, str]:
    """The `name==version` pins of a pip-compile lock file, by normalised name."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[_normal(match.group(1))] = match.group(2)
    return pins


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    pins = locked_versions(Path(argv[1]))
    moved: list[tuple[str, str, str]] = []
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        if name in pins and pins[name] != dist.version:
            moved.append((name, pins[name], dist.version))
    if not moved:
        print("lock drift: every locked package is at its locked version")
        return 0
    print(f"lock drift: {len(moved)} package(s) differ from {argv[1]}:")
    for name, locked, installed in sorted(moved):
        print(f"  {name}: locked {locked}, installed {installed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
