"""The graph view as a self-contained HTML file, drawn by headless Chromium.

``fxscope graph --format html`` and ``fxscope check --html-report`` run as subprocesses on real
workspaces; Chromium loads the file offline and the assertions read the SVG that the bundled
renderer drew, through the DOM (nodes, boxes, tooltips, links, highlights), never pixels.
"""

from __future__ import annotations

import json
import re
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

from browser_support import dump_dom, find_chromium, screenshot
from engine_support import run_fxscope as fxscope

CHROMIUM = find_chromium()
pytestmark = [pytest.mark.requires_torch, pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium not installed (apt-get install chromium, or set FXSCOPE_CHROMIUM)")]

REPO = Path(__file__).resolve().parents[2]

MODEL = textwrap.dedent('''\
    import torch
    from torch import nn


    class Gate(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.gate = Gate()

        def forward(self, x):
            return self.gate(self.lin(x)).relu() + x


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(2))
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(x)


    class Deep(nn.Module):
        """About 2,000 graph nodes in 40 blocks."""

        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Chain() for _ in range(40))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x


    class Chain(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            x = self.lin(x)
            for _ in range(25):
                x = x * 1.01 + 0.1
            return x
    ''')

GATE_IF_LINE = 7
BLOCK_RETURN_LINE = 19


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: "Element | None") -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element] = []
        self.text = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Element"]:
        return [e for e in self.iter() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)


class _Tree(HTMLParser):
    VOID = {"meta", "link", "br", "img", "input", "hr", "path", "rect", "line"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        e = Element(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(e)
        if tag not in self.VOID:
            self.cur = e

    def handle_startendtag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.cur.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.cur))

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        e = self.cur
        while e is not None and e.tag != tag:
            e = e.parent
        if e is not None and e.parent is not None:
            self.cur = e.parent

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.cur.text += data


def parse(html: str) -> Element:
    tree = _Tree()
    tree.feed(html)
    return tree.root


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph_html")
    (root / "pyproject.toml").write_text("[tool.fxscope]\nworkers = 2\n")
    (root / "models.py").write_text(MODEL)
    return root


def _graph_html(ws: Path, target: str, *extra: str) -> Path:
    proc = fxscope(ws, "graph", target, "--format", "html", *extra)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<!DOCTYPE html>")
    out = ws / f"{target.replace('/', '_').replace(':', '_')}{'_'.join(extra)}.html"
    out.write_text(proc.stdout)
    return out


def _nodes(dom: Element) -> list[Element]:
    return dom.find_all("g", cls="fxg-node")


