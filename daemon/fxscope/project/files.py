"""Which files belong to the workspace, their root-relative names and their import names.

Patterns follow gitignore conventions: a pattern without ``/`` matches a file or directory name at
any depth (``.venv``, ``*.egg-info``, ``*.py``); a pattern with ``/`` is anchored at the root and
``**`` spans any number of directories (``tests/**/fixtures``, ``**/*.py``). The workspace's files
are its included ``.py`` files and Jupyter notebooks (``.ipynb``); its Markdown files that are not
excluded (``README.md``, ``docs/**/*.md``) and its YAML configs are listed too when asked for, read only for the
constructions they show (code blocks, model mappings).
Excluded directories are pruned during the walk, so a large ``.venv`` costs nothing.

>>> from fxscope.project.config import Config
>>> config = Config(root=Path("/ws"), python_path=(Path("/ws"), Path("/ws/src")))
>>> module_name_for(config, Path("/ws/src/pkg/__init__.py")), relpath(config, Path("/ws/src/pkg/m.py"))
('pkg', 'src/pkg/m.py')
"""

from __future__ import annotations

import functools
import keyword
import os
import re
import time
from pathlib import Path
from typing import Callable

from .config import Config

__all__ = ["ABSENT", "EXAMPLE_SUFFIXES", "RACY_NS", "is_example", "is_included", "is_racy", "is_under", "module_name_for", "relpath",
           "rooted_name", "script_module_name", "split_rooted", "workspace_files", "workspace_rels"]

#: Workspace files fxscope imports: Python modules and Jupyter notebooks.
_SOURCE_SUFFIXES = (".py", ".ipynb")
#: Files read only for the constructions they show: README and docs Markdown, YAML configs.
EXAMPLE_SUFFIXES = (".md", ".yaml", ".yml")

#: A file modified this recently may change again within the same timestamp tick without its
#: (mtime, size, inode) changing, so a cache keyed by that signature must not trust it yet
#: ("racy" files, as git calls them).
RACY_NS = 2_000_000_000


#: The digest a dependency is recorded with when it must stay missing (a module that was not
#: found: the files that would have provided it); a cached result holds while they are absent.
ABSENT = "absent"


def is_under(file: str, rel: str) -> bool:
    """Whether the root-relative ``file`` is ``rel`` or inside the directory ``rel`` (``""`` and
    ``"."`` are the root).

    >>> is_under("pkg/a.py", "pkg"), is_under("pkg2/a.py", "pkg"), is_under("a.py", "."), is_under("a.py", "a.py")
    (True, False, True, True)
    """
    return rel in ("", ".") or file == rel or file.startswith(rel.rstrip("/") + "/")


