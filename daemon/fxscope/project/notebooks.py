"""Jupyter notebooks (nbformat 4) read as one Python module made of their code cells, in order.

A notebook's *code* is its Python code cells joined one after the other; its lines are numbered
from 1 across the cells (the "virtual" lines every layer below the front ends uses), and a
:class:`CellIndex` (``Notebook.index``; also kept in a file's discovery summary and in the language
server's view of an open notebook) maps them to and from a cell and a line inside it: the one
mapper every layer uses. Cells are numbered from 1 over all cells of the notebook (Markdown ones too), as a reader
counts them. IPython syntax is neutralised without moving anything: a line magic or shell escape
(``%matplotlib inline``, ``!pip install x``, ``obj?``) becomes ``pass`` at its indentation, an
assignment from one (``files = !ls``) becomes ``files = None``, and a cell magic cell whose body is
not Python (``%%bash``) becomes blank lines; those lines are :attr:`Notebook.magic_lines`. Each
cell is parsed on its own (a cell that does not parse is left out, as Jupyter runs the others).

>>> nb = read_notebook(make_notebook(["# A title", ("code", "import torch\\n%matplotlib inline\\nx = 1"),
...                                   ("code", "!pip install einops\\ny = x")]))
>>> nb.code.splitlines()
['import torch', 'pass', 'x = 1', 'pass', 'y = x']
>>> nb.locate(4), nb.line_of(3, 2), sorted(nb.magic_lines)
((3, 1), 5, [2, 4])
>>> Notebook.from_cells([("markdown", "# A title"), ("code", "import torch")]).index.locate(1)
(2, 1)
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
import warnings
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = ["CellIndex", "CellSource", "CodeCell", "Notebook", "NotebookError", "NotebookTree", "is_notebook",
           "make_notebook", "neutralise", "notebook_tree", "raw_position", "raw_positions", "read_notebook"]

#: Cell magics whose body is Python (ruff keeps the same ones): the magic line is neutralised and
#: the body is code. Any other cell magic (``%%bash``, ``%%writefile``, ``%%html``) is not Python.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy", "python", "python3"})

#: Notebooks larger than this are not read (a notebook with megabytes of outputs is still fine).
MAX_NOTEBOOK_BYTES = 64 << 20

_NEWLINE = re.compile(r"\r\n|\r|\n")
_HELP = re.compile(r"\s*(\?{1,2})?[A-Za-z_][\w.]*(\?{1,2})?\s*")
_MAGIC_ASSIGNMENT = re.compile(r"(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")


#: A cell as :func:`make_notebook` and :meth:`Notebook.from_cells` take it: a string is a
#: Markdown cell, ``(kind, text)`` a cell of that kind (``code``, ``markdown``, ``raw``).
Cell = Union[str, tuple[str, str]]


class NotebookError(ValueError):
    """A file that is not a readable nbformat 4 notebook (the message says why)."""


def is_notebook(path: object) -> bool:
    """Whether a workspace path is a Jupyter notebook (``.ipynb``).

    >>> is_notebook("nb/model.ipynb"), is_notebook("model.py")
    (True, False)
    """
    return str(path).endswith(".ipynb")


@dataclass(frozen=True)
class CodeCell:
    """One Python code cell: its ``number`` among all cells (1-based), the virtual line of its
    first line, its lines as written and as neutralised (same count), and its nbformat id."""

    number: int
    first_line: int
    lines: tuple[str, ...]
    code: tuple[str, ...]
    id: str | None = None

    @property
    def last_line(self) -> int:
        """The virtual line of its last line (``first_line - 1`` for an empty cell)."""
        return self.first_line + len(self.lines) - 1


@dataclass(frozen=True)
class CellIndex:
    """Where a notebook's code lines are in its cells: ``spans`` are (first code line, cell
    number, line count) of each non-empty code cell, in order of first line.

    >>> index = CellIndex(((1, 2, 3), (4, 5, 1)))
    >>> index.locate(4), index.locate(2), index.locate(5), index.line_of(2, 3), index.line_of(5, 2)
    ((5, 1), (2, 2), None, 3, None)
    """

    spans: tuple[tuple[int, int, int], ...] = ()

    def __len__(self) -> int:
        """How many cells it maps (none for a file that is not a notebook)."""
        return len(self.spans)

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell number, 1-based line in the cell) of code ``line``; None outside every cell."""
        i = bisect_right(self.spans, line, key=lambda span: span[0]) - 1
        if i < 0:
            return None
        first, number, count = self.spans[i]
        return (number, line - first + 1) if line < first + count else None

    def cell_at(self, line: int) -> int | None:
        """The number of the cell holding code ``line``."""
        found = self.locate(line)
        return found[0] if found is not None else None

    def span(self, cell: int) -> tuple[int, int] | None:
        """(first, last) code line of cell ``cell``; None for a cell with no code lines."""
        found = next((s for s in self.spans if s[1] == cell), None)
        return (found[0], found[0] + found[2] - 1) if found is not None else None

    def line_of(self, cell: int, line: int) -> int | None:
        """The code line of 1-based ``line`` of cell ``cell``; None when the cell has no such line."""
        found = self.span(cell)
        if found is None or not 1 <= line <= found[1] - found[0] + 1:
            return None
        return found[0] + line - 1

    def lines(self) -> Iterator[tuple[int, int, int]]:
        """(code line, cell number, line in the cell) of every code line, in order."""
        for first, number, count in self.spans:
            for i in range(count):
                yield first + i, number, i + 1

    def to_json(self) -> list[list[int]]:
        """A JSON-able list; :meth:`from_json` inverts it."""
        return [list(span) for span in self.spans]

    @classmethod
    def from_json(cls, data: Iterable[Sequence[int]]) -> CellIndex:
        """Rebuild an index from :meth:`to_json` output."""
        return cls(tuple((int(first), int(number), int(count)) for first, number, count in data))


