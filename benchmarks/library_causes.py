"""How many diagnostics a repository opens with, before and after grouping failures inside
installed libraries by cause, and after applying the known libraries' settings in one step.

Runs the real ``fxscope check REPO --format json --fail-on never`` (a subprocess, its own cache
directory) and prints, from its report:

- before grouping: every place the report names (each finding and each of its ``sites``), which
  is what the editor showed one diagnostic for, by severity;
- after grouping: the findings listed, one per library cause and file (what the editor and the
  text report show now), by severity, and how many were library failures;
- files outside the workspace a diagnostic is attributed to (0 by design);
- the largest library causes: library file and line, how many lines of how many files reach it,
  and the fix its hint recommends;
- with ``--apply-settings``: the same repository copied to a temporary directory, the settings of
  every known library it imports (``fxscope.report.libraries``) added to its pyproject.toml as the
  editor's one-step action does, checked again: the errors that remain.

Usage: python benchmarks/library_causes.py REPO [--cache-dir DIR] [--apply-settings]

A cold check of a repository with hundreds of classes takes minutes on a 2-core machine; the
second run of the same cache directory is answered from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "daemon"))

from fxscope.lsp.config_edits import with_entries  # noqa: E402
from fxscope.model import Finding  # noqa: E402
from fxscope.project.config import load_config  # noqa: E402
from fxscope.project.discovery import discover  # noqa: E402
from fxscope.report.causes import recommended_setting, site_count, ungroup  # noqa: E402
from fxscope.report.libraries import settings_for  # noqa: E402


def check(repo: Path, cache: Path) -> tuple[dict[str, Any], float]:
    """The JSON report of a check of ``repo`` and its wall time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "daemon") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", str(repo), "--root", str(repo), "--format",
                           "json", "--fail-on", "never", "--cache-dir", str(cache)],
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if proc.returncode != 0 or not proc.stdout:
        raise SystemExit(f"fxscope check failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), wall


def by_severity(findings: list[Finding]) -> str:
    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info", "hint") if counts[s])


def summarise(doc: dict[str, Any], wall: float) -> None:
    listed = [Finding.from_json(f) for f in doc["findings"]]
    places = ungroup(listed)
    library = [f for f in listed if f.origin is not None]
    outside = [f for f in listed if f.primary.outside]
    print(f"  targets: {doc['summary']['targets']}  check wall time: {wall:.1f} s")
    print(f"  before grouping: {site_count(listed)} diagnostics ({by_severity(places)})")
    print(f"  after grouping:  {len(listed)} diagnostics ({by_severity(listed)}); "
          f"{len(library)} of them library causes standing for {site_count(library)} places")
    print(f"  diagnostics attributed to files outside the workspace: {len(outside)}")
    causes: Counter[tuple[str, int, str]] = Counter()
    files: dict[tuple[str, int, str], set[str]] = {}
    for f in places:
        origin = f.origin
        if origin is None:
            continue
        key = (origin.file.rsplit("site-packages/", 1)[-1], origin.line, _fix(f))
        causes[key] += 1
        files.setdefault(key, set()).add(f.primary.file)
    for (file, line, fix), n in causes.most_common(6):
        print(f"    {n:4d} places in {len(files[(file, line, fix)]):3d} files: {file}:{line}  fix: {fix}")


def _fix(f: Finding) -> str:
    found = recommended_setting(f.hint)
    return f"{found[0]} = [\"{found[1]}\"]" if found else "(none named)"


def apply_settings(repo: Path, into: Path) -> list[str]:
    """Copy ``repo`` to ``into`` and add the settings of every known library it imports to its
    pyproject.toml; the libraries configured."""
    shutil.copytree(repo, into, ignore=shutil.ignore_patterns(".git", ".fxscope_cache", "__pycache__"))
    libraries = discover(load_config(into)).libraries
    pyproject = into / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else None
    done = []
    for name in libraries:
        settings = settings_for(name)
        updated = with_entries(text, settings.entries()) if settings is not None else None
        if updated is not None:
            text = updated
            done.append(name)
    if text is not None:
        pyproject.write_text(text, encoding="utf-8")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path)
    parser.add_argument("--cache-dir", type=Path, help="cache directory (default: a fresh temporary one)")
    parser.add_argument("--apply-settings", action="store_true",
                        help="also check a copy with the known libraries' settings applied")
    args = parser.parse_args()
    repo = args.repo.resolve()
    with tempfile.TemporaryDirectory(prefix="fxscope-causes-") as tmp:
        cache = args.cache_dir.resolve() if args.cache_dir else Path(tmp) / "cache"
        print(f"{repo.name}, no configuration added:")
        summarise(*check(repo, cache))
        if args.apply_settings:
            copy = Path(tmp) / repo.name
            done = apply_settings(repo, copy)
            print(f"{repo.name} with the settings of {', '.join(done) or 'no known library'} applied:")
            summarise(*check(copy, Path(tmp) / "cache-settings"))


if __name__ == "__main__":
    main()