def is_racy(mtime_ns: int, now_ns: int | None = None) -> bool:
    """True when a file with this mtime is too recent for its stat signature to be trusted.

    >>> is_racy(time.time_ns()), is_racy(time.time_ns() - 3 * RACY_NS)
    (True, False)
    """
    return (time.time_ns() if now_ns is None else now_ns) - mtime_ns < RACY_NS


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> tuple[bool, re.Pattern[str]]:
    """(anchored, regex) for one glob pattern; unanchored patterns match a single path part."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/")
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    out = []
    segments = pattern.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment_regex(segment))
        if not last:
            out.append("/")
    return anchored, re.compile("".join(out) + r"\Z")


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\").replace("/", "") + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=64)
def _combined(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """One regex for the anchored patterns (matched against the path) and one for the others
    (matched against the last part): a large tree is walked with two matches per entry."""
    anchored = [_compile(p)[1].pattern for p in patterns if _compile(p)[0]]
    names = [_compile(p)[1].pattern for p in patterns if not _compile(p)[0]]

    def join(parts: list[str]) -> re.Pattern[str] | None:
        return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None

    return join(anchored), join(names)


def _matches(patterns: tuple[str, ...], rel: str) -> bool:
    anchored, names = _combined(patterns)
    if names is not None and names.match(rel.rsplit("/", 1)[-1]):
        return True
    return anchored is not None and anchored.match(rel) is not None


def _dir_excluded(config: Config, rel_dir: str) -> bool:
    if _matches(config.exclude, rel_dir):
        return True
    # ``a/**`` excludes everything below ``a``, so ``a`` itself can be pruned.
    below = tuple("/" + p.rstrip("/")[:-3] for p in config.exclude if p.rstrip("/").endswith("/**"))
    return bool(below) and _matches(below, rel_dir)


def _file_wanted(config: Config, rel: str, examples: bool = False) -> bool:
    if rel.endswith(EXAMPLE_SUFFIXES):
        return examples and not _matches(config.exclude, rel)
    return (
        rel.endswith(_SOURCE_SUFFIXES)
        and not _matches(config.exclude, rel)
        and _matches(config.include, rel)
    )


def workspace_files(config: Config, *, examples: bool = False) -> list[Path]:
    """Every included ``.py`` and ``.ipynb`` file under ``config.root`` (and, with ``examples``,
    every Markdown and YAML file not excluded), sorted, absolute."""
    root = str(config.root)
    return [Path(root, rel) for rel in workspace_rels(config, examples=examples)]


def workspace_rels(config: Config, *, examples: bool = False) -> list[str]:
    """Every included ``.py`` and ``.ipynb`` file under ``config.root`` (and, with ``examples``,
    every Markdown and YAML file not excluded) as a sorted root-relative posix path."""
    root = str(config.root)
    real_root = os.path.realpath(root)
    found: list[str] = []
    todo = [""]
    while todo:
        prefix = todo.pop()
        try:
            entries = list(os.scandir(os.path.join(root, prefix) if prefix else root))
        except OSError:
            continue
        for entry in entries:
            if not _utf8(entry.name):  # no report, editor or module name can carry it: skipped
                continue
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)  # as os.walk: links not followed
            except OSError:
                continue
            if is_dir:
                if not _dir_excluded(config, rel):
                    todo.append(rel + "/")
            elif entry.name.endswith((*_SOURCE_SUFFIXES, *EXAMPLE_SUFFIXES)) and _file_wanted(config, rel, examples):
                if entry.is_symlink() and not _inside(real_root, entry.path):
                    continue  # a link out of the workspace: never imported nor traced
                found.append(rel)
    found.sort()
    return found


def _utf8(name: str) -> bool:
    """Whether a file name decoded by ``os`` is valid UTF-8 (not surrogate-escaped bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _inside(real_root: str, path: str) -> bool:
    """Whether ``path``'s real path (links resolved) is ``real_root`` or below it."""
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def relpath(config: Config, path: Path | str) -> str:
    """``path`` relative to the root with ``/`` separators; absolute (posix) when outside it."""
    text = os.path.normpath(os.path.join(config.root, path))
    root = str(config.root)
    if text.startswith(root) and text[len(root) : len(root) + 1] == os.sep:  # the common case
        return text[len(root) + 1 :].replace(os.sep, "/")
    try:
        return _resolved(Path(text)).relative_to(_resolved(config.root)).as_posix()
    except ValueError:
        return Path(text).as_posix()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def is_included(config: Config, path: Path | str) -> bool:
    """Whether ``path`` (absolute or root-relative; need not exist) is a workspace file."""
    rel = relpath(config, path)
    if rel.startswith("/") or rel.startswith("../") or rel in ("", "."):
        return False
    parts = rel.split("/")
    for index in range(1, len(parts)):
        if _dir_excluded(config, "/".join(parts[:index])):
            return False
    return _file_wanted(config, rel)


def is_example(config: Config, path: Path | str) -> bool:
    """Whether ``path`` is a workspace Markdown or YAML file read for the constructions it shows."""
    rel = relpath(config, path)
    if not rel.endswith(EXAMPLE_SUFFIXES) or rel.startswith("/") or rel.startswith("../"):
        return False
    parts = rel.split("/")
    if any(_dir_excluded(config, "/".join(parts[:i])) for i in range(1, len(parts))):
        return False
    return _file_wanted(config, rel, examples=True)


def module_name_for(config: Config, path: Path | str) -> str | None:
    """Dotted import name of ``path`` through the longest ``python_path`` entry containing it.

    ``src/pkg/m.py`` -> ``pkg.m``, ``pkg/__init__.py`` -> ``pkg``; ``None`` when the file is under
    no entry or a part of its path is not an identifier.
    """
    path = Path(path)
    if not path.is_absolute():
        path = config.root / path
    path = Path(os.path.normpath(path))
    best: tuple[str, ...] | None = None
    for entry in config.python_path:
        try:
            parts = path.relative_to(entry).parts
        except ValueError:
            continue
        if best is None or len(parts) < len(best):
            best = parts
    return None if best is None else dotted_module_name(best)


def dotted_module_name(parts: tuple[str, ...] | list[str]) -> str | None:
    """``("pkg", "m.py")`` -> ``"pkg.m"``; ``None`` for non-``.py`` files or non-identifier parts."""
    if not parts or not parts[-1].endswith(".py"):
        return None
    names = list(parts[:-1]) + [parts[-1][:-3]]
    if names[-1] == "__init__":
        names.pop()
    if not names or not all(_identifier(n) for n in names):
        return None
    return ".".join(names)


def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


#: Between a file's import root and its module name in discovery's names of such files: ``//``
#: is in no root-relative path, and ``/`` in no module name.
_ROOT_SEP = "//"


def rooted_name(root: str, module: str) -> str:
    """Discovery's name of module ``module`` imported from the directory ``root``, distinct from
    the same name elsewhere (``mixtral-moe/model.py`` is ``model`` beside a top-level ``model.py``).

    >>> rooted_name("mixtral-moe", "model"), split_rooted("mixtral-moe//model"), split_rooted("pkg.model")
    ('mixtral-moe//model', ('mixtral-moe', 'model'), ('', 'pkg.model'))
    """
    return f"{root}{_ROOT_SEP}{module}"


def split_rooted(name: str) -> tuple[str, str]:
    """(import root, module name) of a name :func:`rooted_name` made; ``("", name)`` for any other."""
    root, sep, module = name.partition(_ROOT_SEP)
    return (root, module) if sep else ("", name)


def script_module_name(parts: tuple[str, ...] | list[str], is_package: Callable[[str], bool]) -> tuple[str, str] | None:
    """(import root, module name) of a ``.py`` file whose path (``parts``, relative to a
    ``python_path`` entry) has a part that is not an identifier (``mixtral-moe/model.py``), as
    Python imports it when a script of its nearest script directory runs: the root is the
    nearest directory above it that is not a package (``is_package(dir)``: it holds an
    ``__init__.py``) or whose name is not an identifier, and the name is the rest of the path.
    ``None`` when the file cannot be imported by name from any directory.

    >>> packages = {"runs-2/pkg"}.__contains__
    >>> script_module_name(["mixtral-moe", "model.py"], packages)
    ('mixtral-moe', 'model')
    >>> script_module_name(["runs-2", "pkg", "layers.py"], packages), script_module_name(["a-b", "x-y.py"], packages)
    (('runs-2', 'pkg.layers'), None)
    """
    start = len(parts) - 1
    while start > 0 and _identifier(parts[start - 1]) and is_package("/".join(parts[:start])):
        start -= 1
    name = dotted_module_name(parts[start:]) if start > 0 else None
    return None if name is None else ("/".join(parts[:start]), name)