@dataclass(frozen=True)
class Notebook:
    """A notebook's Python code cells (see the module docstring); ``cell_count`` counts every cell."""

    cells: tuple[CodeCell, ...]
    cell_count: int
    magic_lines: frozenset[int] = frozenset()

    @classmethod
    def from_cells(cls, cells: Sequence[Cell]) -> Notebook:
        """The notebook made of ``cells`` (as :func:`make_notebook` takes them: a string is a
        Markdown cell, ``(kind, text)`` a cell of that kind), without writing or reading JSON:
        what the language server makes of the cells an editor has open.

        >>> nb = Notebook.from_cells(["# Title", ("code", "a = 1\\nb = 2"), ("code", "c = 3")])
        >>> nb.index.spans, nb.text
        (((1, 2, 2), (3, 3, 1)), 'a = 1\\nb = 2\\nc = 3\\n')
        """
        code = [(number, split_lines(cell[1]), None) for number, cell in enumerate(cells, 1)
                if not isinstance(cell, str) and cell[0] == "code"]
        return _build(code, len(cells))

    @property
    def code(self) -> str:
        """The module's source: every code cell's neutralised lines, in order."""
        return "".join(line + "\n" for cell in self.cells for line in cell.code)

    @property
    def text(self) -> str:
        """The same lines as written (magics included): what snippets and suppressions read."""
        return "".join(line + "\n" for cell in self.cells for line in cell.lines)

    @property
    def index(self) -> CellIndex:
        """The code line <-> cell mapper of this notebook."""
        return CellIndex(tuple((c.first_line, c.number, len(c.lines)) for c in self.cells if c.lines))

    def cell(self, number: int) -> CodeCell | None:
        """The code cell with this ``number`` (None for a Markdown cell or no cell)."""
        for cell in self.cells:
            if cell.number == number:
                return cell
        return None

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell number, 1-based line in the cell) of a virtual ``line``; None past the end."""
        return self.index.locate(line)

    def line_of(self, cell_number: int, line: int) -> int | None:
        """The virtual line of ``line`` (1-based) of cell ``cell_number``; None when the cell has
        no such line."""
        return self.index.line_of(cell_number, line)


def split_lines(text: str) -> list[str]:
    """Lines as Python numbers them, without a trailing empty one.

    >>> split_lines("a\\r\\nb\\n"), split_lines("")
    (['a', 'b'], [])
    """
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _source(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return "".join(value)
    raise NotebookError("a cell's source is neither a string nor a list of strings")


def _is_python(language: Any) -> bool:
    return not isinstance(language, str) or language.strip().lower() in ("", "python", "python3", "ipython",
                                                                          "ipython3")


def _notebook_language(metadata: Any) -> Any:
    if not isinstance(metadata, dict):
        return None
    info = metadata.get("language_info")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"]
    spec = metadata.get("kernelspec")
    if isinstance(spec, dict) and isinstance(spec.get("language"), str):
        return spec["language"]
    return None


def _cell_language(cell: dict[str, Any]) -> Any:
    """A code cell's own language, when the editor recorded one (VS Code: ``metadata.vscode.languageId``)."""
    metadata = cell.get("metadata")
    vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
    return vscode.get("languageId") if isinstance(vscode, dict) else None


