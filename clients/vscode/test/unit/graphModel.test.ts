import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { buildModel, COLLAPSE_THRESHOLD, defaultCollapsed, graphAnalyses, nodesAtLine, shownAs, visibleGraph, withAnalysis } from "../../../graph/src/model";
import type { GraphDocument, GraphNode } from "../../../graph/src/types";

function node(name: string, op: string, scope: string, inputs: string[] = [], line?: number): GraphNode {
  return { name, op, target: name, scope, scope_type: `m.${scope || "Net"}`, inputs, ...(line ? { file: "m.py", line } : {}) };
}

const doc: GraphDocument = {
  version: 1, target: "m.py::Net", status: "partial", module: null,
  graphs: [{ module: "", nodes: [
    node("x", "placeholder", ""),
    node("block_lin", "call_module", "block.lin", ["x"], 5),
    node("relu", "call_function", "block", ["block_lin"], 6),
    node("block_attn_q", "call_module", "block.attn.q", ["relu"], 9),
    node("add", "call_function", "block.attn", ["block_attn_q", "x"], 10),
    node("bad", "call_module", "bad", ["add"], 12),
    node("output", "output", "", ["bad"]),
  ] }],
  modules: [{ path: "bad", type: "m.Bad", status: "failed" }, { path: "block", type: "m.Block", status: "traced" }],
  findings: [{ code: "FXS101", severity: "error", message: "if on a tensor", file: "m.py", line: 20, scopes: [{ path: "bad" }] },
    { code: "FXS104", severity: "error", message: "int()", file: "m.py", line: 10, scopes: [{ path: "block.attn" }] }],
};

test("nodes are boxed by module scope; a call_module node sits in its caller's box", () => {
  const m = buildModel(doc);
  assert.deepEqual([...m.boxes.keys()].sort(), ["g0/block", "g0/block.attn"]);
  assert.equal(m.nodes.get("g0:block_lin")!.box, "g0/block");
  assert.equal(m.nodes.get("g0:block_attn_q")!.box, "g0/block.attn");
  assert.equal(m.nodes.get("g0:x")!.box, null);
  assert.equal(m.boxes.get("g0/block.attn")!.parent, "g0/block");
  assert.equal(m.boxes.get("g0/block")!.total, 4);
  assert.equal(m.boxes.get("g0/block")!.type, "m.Block");
});

test("failed modules and findings are marked", () => {
  const m = buildModel(doc);
  assert.ok(m.nodes.get("g0:bad")!.failed);
  assert.ok(!m.nodes.get("g0:relu")!.failed);
  assert.equal(m.nodes.get("g0:add")!.findings[0].code, "FXS104");
  assert.equal(m.boxes.get("g0/block.attn")!.findings, 1);
  assert.equal(m.boxes.get("g0/block")!.findings, 1);
});

test("collapsing a box redirects its edges and hides its nodes", () => {
  const m = buildModel(doc);
  const open = visibleGraph(m, new Set());
  assert.equal(open.vertices.length, 7);
  assert.equal(open.clusters.length, 2);
  const closed = visibleGraph(m, new Set(["g0/block"]));
  assert.deepEqual(closed.vertices.map((v) => v.id).sort(), ["g0/block", "g0:bad", "g0:output", "g0:x"]);
  assert.equal(closed.clusters.length, 0);
  assert.deepEqual(closed.edges.sort(), [["g0/block", "g0:bad"], ["g0:bad", "g0:output"], ["g0:x", "g0/block"]]);
  assert.equal(shownAs(m, "g0:add", new Set(["g0/block"])), "g0/block");
  assert.deepEqual(nodesAtLine(m, "m.py", 10), ["g0:add"]);
});

test("small graphs start expanded; graphs past the threshold start collapsed", () => {
  assert.equal(defaultCollapsed(buildModel(doc)).size, 0);
  const nodes: GraphNode[] = [node("x", "placeholder", "")];
  for (let b = 0; b < 40; b++) {
    for (let i = 0; i < 50; i++) nodes.push(node(`n${b}_${i}`, "call_function", `blocks.${b}`, [i ? `n${b}_${i - 1}` : b ? `n${b - 1}_49` : "x"]));
  }
  const big = buildModel({ ...doc, graphs: [{ module: "", nodes }], findings: [], modules: [] });
  assert.ok(big.total > COLLAPSE_THRESHOLD);
  const collapsed = defaultCollapsed(big);
  assert.equal(collapsed.size, 40);
  const vis = visibleGraph(big, collapsed);
  assert.equal(vis.vertices.length, 41);
  assert.equal(vis.edges.length, 40);
});

test("several graphs (children traced on their own) each get their own box", () => {
  const two: GraphDocument = { ...doc, graphs: [
    { module: "blocks.0", nodes: [node("x", "placeholder", "blocks.0"), node("q", "call_module", "blocks.0.q", ["x"])] },
    { module: "blocks.1", nodes: [node("x", "placeholder", "blocks.1"), node("q", "call_module", "blocks.1.q", ["x"])] },
  ] };
  const m = buildModel(two);
  assert.deepEqual([...m.boxes.keys()], ["g0/blocks.0", "g1/blocks.1"]);
  assert.equal(m.nodes.get("g1:q")!.box, "g1/blocks.1");
  assert.equal(m.edges.length, 2);
});

