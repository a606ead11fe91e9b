"""Which files of a source tree fxscope takes for scripts (their top level would start work), and
what judging it costs.

For each ROOT (a repository, or an installed package's directory under site-packages) it prints
the number of ``.py`` files, how many the rule of ``fxscope.project.work`` takes for scripts
(judged as the worker judges them: the functions a file imports from the same tree are read), the
reasons grouped, a few examples, and the time per file (parsing excluded: every file is parsed
first, as the worker parses a file once for importing it and for judging its importers). Installed libraries
are a stress test of the other direction: they are imported by everyone, so every module taken
for a script there is a module whose own setup calls the rule would not run.

Usage: python benchmarks/script_rule.py ROOT [ROOT ...] [--examples 5]
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import time
from pathlib import Path

from fxscope.project.work import Modules, script_reason

SKIPPED_DIRS = {".git", ".venv", "venv", "site-packages", "node_modules", "__pycache__", "tests", "test", "_vendor"}


def measure(root: Path, examples: int) -> None:
    """Print the figures of one tree: the package's own absolute imports count as its own code."""
    base = root.parent if (root / "__init__.py").is_file() else root
    package = root.name if base is not root else None

    def find(name: str) -> str | None:
        target = base.joinpath(*name.split("."))
        found = [c for c in (target / "__init__.py", target.with_suffix(".py")) if c.is_file()]
        return str(found[0]) if found else None

    def own(level: int, module: str) -> bool:
        return level > 0 or find(module.partition(".")[0]) is not None

    modules = Modules(find, lambda path: Path(path).read_bytes(), own)
    files = [p for p in sorted(root.rglob("*.py")) if not SKIPPED_DIRS & set(p.relative_to(root).parts[:-1])]
    scripts: list[tuple[str, int, str]] = []
    seconds: list[float] = []
    trees = {}
    for path in files:  # parsed first: the figures are the judging alone
        try:
            trees[path] = modules.tree(str(path), path.read_bytes())
        except (SyntaxError, ValueError):
            continue
    for path, tree in trees.items():
        rel = path.relative_to(base).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if package is None and not name:
            continue
        start = time.perf_counter()
        found = script_reason(tree, top=modules.toplevel(tree, name, path.name == "__init__.py"))
        seconds.append(time.perf_counter() - start)
        if found is not None:
            scripts.append((str(path.relative_to(base)), found.line, found.reason))
    reasons = collections.Counter(re.sub(r"`[^`]*`", "`...`", reason) for _, _, reason in scripts)
    print(f"{root}: {len(scripts)} of {len(seconds)} files are scripts; "
          f"judging: median {statistics.median(seconds or [0]) * 1000:.2f} ms, "
          f"max {max(seconds or [0]) * 1000:.0f} ms, total {sum(seconds) * 1000:.0f} ms per file set")
    for reason, count in reasons.most_common():
        print(f"    {count:5d}  {reason}")
    for file, line, reason in scripts[:examples]:
        print(f"    e.g. {file}:{line}: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--examples", type=int, default=5)
    args = parser.parse_args()
    for root in args.roots:
        measure(root.resolve(), args.examples)


if __name__ == "__main__":
    main()