def read_notebook(data: bytes | str) -> Notebook:
    """The Python code of an nbformat 4 notebook (bytes or text of the ``.ipynb`` file); raises
    :class:`NotebookError` when it is not one. A notebook whose kernel is not Python has no code."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"the notebook is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise NotebookError(f"not a notebook: invalid JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        if isinstance(doc, dict) and "worksheets" in doc:
            raise NotebookError("nbformat 3 notebooks are not supported (convert it: jupyter nbconvert --to notebook)")
        raise NotebookError("not a notebook: no list of cells")
    major = doc.get("nbformat", 4)
    if major != 4:
        raise NotebookError(f"nbformat {major} notebooks are not supported (nbformat 4 is)")
    python = _is_python(_notebook_language(doc.get("metadata")))
    cells: list[tuple[int, list[str], str | None]] = []
    for number, cell in enumerate(doc["cells"], 1):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {number} is not an object")
        if cell.get("cell_type") != "code" or not python or not _is_python(_cell_language(cell)):
            continue
        cell_id = cell.get("id")
        lines = split_lines(_source(cell.get("source", "")))
        cells.append((number, lines, cell_id if isinstance(cell_id, str) else None))
    return _build(cells, len(doc["cells"]))


def _build(cells: Iterable[tuple[int, list[str], str | None]], count: int) -> Notebook:
    out: list[CodeCell] = []
    magic: set[int] = set()
    line = 1
    for number, lines, cell_id in cells:
        code, magics = neutralise(lines)
        out.append(CodeCell(number, line, tuple(lines), tuple(code), cell_id))
        magic.update(line + i for i in magics)
        line += len(lines)
    return Notebook(tuple(out), count, frozenset(magic))


def make_notebook(cells: Sequence[Cell], *, language: str = "python", ids: bool = True) -> str:
    """The JSON text of an nbformat 4.5 notebook with ``cells``: a string is a Markdown cell,
    ``(kind, text)`` a cell of that kind (``code``, ``markdown``, ``raw``). What the language
    server makes of a notebook an editor has open, and what tests write.

    >>> read_notebook(make_notebook([("code", "x = 1")])).code
    'x = 1\\n'
    """
    body = []
    for i, cell in enumerate(cells):
        kind, text = ("markdown", cell) if isinstance(cell, str) else cell
        item: dict[str, Any] = {"cell_type": kind}
        if ids:
            item["id"] = f"cell-{i}"
        item["metadata"] = {}
        item["source"] = text.splitlines(keepends=True)  # as Jupyter writes it: one string per line
        if kind == "code":
            item.update(execution_count=None, outputs=[])
        body.append(item)
    doc = {"cells": body, "metadata": {"language_info": {"name": language}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# IPython syntax


def _starts_statement(previous: Sequence[str]) -> bool:
    """Whether the line after ``previous`` starts a new logical line (not inside brackets, a
    string or a backslash continuation)."""
    if not previous:
        return True
    text = "".join(line + "\n" for line in previous)
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except tokenize.TokenError:
        return False
    except (IndentationError, SyntaxError):
        return True
    return True


def _is_magic(line: str) -> bool:
    stripped = line.lstrip()
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!" and not stripped.startswith("!="):
        return True
    if stripped.startswith("?"):
        return True
    return "?" in stripped and _HELP.fullmatch(line) is not None


def neutralise(lines: Sequence[str]) -> tuple[list[str], list[int]]:
    """The cell's lines with IPython syntax replaced (see the module docstring) and the 0-based
    indexes of the lines replaced.

    >>> neutralise(["for i in range(2):", "    !echo $i", "x = %time f()", "y = (a", "% b)"])
    (['for i in range(2):', '    pass', 'x = None', 'y = (a', '% b)'], [1, 2])
    >>> neutralise(["%%bash", "ls -l"])
    (['', ''], [0, 1])
    """
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(None, 1)[0] if lines[first].strip() != "%%" else ""
        if name not in PYTHON_CELL_MAGICS:
            return ["" for _ in lines], list(range(len(lines)))
        out = list(lines)
        out[first] = ""
        return out, [first]
    out, replaced = [], []
    continued = False
    for i, line in enumerate(lines):
        if continued:  # a magic's backslash continuation
            out.append("")
            replaced.append(i)
            continued = line.rstrip().endswith("\\")
            continue
        if _is_magic(line) and _starts_statement(out):
            indent = line[: len(line) - len(line.lstrip())]
            assign = _MAGIC_ASSIGNMENT.match(line)
            out.append(f"{assign.group(1)}{assign.group(2)} = None" if assign else f"{indent}pass")
            replaced.append(i)
            continued = line.rstrip().endswith("\\")
            continue
        if _MAGIC_ASSIGNMENT.match(line) and _starts_statement(out):
            assign = _MAGIC_ASSIGNMENT.match(line)
            assert assign is not None
            out.append(f"{assign.group(1)}{assign.group(2)} = None")
            replaced.append(i)
            continued = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return out, replaced


# ---------------------------------------------------------------------------------------------
# the module


@dataclass(frozen=True)
class NotebookTree:
    """The module the code cells make: the statements of every cell that parses (line numbers are
    virtual lines), a (virtual line, column, message) per cell that does not, and the module's
    source (the code with the lines of those cells blank: what tracebacks and ``inspect`` read)."""

    tree: ast.Module
    errors: tuple[tuple[int, int, str], ...] = field(default=())
    source: str = ""


def notebook_tree(nb: Notebook) -> NotebookTree:
    """Parse each code cell on its own and join their statements into one module."""
    body: list[ast.stmt] = []
    errors: list[tuple[int, int, str]] = []
    lines: list[str] = []
    for cell in nb.cells:
        if not cell.code:
            continue
        source = "".join(line + "\n" for line in cell.code)
        lines.extend([""] * len(cell.code))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except SyntaxError as exc:
            line = min(max(exc.lineno or 1, 1), len(cell.code))
            errors.append((cell.first_line + line - 1, max(exc.offset or 1, 1), exc.msg or str(exc)))
            continue
        except (ValueError, RecursionError, MemoryError) as exc:
            errors.append((cell.first_line, 1, str(exc) or type(exc).__name__))
            continue
        ast.increment_lineno(tree, cell.first_line - 1)
        body.extend(tree.body)
        lines[len(lines) - len(cell.code):] = cell.code
    return NotebookTree(ast.Module(body=body, type_ignores=[]), tuple(errors), "".join(f"{line}\n" for line in lines))


# ---------------------------------------------------------------------------------------------
# positions in the .ipynb file itself (SARIF, GitHub annotations)


@dataclass(frozen=True)
class CellSource:
    """Where one cell's source sits in the ``.ipynb`` text: each JSON string of its ``source``
    as (offset of its opening quote, decoded text)."""

    pieces: tuple[tuple[int, str], ...]


class _Scanner:
    """A JSON reader that records where the strings of each cell's ``source`` are."""

    _NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
    _SPACE = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str) -> None:
        self.text = text
        self.cells: dict[int, CellSource] = {}
        self._decoder = json.JSONDecoder()

    def read_string(self, quote: int) -> tuple[str, int]:
        """The JSON string whose opening quote is at ``quote`` and the offset after it."""
        value, end = self._decoder.raw_decode(self.text, quote)
        if not isinstance(value, str):
            raise NotebookError(f"invalid JSON at offset {quote}")
        return value, end

    def space(self, i: int) -> int:
        match = self._SPACE.match(self.text, i)
        return match.end() if match else i

    def value(self, i: int, path: tuple[Any, ...]) -> int:
        i = self.space(i)
        char = self.text[i:i + 1]
        if char == "{":
            return self.obj(i + 1, path)
        if char == "[":
            return self.array(i + 1, path)
        if char == '"':
            decoded, end = self.read_string(i)
            self.string(i, decoded, path)
            return end
        for word in ("true", "false", "null"):
            if self.text.startswith(word, i):
                return i + len(word)
        match = self._NUMBER.match(self.text, i)
        if match is None or match.end() == i:
            raise NotebookError(f"invalid JSON at offset {i}")
        return match.end()

    def obj(self, i: int, path: tuple[Any, ...]) -> int:
        i = self.space(i)
        if self.text.startswith("}", i):
            return i + 1
        while True:
            i = self.space(i)
            if not self.text.startswith('"', i):
                raise NotebookError(f"invalid JSON at offset {i}")
            key, i = self.read_string(i)
            i = self.space(i)
            if not self.text.startswith(":", i):
                raise NotebookError(f"invalid JSON at offset {i}")
            i = self.value(i + 1, (*path, key))
            i = self.space(i)
            if self.text.startswith(",", i):
                i += 1
            elif self.text.startswith("}", i):
                return i + 1
            else:
                raise NotebookError(f"invalid JSON at offset {i}")

    def array(self, i: int, path: tuple[Any, ...]) -> int:
        i = self.space(i)
        if self.text.startswith("]", i):
            return i + 1
        index = 0
        while True:
            i = self.value(i, (*path, index))
            index += 1
            i = self.space(i)
            if self.text.startswith(",", i):
                i += 1
            elif self.text.startswith("]", i):
                return i + 1
            else:
                raise NotebookError(f"invalid JSON at offset {i}")

    def string(self, start: int, decoded: str, path: tuple[Any, ...]) -> None:
        if len(path) >= 3 and path[0] == "cells" and isinstance(path[1], int) and path[2] == "source":
            if len(path) == 3 or (len(path) == 4 and isinstance(path[3], int)):
                number = path[1] + 1
                old = self.cells.get(number, CellSource(()))
                self.cells[number] = CellSource((*old.pieces, (start, decoded)))