test("each graph torch.compile captured is a region of its own, titled with the break that ended it", () => {
  const compiled: GraphDocument = { ...doc, findings: [
    { code: "FXS601", severity: "warning", message: "graph break", file: "m.py", line: 6 }], graphs: [
    { module: "", analysis: "compile", ends: { reason: "Data-dependent branching", file: "m.py", line: 6 },
      nodes: [node("x", "placeholder", ""), node("lin", "call_function", "lin", ["x"], 5), node("gt", "call_function", "", ["lin"], 6)] },
    { module: "", analysis: "compile", nodes: [node("y", "placeholder", ""), node("mul", "call_function", "", ["y"], 7)] },
  ] };
  const m = buildModel(compiled);
  const regions = [...m.boxes.values()].filter((b) => b.compiled);
  assert.deepEqual(regions.map((b) => b.label), ["compile graph 1/2", "compile graph 2/2"]);
  assert.equal(regions[0].note, "graph break at m.py:6: Data-dependent branching");
  assert.equal(regions[1].note, "last graph: no break after it");
  assert.equal(m.nodes.get("g0:gt")!.findings.length, 1, "the node of the break's line is marked");
  assert.equal(m.nodes.get("g1:mul")!.box, "g1/");
  // one captured graph alone is a region too; an fx graph alone is not boxed
  assert.equal(buildModel({ ...compiled, graphs: [compiled.graphs[1]] }).boxes.get("g0/")?.label, "compile graph 1/1");
  assert.equal(buildModel(doc).boxes.get("g0/"), undefined);
});

test("the committed Python package bundle is the one this source builds", async () => {
  const root = join(__dirname, "..", "..");
  const { graphOptions, packageStatic } = await import(pathToFileURL(join(root, "build-options.mjs")).href);
  const esbuild = await import("esbuild");
  const out = await esbuild.build({ ...graphOptions, write: false, outfile: "fxscope-graph.js" });
  const built = out.outputFiles![0].text;
  assert.equal(readFileSync(join(packageStatic, "fxscope-graph.js"), "utf8"), built,
    "daemon/fxscope/graphview/static/fxscope-graph.js is stale: run `npm run compile -- --graph-package`");
  assert.equal(readFileSync(join(packageStatic, "fxscope-graph.css"), "utf8"), readFileSync(join(root, "..", "graph", "src", "graph.css"), "utf8"));
});

test("a document with edges instead of inputs, and no modules or findings, is drawn the same", () => {
  const lsp = {
    target: "m.py::Net", status: "traced", module: null,
    graphs: [{ module: "", nodes: doc.graphs[0].nodes.map(({ inputs: _inputs, ...n }) => n),
      edges: doc.graphs[0].nodes.flatMap((n) => n.inputs.map((i) => [i, n.name])) }],
  } as unknown as GraphDocument;
  const m = buildModel(lsp);
  assert.deepEqual(m.edges, buildModel(doc).edges);
  assert.deepEqual(m.doc.findings, []);
  assert.equal(m.boxes.size, 2);
});

test("a document with captured graphs (torch.compile's) opens on them, and can switch to the FX graph", () => {
  const compiled: GraphDocument = { ...doc, graphs: [
    ...doc.graphs,
    { module: "", analysis: "compile", nodes: [node("x", "placeholder", ""), node("output", "output", "", ["x"])],
      ends: { reason: "data-dependent branch", file: "m.py", line: 20 } },
    { module: "", analysis: "compile", nodes: [node("y", "placeholder", ""), node("output", "output", "", ["y"])] },
  ] };
  assert.deepEqual(graphAnalyses(compiled), ["compile", "fx"]);
  assert.deepEqual(graphAnalyses(doc), ["fx"]);
  assert.deepEqual(graphAnalyses({ ...doc, graphs: [] }), []);
  const onlyCompile = withAnalysis(compiled, "compile");
  assert.equal(onlyCompile.graphs.length, 2);
  assert.equal(buildModel(onlyCompile).total, 4);
  assert.equal(withAnalysis(compiled, "fx").graphs.length, 1);
  assert.equal(withAnalysis(doc, "compile"), doc, "no such graphs: the document as it is");
  assert.equal(withAnalysis(compiled, undefined), compiled);
  // graphs another analysis (a plug-in) captured are drawn the same way, under its name
  const plugin: GraphDocument = { ...compiled, graphs: [...compiled.graphs,
    { module: "", analysis: "capture", nodes: [node("z", "placeholder", ""), node("output", "output", "", ["z"])] }] };
  assert.deepEqual(graphAnalyses(plugin), ["capture", "compile", "fx"]);
  assert.equal(buildModel(withAnalysis(plugin, "capture")).boxes.get("g0/")?.label, "capture graph 1/1");
});
