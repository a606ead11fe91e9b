"""Quick-fix text edits as pure functions of the text (no LSP, no workspace).

Every function returns :class:`Edit` values in store coordinates (1-based lines, 1-based
code-point columns, end exclusive) or ``None`` when the fix does not apply; ``code_actions``
turns them into LSP edits in the negotiated encoding. :func:`apply` applies them, for tests
and for checking an edit before offering it.

>>> text = "n = len(x)\\n"
>>> apply(text, [replace_len(text, 1, 5, 1, 11)])
'n = x.size(0)\\n'
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from fxscope.report.filters import SUPPRESSION

__all__ = ["Edit", "append_text", "apply", "suppress", "replace_len", "replace_int_shape", "add_to_config_list",
           "module_name", "enclosing_function"]


@dataclass(frozen=True)
class Edit:
    """Replace ``[line:column, end_line:end_column)`` with ``new_text`` (1-based code points)."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


def _lines(text: str) -> list[str]:
    return text.split("\n")


def apply(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied (positions refer to the original text).

    >>> apply("ab\\ncd", [Edit(2, 1, 2, 2, "X"), Edit(1, 3, 1, 3, "!")])
    'ab!\\nXd'
    """
    lines = _lines(text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(line: int, column: int) -> int:
        if line > len(lines):
            return len(text)
        return min(offsets[line - 1] + column - 1, offsets[line] - 1 if line < len(lines) else len(text))

    out = text
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start, end = offset(e.line, e.column), offset(e.end_line, e.end_column)
        out = out[:start] + e.new_text + out[end:]
    return out


def _end_of_line(lines: list[str], line: int) -> int:
    return len(lines[line - 1].rstrip("\r")) + 1


def suppress(text: str, line: int, code: str) -> Edit | None:
    """Add ``# fxscope: ignore[CODE]`` to ``line`` (or add CODE to the line's existing list).

    >>> t = "if x.any():  # fxscope: ignore[FXS103]"
    >>> apply(t, [suppress(t, 1, "FXS101")])
    'if x.any():  # fxscope: ignore[FXS103, FXS101]'
    >>> apply("y = 1", [suppress("y = 1", 1, "FXS104")])
    'y = 1  # fxscope: ignore[FXS104]'
    """
    lines = _lines(text)
    if not 1 <= line <= len(lines):
        return None
    content = lines[line - 1].rstrip("\r")
    m = SUPPRESSION.search(content)
    if m is None:
        end = len(content) + 1
        stripped = content.rstrip()
        return Edit(line, len(stripped) + 1, line, end, f"{'  ' if stripped else ''}# fxscope: ignore[{code}]")
    if m.group("list") is None:  # a bare `# fxscope: ignore` already covers every code
        return None
    codes = [c.strip() for c in m.group("codes").split(",") if c.strip()]
    if code.upper() in (c.upper() for c in codes):
        return None
    new = "[" + ", ".join([*codes, code]) + "]"
    start = m.start("list") + 1 + (len(m.group("list")) - len(m.group("list").lstrip()))
    return Edit(line, start, line, m.end("list") + 1, new)


def _segment(text: str, line: int, column: int, end_line: int, end_column: int) -> str | None:
    lines = _lines(text)
    if not (1 <= line <= end_line <= len(lines)):
        return None
    if line == end_line:
        return lines[line - 1][column - 1:end_column - 1]
    parts = [lines[line - 1][column - 1:], *lines[line:end_line - 1], lines[end_line - 1][:end_column - 1]]
    return "\n".join(parts)


def _call(source: str, name: str) -> ast.Call | None:
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)):
        return node
    return None


def _expr_text(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source.strip(), node) or ast.unparse(node)
    if not isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        text = f"({text})"
    return text


def replace_len(text: str, line: int, column: int, end_line: int, end_column: int) -> Edit | None:
    """``len(x)`` in the given range -> ``x.size(0)`` (recorded in the graph).

    >>> t = "if len(x.shape) == 2:"
    >>> apply(t, [replace_len(t, 1, 4, 1, 16)])
    'if x.dim() == 2:'
    """
    source = _segment(text, line, column, end_line, end_column)
    call = _call(source or "", "len")
    if source is None or call is None:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Attribute) and arg.attr == "shape":  # len(x.shape) is the rank
        new = f"{_expr_text(source, arg.value)}.dim()"
    else:
        new = f"{_expr_text(source, arg)}.size(0)"
    return Edit(line, column, end_line, end_column, new)


def replace_int_shape(text: str, line: int, column: int, end_line: int, end_column: int) -> Edit | None:
    """``int(x.shape[i])`` or ``int(x.size(i))`` in the given range -> ``x.size(i)``, which stays
    a traced value instead of demanding a concrete number.

    >>> t = "steps = int(x.shape[1])"
    >>> apply(t, [replace_int_shape(t, 1, 9, 1, 24)])
    'steps = x.size(1)'
    """
    source = _segment(text, line, column, end_line, end_column)
    call = _call(source or "", "int")
    if source is None or call is None:
        return None
    arg = call.args[0]
    src = source.strip()
    if (isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Attribute)
            and arg.value.attr == "shape" and not isinstance(arg.slice, (ast.Slice, ast.Tuple))):
        base, index = arg.value.value, arg.slice
    elif (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "size"
          and len(arg.args) == 1 and not arg.keywords):
        base, index = arg.func.value, arg.args[0]
    else:
        return None
    index_text = ast.get_source_segment(src, index) or ast.unparse(index)
    return Edit(line, column, end_line, end_column, f"{_expr_text(source, base)}.size({index_text})")


# --------------------------------------------------------------------------------------- pyproject
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")


def _norm(header: str) -> str:
    return ".".join(p.strip().strip("\"'") for p in header.split("."))


def _section_span(lines: list[str], name: str) -> tuple[int, int] | None:
    """(header line index, index after the section's last line) of ``[name]``, 0-based."""
    start = None
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if (m or _ARRAY_HEADER.match(line)) and start is not None:
            return start, i
        if m and _norm(m.group(1)) == name:
            start = i
    return None if start is None else (start, len(lines))


def _closing_bracket(lines: list[str], line: int, col: int) -> tuple[int, int] | None:
    """Position (0-based line, column) of the ``]`` closing the array opened at ``lines[line][col]``."""
    depth, quote = 0, ""
    i, j = line, col
    while i < len(lines):
        s = lines[i]
        while j < len(s):
            ch = s[j]
            if quote:
                if ch == "\\" and quote == '"':
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                break
            elif ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth == 0:
                    return i, j
            j += 1
        i, j = i + 1, 0
    return None


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _existing(text: str, key: str) -> list[Any] | None:
    """The current value of ``[tool.fxscope] key`` (``[]`` when absent), None when unreadable."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    value = data.get("tool", {}).get("fxscope", {}).get(key, [])
    return value if isinstance(value, list) else None


def add_to_config_list(text: str | None, key: str, value: str) -> Edit | None:
    """Add ``value`` to the ``[tool.fxscope]`` array ``key`` of a pyproject.toml's text (``None``:
    the file does not exist yet and the edit is its whole content). None when the value is
    already there or the file cannot be edited safely (invalid TOML, a dotted-key form).

    >>> t = '[tool.fxscope]\\nleaf-modules = ["a.B"]\\n'
    >>> print(apply(t, [add_to_config_list(t, "leaf-modules", "c.D")]), end="")
    [tool.fxscope]
    leaf-modules = ["a.B", "c.D"]
    """
    entry = f"{key} = [{_toml_string(value)}]"
    if text is None or not text.strip():
        content = f"[tool.fxscope]\n{entry}\n"
        if text is None:
            return Edit(1, 1, 1, 1, content)
        lines = _lines(text)
        return Edit(1, 1, len(lines), len(lines[-1]) + 1, content)
    current = _existing(text, key)
    if current is None or value in current:
        return None
    lines = _lines(text)
    span = _section_span(lines, "tool.fxscope")
    if span is None:
        return _new_section(text, lines, entry)
    start, stop = span
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=\s*")
    for i in range(start + 1, stop):
        m = key_re.match(lines[i])
        if m:
            return _append_to_array(lines, i, m.end(), _toml_string(value))
    insert = start + 2  # the line after the header
    return Edit(insert, 1, insert, 1, f"{entry}\n")


def _new_section(text: str, lines: list[str], entry: str) -> Edit | None:
    """A ``[tool.fxscope]`` section holding ``entry``, added at the end of the file."""
    tool = tomllib.loads(text).get("tool", {})
    if "fxscope" in tool and any(k != "targets" for k in tool["fxscope"]):
        return None  # written with dotted keys somewhere else: do not guess
    last = len(lines)
    sep = "\n" if lines[-1].strip() else ""
    prefix = "\n" if lines[-1].strip() or (last > 1 and lines[-2].strip()) else ""
    return Edit(last, len(lines[-1]) + 1, last, len(lines[-1]) + 1, f"{sep}{prefix}[tool.fxscope]\n{entry}\n")


def _append_to_array(lines: list[str], i: int, col: int, quoted: str) -> Edit | None:
    """Add ``quoted`` to the array that starts at column ``col`` (0-based) of line ``i``
    (0-based); None when it is not an array fxscope can edit safely."""
    if col >= len(lines[i]) or lines[i][col] != "[":
        return None
    close = _closing_bracket(lines, i, col)
    if close is None:
        return None
    ci, cj = close
    inner = "\n".join([lines[i][col + 1:]] + lines[i + 1:ci]) if ci > i else lines[i][col + 1:cj]
    if ci > i:
        inner += "\n" + lines[ci][:cj]
    body = re.sub(r"#[^\n]*", "", inner).strip()
    if ci > i and not lines[ci][:cj].strip():  # closing bracket alone on its line
        blank = re.match(r"\s*", lines[i + 1] if i + 1 < ci else "    ")
        indent = (blank.group(0) if blank else "") or "    "
        prev = ci - 1
        while prev > i and not re.sub(r"#.*", "", lines[prev]).strip():
            prev -= 1
        code = re.sub(r"\s*#.*$", "", lines[prev]) if prev > i else lines[i][: col + 1]
        edits_text = f"{indent}{quoted},\n"
        if body and not body.endswith(","):
            # put the comma right after the last element, then the new line before `]`
            return _combine(lines, (prev + 1, len(code.rstrip()) + 1, ","), (ci + 1, 1, edits_text))
        return Edit(ci + 1, 1, ci + 1, 1, edits_text)
    new = quoted if not body else f" {quoted}" if body.endswith(",") else f", {quoted}"
    pos = len(lines[ci][:cj].rstrip()) + 1  # right after the last non-blank character before `]`
    return Edit(ci + 1, pos, ci + 1, pos, new)


def _combine(lines: list[str], *inserts: tuple[int, int, str]) -> Edit:
    """One edit holding several insertions (1-based line, column, text; in order), so a client
    applies them as a single TextEdit."""
    (l0, c0, _), (l1, c1, _) = inserts[0], inserts[-1]
    region = _segment("\n".join(lines), l0, c0, l1, c1) or ""
    relative = [Edit(l - l0 + 1, c - c0 + 1 if l == l0 else c, l - l0 + 1, c - c0 + 1 if l == l0 else c, t)
                for (l, c, t) in inserts]
    return Edit(l0, c0, l1, c1, apply(region, relative))


def append_text(text: str | None, addition: str) -> Edit:
    """The edit that appends ``addition`` at the end of ``text`` (None or empty: a new file).

    >>> apply("a\\nb", [append_text("a\\nb", "c\\n")])
    'a\\nbc\\n'
    """
    lines = _lines(text or "")
    last = len(lines)
    return Edit(last, len(lines[-1]) + 1, last, len(lines[-1]) + 1, addition)


def module_name(file: Path, python_path: Sequence[Path]) -> str | None:
    """Dotted module name of ``file`` under the first ``python_path`` entry that contains it.

    >>> module_name(Path("/r/src/pkg/net.py"), [Path("/r"), Path("/r/src")])
    'pkg.net'
    """
    best: tuple[str, ...] | None = None
    for base in python_path:
        try:
            rel = file.relative_to(base)
        except ValueError:
            continue
        parts = rel.with_suffix("").parts
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts) and (best is None or len(parts) < len(best)):
            best = parts
    return ".".join(best) if best else None


def enclosing_function(text: str, line: int) -> str | None:
    """Name of the module-level function whose body contains ``line`` (methods do not count: a
    method cannot be an fx autowrap function).

    >>> enclosing_function("def f(x):\\n    return len(x)\\n", 2)
    'f'
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return node.name
    return None
