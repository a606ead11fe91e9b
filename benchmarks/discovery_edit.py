"""Discovery after an edit on a zero-config workspace: how long re-discovering the targets and their
build candidates takes when one file changes, on a repository with hundreds of classes.

Discovery runs on every edit the language server debounces (the targets an edit affects, and how
each class is built, come from it). The script discovers the repository once (cold), then applies
edits through editor overlays (nothing is written to the repository), one at a time, each to a
different model file, and times the re-discovery:

- ``body``: a line inserted into a method body (every line below it moves);
- ``default``: a constructor's int default changed (``depth = 6`` to ``7``: the workspace's values
  for that parameter name change);
- ``binding``: a module-level name bound to a plain value, added at the end of a file;
- ``import``: an import added at the top of a file (what names resolve to may change everywhere);
- ``same``: the file saved unchanged (what a save or a reopen costs).

It prints the cold time, then per edit kind the median and maximum of the re-discovery times, and
how many targets and candidates the last discovery gave (the same figures on any version, so two
versions can be compared by running the script with each on ``PYTHONPATH``).

Usage: python benchmarks/discovery_edit.py REPO [--edits 12]
       (REPO: a checkout, e.g. of lucidrains/vit-pytorch or pytorch/examples; it is only read)
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

from fxscope.project.config import load_config
from fxscope.project.discovery import discover


def model_files(root: Path, count: int) -> list[Path]:
    """Files that define ``nn.Module`` classes, spread over the repository."""
    found = sorted(p for p in root.rglob("*.py")
                   if ".git" not in p.parts and re.search(r"^class \w+\((nn\.)?Module\)", p.read_text(errors="replace"),
                                                          re.MULTILINE))
    step = max(1, len(found) // max(count, 1))
    return found[::step][:count]


def edited(text: str, kind: str, n: int) -> str:
    """``text`` with one edit of ``kind`` (see the module docstring)."""
    if kind == "same":
        return text
    if kind == "import":
        return f"import math as _fxscope_bench_{n}\n" + text
    if kind == "binding":
        return text + f"\n\n_fxscope_bench_{n} = {n}\n"
    if kind == "default":
        init = re.search(r"def __init__\(([^)]*)\)", text)
        default = re.search(r"=\s*(\d+)", init.group(1)) if init else None
        if init is not None and default is not None:
            at = init.start(1) + default.start(1)
            return text[:at] + str(int(default.group(1)) + 1 + n) + text[at + len(default.group(1)):]
    match = re.search(r"^([ \t]+)def forward\(self[^\n]*:[ \t]*\n", text, re.MULTILINE)
    if match is None:
        return text.replace("\n", f"\n# edit {n}\n", 1)
    indent = match.group(1) * 2
    return text[:match.end()] + f"{indent}_ = {n}  # edit\n" + text[match.end():]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--edits", type=int, default=12, help="edits per kind")
    args = parser.parse_args(argv)
    config = load_config(args.repo.resolve())
    start = time.perf_counter()
    result = discover(config)
    cold = time.perf_counter() - start
    classes = sum(t.kind == "class" for t in result.targets)
    print(f"{args.repo.name}: {len(result.files)} files, {classes} class targets, cold discovery {cold:.3f} s")
    files = model_files(config.root, args.edits)
    for kind in ("body", "default", "binding", "import", "same"):
        times = []
        for n, path in enumerate(files):
            overlay = {path: edited(path.read_text(errors="replace"), kind, n)}
            start = time.perf_counter()
            result = discover(config, overlays=overlay)
            times.append(time.perf_counter() - start)
            discover(config)  # the edit undone (as a revert would), outside the timing
        candidates = sum(len(t.recipes) for t in result.targets)
        print(f"  edit {kind:7}: re-discovery median {statistics.median(times) * 1000:7.1f} ms, "
              f"max {max(times) * 1000:7.1f} ms over {len(times)} edits ({candidates} candidates)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