def test_graph_html_draws_every_node_with_tooltip_and_source_link(ws: Path, tmp_path: Path) -> None:
    page = _graph_html(ws, "models.py::Net")
    assert "http://" not in page.read_text().replace("http://www.w3.org/2000/svg", ""), "the page loads nothing"
    expected = json.loads(fxscope(ws, "graph", "models.py::Net", "--format", "json").stdout)
    names = [n["name"] for g in expected["graphs"] for n in g["nodes"]]

    shot = screenshot(CHROMIUM, page.as_uri(), tmp_path / "net.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = parse(dump_dom(CHROMIUM, page.as_uri()))

    body = dom.find_all("body")[0]
    assert body.attrs.get("data-fxscope-ready") == "true"
    drawn = _nodes(dom)
    assert sorted(g.attrs["data-node"] for g in drawn) == sorted(names)
    svg = dom.find_all("svg", cls="fxg-svg")[0]
    assert int(svg.attrs["data-vertices"]) == len(names)
    assert len(dom.find_all("path", cls="fxg-edge")) >= len(names) - 2

    # Boxes by module scope: both block instances; a call_module node sits in its caller's box.
    boxes = {b.attrs["data-scope"] for b in dom.find_all("g", cls="fxg-box")}
    assert {"blocks.0", "blocks.1"} <= boxes
    lin = next(g for g in drawn if g.attrs["data-scope"] == "blocks.0.lin")
    assert lin.attrs["data-op"] == "call_module"

    # Tooltip: op, target, scope and source line.
    tip = lin.find_all("title")[0].all_text()
    assert "op: call_module" in tip and "target: blocks.0.lin" in tip
    assert "scope: blocks.0.lin (torch.nn.modules.linear.Linear)" in tip
    assert f"source: models.py:{BLOCK_RETURN_LINE}" in tip

    # The failed module kept as a leaf is highlighted, and so is its box.
    gate = [g for g in drawn if g.attrs["data-scope"] in ("blocks.0.gate", "blocks.1.gate")]
    assert len(gate) == 2 and all("fxg-failed" in g.classes for g in gate)
    assert all("fxg-failed" in b.classes for b in dom.find_all("g", cls="fxg-box") if b.attrs["data-scope"] in ("blocks.0", "blocks.1"))
    assert not any("fxg-failed" in g.classes for g in drawn if g.attrs["data-op"] != "call_module")

    # Clicking a node follows a link to its line in the embedded source snippet.
    link = lin.parent
    assert link.tag == "a"
    anchor = link.attrs["href"]
    assert re.fullmatch(rf"#src-f\d+-L{BLOCK_RETURN_LINE}", anchor)
    line = dom.find_all(id=anchor[1:])
    assert line and "self.gate(self.lin(x))" in line[0].all_text()


def test_findings_are_listed_and_linked(ws: Path) -> None:
    dom = parse(dump_dom(CHROMIUM, _graph_html(ws, "models.py::Net").as_uri()))
    findings = dom.find_all("li", cls="fxg-finding")
    assert any("FXS101" in f.all_text() and f"models.py:{GATE_IF_LINE}" in f.all_text() for f in findings)
    static = [a for a in dom.find_all("a", cls="loc") if "FXS101" in (a.parent.all_text() if a.parent else "")]
    assert static and static[0].attrs["href"].endswith(f"-L{GATE_IF_LINE}")
    flagged = dom.find_all(id=static[0].attrs["href"][1:])[0]
    assert "flagged" in flagged.classes and "if x.sum() > 0" in flagged.all_text()


def test_module_inline_in_parent_graph(ws: Path) -> None:
    """--module of a module traced inline draws its scope's nodes, not "no graph"."""
    dom = parse(dump_dom(CHROMIUM, _graph_html(ws, "models.py::Net", "--module", "blocks.1").as_uri()))
    drawn = _nodes(dom)
    assert drawn and all(g.attrs["data-scope"].startswith("blocks.1") for g in drawn)
    assert {"blocks.1.lin", "blocks.1.gate"} <= {g.attrs["data-scope"] for g in drawn}
    assert any("FXS101" in f.all_text() for f in dom.find_all("li", cls="fxg-finding"))


def test_two_thousand_nodes_start_collapsed(ws: Path) -> None:
    expected = json.loads(fxscope(ws, "graph", "models.py::Deep", "--format", "json").stdout)
    total = sum(len(g["nodes"]) for g in expected["graphs"])
    assert total >= 2000
    dom = parse(dump_dom(CHROMIUM, _graph_html(ws, "models.py::Deep").as_uri()))
    svg = dom.find_all("svg", cls="fxg-svg")[0]
    collapsed = dom.find_all("g", cls="fxg-collapsed")
    assert len(collapsed) == 40
    assert {c.attrs["data-scope"] for c in collapsed} == {f"blocks.{i}" for i in range(40)}
    assert int(svg.attrs["data-vertices"]) == 40 + len(_nodes(dom))
    assert len(_nodes(dom)) < 10  # the root's own placeholder and output
    counts = dom.find_all("span", cls="fxg-counts")[0].all_text()
    assert counts.startswith(f"{total} nodes")


def test_check_html_report_has_every_target(ws: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    proc = fxscope(ws, "check", "--html-report", str(out), "--format", "json")
    assert proc.returncode == 1, proc.stderr  # FXS101 is an error
    report = json.loads(proc.stdout)
    assert all("graphs" not in t for t in report["targets"]), "graphs only with --graphs"
    page = out / "index.html"
    dom = parse(page.read_text())
    sections = dom.find_all("details", cls="fxscope-target")
    ids = {t["id"] for t in report["targets"]}
    assert {re.search(r"(models\.py::\w+)", s.find_all("summary")[0].all_text()).group(1) for s in sections} == ids

    # A target with findings is open and drawn; any other one draws when its section is linked.
    drawn = parse(dump_dom(CHROMIUM, page.as_uri()))
    net = next(s for s in drawn.find_all("details", cls="fxscope-target") if "models.py::Net " in s.find_all("summary")[0].all_text())
    assert "open" in net.attrs and net.find_all("g", cls="fxg-node")
    chain_index = next(s.attrs["data-doc"] for s in sections if "models.py::Chain " in s.find_all("summary")[0].all_text())
    linked = parse(dump_dom(CHROMIUM, f"{page.as_uri()}#target-{chain_index}"))
    chain = linked.find_all("details", id=f"target-{chain_index}")[0]
    assert {g.attrs["data-scope"] for g in chain.find_all("g", cls="fxg-node")} >= {"lin"}


def test_canvas_follows_resizes_and_findings_fold(ws: Path) -> None:
    """In a real browser: a drawing dragged out of the canvas comes back when the window is
    resized (never an empty canvas), and the findings column folds and unfolds."""
    import shutil
    import subprocess

    vscode = REPO / "clients" / "vscode"
    if shutil.which("node") is None or not (vscode / "node_modules" / "playwright-core").exists():
        pytest.skip("Node or clients/vscode/node_modules missing (run `make vscode`)")
    page = _graph_html(ws, "models.py::Net")
    proc = subprocess.run(["node", str(vscode / "test" / "e2e" / "graphPage.mjs")], capture_output=True, text=True,
                          timeout=180, env={**__import__("os").environ, "FXSCOPE_CHROMIUM": CHROMIUM or "",
                                            "FXSCOPE_PAGE": str(page)})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not result["errors"], result
    wide, dragged, narrow, toggled = result["wide"], result["dragged"], result["narrow"], result["toggled"]
    assert wide["nodes"] > 0 and wide["inside"] > 0 and wide["sideShown"], result  # a wide page shows findings
    assert dragged["inside"] < wide["inside"], result  # the drag moved nodes out of the canvas
    assert narrow["canvas"]["width"] < wide["canvas"]["width"] and narrow["inside"] > 0, result
    assert toggled["sideShown"] != narrow["sideShown"], result
    assert toggled["button"].startswith("Findings" if not toggled["sideShown"] else "Hide findings"), result
