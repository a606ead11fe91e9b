"""Structure figures of the package, as the job-layer review asks them (prints; asserts nothing).

- the longest functions of ``job/`` (the ask: none over 60 lines);
- ``dict[str, Any]`` written in ``worker/`` and ``job/`` (the ask: at most 20);
- lines of ``worker/`` (the ask: at most 3,000);
- where the names of the compile and export analyses appear as code (string constants equal to
  the name, and ``.compile``/``.export`` attributes outside ``torch.``; docstrings and comments are
  not code) per package (the ask: only ``job/`` analyses, ``trace/``, the config aliases and SARIF);
- import cycles between fxscope modules at run time, counting every import, the lazy ones inside
  functions included, not those for annotations only (``if TYPE_CHECKING:``) (the ask: none), and
  with ``--fresh`` whether each module imports on its own in a fresh interpreter.

    .venv/bin/python benchmarks/layer_metrics.py [--fresh]
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "daemon" / "fxscope"  # --package measures another checkout
ANALYSIS_NAMES = ("compile", "export")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function, nested ones included."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((name, (child.end_lineno or child.lineno) - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _name_uses(tree: ast.AST) -> int:
    docs = _docstrings(tree)
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ANALYSIS_NAMES and id(node) not in docs:
            count += 1
        elif isinstance(node, ast.Attribute) and node.attr in ANALYSIS_NAMES:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in ("torch", "re")):  # torch.compile, re.compile
                count += 1
    return count


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            test = getattr(child, "test", None)
            if isinstance(child, ast.If) and (
                    (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
                    or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")):
                stack.extend(child.orelse)
                continue
            stack.append(child)
    return out


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """fxscope modules ``module`` imports at run time anywhere (lazy imports too)."""
    out = set()
    for node in _runtime_nodes(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module and name.startswith("fxscope"):
                out.add(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def _fresh_imports(modules: list[str]) -> list[str]:
    """Modules that fail to import first, on their own, in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    failed = []
    for name in modules:
        if name.endswith("__main__"):
            continue
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            failed.append(f"{name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fresh", action="store_true", help="also import every module in a fresh interpreter")
    parser.add_argument("--package", type=Path, help="the fxscope package directory to measure (default: this checkout's)")
    args = parser.parse_args()
    global PACKAGE
    if args.package is not None:
        PACKAGE = args.package.resolve()
    modules = _modules()
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules.items()}

    job = [(f"{name}.{fn}", n) for name, tree in trees.items() if name.startswith("fxscope.job")
           for fn, n in _functions(tree)]
    job.sort(key=lambda item: -item[1])
    over = [item for item in job if item[1] > 60]
    print(f"job/ functions over 60 lines: {len(over)} (longest: "
          + ", ".join(f"{fn} {n}" for fn, n in job[:3]) + ")")
    for fn, n in over:
        print(f"    {n:4d}  {fn}")

    per_file = Counter({str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8").count("dict[str, Any]")
                        for name, path in modules.items() if name.startswith(("fxscope.worker", "fxscope.job"))})
    print(f"dict[str, Any] in worker/ + job/: {sum(per_file.values())} ("
          + ", ".join(f"{f} {n}" for f, n in per_file.most_common() if n) + ")")

    worker = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
              for name, p in modules.items() if name.startswith("fxscope.worker")}
    print(f"worker/ lines: {sum(worker.values())} ("
          + ", ".join(f"{f} {n}" for f, n in sorted(worker.items(), key=lambda i: -i[1])) + ")")

    uses = Counter()
    for name, tree in trees.items():
        n = _name_uses(tree)
        if n:
            uses[str(modules[name].relative_to(PACKAGE))] = n
    packages = Counter()
    for file, n in uses.items():
        packages[file.split("/")[0] if "/" in file else "."] += n
    print(f"compile/export names as code: {sum(uses.values())} in {len(uses)} files of {len(packages)} packages")
    for file, n in sorted(uses.items()):
        print(f"    {n:3d}  {file}")

    known = set(modules)
    graph = {name: _imports(tree, name, modules[name].name == "__init__.py", known) for name, tree in trees.items()}
    graph = {name: {d for d in deps if not name.startswith(d + ".")} for name, deps in graph.items()}  # a package's own __init__
    cycles = _cycles(graph)
    print(f"import cycles (lazy imports included): {len(cycles)}")
    for comp in cycles:
        print("    " + " <-> ".join(comp))
    if args.fresh:
        failed = _fresh_imports(sorted(modules))
        print(f"modules that fail to import fresh: {len(failed)}")
        for line in failed:
            print("    " + line)


if __name__ == "__main__":
    main()