def raw_positions(text: str) -> dict[int, CellSource]:
    """Cell number -> where its source strings are in the ``.ipynb`` ``text``."""
    scanner = _Scanner(text)
    try:
        scanner.value(0, ())
    except (ValueError, RecursionError, IndexError) as e:
        raise NotebookError(str(e)) from None
    return scanner.cells


def _raw_offset(text: str, quote: int, index: int) -> int:
    """Offset in ``text`` of decoded character ``index`` of the JSON string opening at ``quote``."""
    i = quote + 1
    for _ in range(index):
        if text[i] == "\\":
            if text[i + 1] == "u":
                code = int(text[i + 2:i + 6], 16)
                i += 6
                if 0xD800 <= code < 0xDC00 and text.startswith("\\u", i):
                    i += 6  # a surrogate pair is one character
            else:
                i += 2
        else:
            i += 1
    return i


def raw_position(text: str, sources: dict[int, CellSource], cell: int, line: int,
                 column: int | None) -> tuple[int, int] | None:
    """(1-based line, 1-based code-point column) in the ``.ipynb`` ``text`` of ``line`` and
    ``column`` of ``cell`` (column 1 when None); None when the cell has no such line.

    >>> text = make_notebook([("code", "x = 1\\nif y:\\n    z")])
    >>> raw_position(text, raw_positions(text), 1, 2, 4)
    (9, 9)
    >>> text.splitlines()[8][8:10]
    'y:'
    """
    found = sources.get(cell)
    if found is None:
        return None
    target_line, target_col = line, (column or 1)
    current_line, current_col = 1, 1
    for quote, decoded in found.pieces:
        for index, char in enumerate(decoded):
            if current_line == target_line and current_col == target_col:
                return _line_col(text, _raw_offset(text, quote, index))
            if char == "\n" or (char == "\r" and not decoded.startswith("\n", index + 1)):
                if current_line == target_line:  # a column past the end of the line: its end
                    return _line_col(text, _raw_offset(text, quote, index))
                current_line, current_col = current_line + 1, 1
            elif char != "\r":
                current_col += 1
    if current_line == target_line and found.pieces:  # the last line, at or past its end
        quote, decoded = found.pieces[-1]
        return _line_col(text, _raw_offset(text, quote, len(decoded)))
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1
