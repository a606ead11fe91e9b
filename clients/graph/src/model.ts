/**
 * Pure graph logic (no DOM): scope boxes, collapsing, and the visible graph that is laid out.
 *
 * A node sits in the box of its module scope; a `call_module` node (its scope is the called
 * module itself) sits in the box of the caller. Boxes exist for the scopes that hold nodes and
 * nest by module path. A collapsed box is drawn as one vertex; edges into it are redirected.
 */

import type { Finding, GraphDocument, GraphNode } from "./types";

/** Graphs with more nodes than this start with every box collapsed. */
export const COLLAPSE_THRESHOLD = 250;

export interface NodeInfo {
  id: string;
  graph: number;
  node: GraphNode;
  box: string | null;
  failed: boolean; // a call_module node standing for a module whose forward failed
  findings: Finding[]; // findings located on this node's source line
}

export interface BoxInfo {
  id: string;
  graph: number;
  scope: string;
  type: string;
  parent: string | null;
  children: string[]; // child box ids
  nodes: string[]; // direct node ids
  total: number; // nodes in the subtree
  failed: boolean; // the module (or one below it) failed to trace
  findings: number; // findings whose scope is this module or one below it
  label?: string; // a region's own title (a graph torch.compile captured: "torch.compile graph 1/3")
  note?: string; // what ended that region (the graph break, where)
  compiled?: boolean; // the region of a graph torch.compile captured
}

export interface GraphModel {
  doc: GraphDocument;
  nodes: Map<string, NodeInfo>;
  boxes: Map<string, BoxInfo>;
  edges: [string, string][];
  total: number;
}

export interface VisibleVertex {
  id: string;
  kind: "node" | "box";
  parent: string | null; // id of the expanded box that contains it
}

export interface VisibleGraph {
  vertices: VisibleVertex[];
  clusters: { id: string; parent: string | null }[];
  edges: [string, string][];
}

export function shortType(qualname: string): string {
  const i = qualname.lastIndexOf(".");
  return i >= 0 ? qualname.slice(i + 1) : qualname;
}

function parentScope(scope: string): string {
  const i = scope.lastIndexOf(".");
  return i >= 0 ? scope.slice(0, i) : "";
}

function within(scope: string, prefix: string): boolean {
  return prefix === "" || scope === prefix || scope.startsWith(prefix + ".");
}

/** The box scope of a node: its module, or the caller's for a call_module node. */
export function boxScope(node: GraphNode): string {
  return node.op === "call_module" ? parentScope(node.scope) : node.scope;
}

export function boxId(graph: number, scope: string): string {
  return `g${graph}/${scope}`;
}

export function nodeId(graph: number, name: string): string {
  return `g${graph}:${name}`;
}

function lineKey(file: string | undefined, line: number | undefined): string {
  return `${file ?? ""}:${line ?? 0}`;
}

/**
 * Fill what a document may leave out: `modules` and `findings` default to empty, and a graph
 * that lists its edges as `edges: [[input, user], ...]` instead of node `inputs` gets them.
 */
export function normalizeDocument(raw: GraphDocument): GraphDocument {
  const graphs = (raw.graphs ?? []).map((g) => {
    const edges = (g as { edges?: [string, string][] }).edges;
    const byUser = new Map<string, string[]>();
    for (const [src, dst] of edges ?? []) byUser.set(dst, [...(byUser.get(dst) ?? []), src]);
    return {
      ...g,
      module: g.module ?? "",
      nodes: (g.nodes ?? []).map((n) => ({ ...n, scope: n.scope ?? "", scope_type: n.scope_type ?? "", inputs: n.inputs ?? byUser.get(n.name) ?? [] })),
    };
  });
  return { ...raw, version: 1, module: raw.module ?? null, graphs, modules: raw.modules ?? [], findings: raw.findings ?? [] };
}

/** The analyses a document has graphs of: those another analysis captured (torch.compile's
 * "compile"), by name, first, then "fx" (fxscope's own FX graph); empty for a document without graphs. */
export function graphAnalyses(raw: GraphDocument): string[] {
  const kinds = new Set((raw.graphs ?? []).map((g) => g.analysis ?? "fx"));
  return [...[...kinds].filter((k) => k !== "fx").sort(), ...(kinds.has("fx") ? ["fx"] : [])];
}

/** ``raw`` with only the graphs of ``analysis`` (the document itself when it has no such graph). */
export function withAnalysis(raw: GraphDocument, analysis: string | undefined): GraphDocument {
  if (!analysis) return raw;
  const graphs = (raw.graphs ?? []).filter((g) => (g.analysis ?? "fx") === analysis);
  return graphs.length ? { ...raw, graphs } : raw;
}

/** The title and note of the region of the ``index``-th of ``count`` graphs ``analysis`` captured. */
export function compiledRegion(analysis: string, index: number, count: number, ends?: { reason: string; file: string; line: number }): Pick<BoxInfo, "label" | "note" | "compiled"> {
  const note = ends ? `graph break at ${ends.file}:${ends.line}: ${ends.reason}` : "last graph: no break after it";
  return { label: `${analysis} graph ${index}/${count}`, note, compiled: true };
}

/** Index a document: nodes, boxes (with failure and finding marks) and edges. */
export function buildModel(raw: GraphDocument): GraphModel {
  const doc = normalizeDocument(raw);
  const failedModules = new Set(doc.modules.filter((m) => m.status === "failed").map((m) => m.path));
  const moduleTypes = new Map(doc.modules.map((m) => [m.path, m.type]));
  const byLine = new Map<string, Finding[]>();
  for (const f of doc.findings) {
    const key = lineKey(f.file, f.line);
    byLine.set(key, [...(byLine.get(key) ?? []), f]);
  }
  const nodes = new Map<string, NodeInfo>();
  const boxes = new Map<string, BoxInfo>();
  const edges: [string, string][] = [];
  const multi = doc.graphs.length > 1;
  const captured = (g: { analysis?: string }): string | null => (g.analysis && g.analysis !== "fx" ? g.analysis : null);
  const capturedCount = new Map<string, number>();
  for (const g of doc.graphs) {
    const a = captured(g);
    if (a) capturedCount.set(a, (capturedCount.get(a) ?? 0) + 1);
  }
  const capturedIndex = new Map<string, number>();

  doc.graphs.forEach((g, gi) => {
    const analysis = captured(g);
    const compiled = analysis !== null;
    const scopes = new Set<string>();
    for (const n of g.nodes) {
      const s = boxScope(n);
      if (s !== g.module && within(s, g.module)) scopes.add(s);
    }
    const sorted = [...scopes].sort((a, b) => a.split(".").length - b.split(".").length || a.localeCompare(b));
    // every graph an analysis captured (torch.compile's) is a region of its own, titled with the break that ended it
    const rootBox = multi || compiled ? boxId(gi, g.module) : null;
    if (rootBox) {
      boxes.set(rootBox, {
        id: rootBox, graph: gi, scope: g.module, type: moduleTypes.get(g.module) ?? "", parent: null,
        children: [], nodes: [], total: 0, failed: false, findings: 0,
        ...(analysis !== null ? compiledRegion(analysis, capturedIndex.set(analysis, (capturedIndex.get(analysis) ?? 0) + 1).get(analysis)!,
          capturedCount.get(analysis)!, g.ends) : {}),
      });
    }
    for (const s of sorted) {
      let p = parentScope(s);
      while (p !== g.module && within(p, g.module) && !scopes.has(p)) p = parentScope(p);
      const parent = scopes.has(p) ? boxId(gi, p) : rootBox;
      const id = boxId(gi, s);
      boxes.set(id, {
        id, graph: gi, scope: s, type: moduleTypes.get(s) ?? "", parent, children: [], nodes: [],
        total: 0, failed: false, findings: 0,
      });
      if (parent) boxes.get(parent)!.children.push(id);
    }
    const names = new Set(g.nodes.map((n) => n.name));
    for (const n of g.nodes) {
      const s = boxScope(n);
      const box = scopes.has(s) ? boxId(gi, s) : rootBox;
      const id = nodeId(gi, n.name);
      const onLine = n.line ? byLine.get(lineKey(n.file, n.line)) ?? [] : [];
      nodes.set(id, {
        id, graph: gi, node: n, box,
        failed: n.op === "call_module" && failedModules.has(n.scope),
        findings: onLine,
      });
      if (box) {
        const b = boxes.get(box)!;
        b.nodes.push(id);
        if (!b.type && n.op !== "call_module") b.type = n.scope_type;
      }
      for (const dep of n.inputs ?? []) if (names.has(dep)) edges.push([nodeId(gi, dep), id]);
    }
  });

  for (const b of boxes.values()) {
    for (let cur: BoxInfo | undefined = b; cur; cur = cur.parent ? boxes.get(cur.parent) : undefined) {
      cur.total += b.nodes.length;
    }
  }
  for (const n of nodes.values()) {
    if (!n.failed) continue;
    for (let id = n.box; id; id = boxes.get(id)!.parent) boxes.get(id)!.failed = true;
  }
  for (const b of boxes.values()) {
    if (failedModules.has(b.scope) && b.nodes.length + b.children.length > 0) b.failed = true;
    b.findings = doc.findings.filter((f) => (f.scopes ?? []).some((s) => within(s.path, b.scope))).length;
  }
  return { doc, nodes, boxes, edges, total: nodes.size };
}

/** Boxes collapsed when a document is first drawn: all of them past the threshold. */
export function defaultCollapsed(model: GraphModel, threshold = COLLAPSE_THRESHOLD): Set<string> {
  if (model.total <= threshold) return new Set();
  const multi = model.doc.graphs.length > 1;
  // With several graphs, keep each graph's own box open so its scopes stay visible.
  return new Set([...model.boxes.values()].filter((b) => !(multi && b.parent === null && model.boxes.size > 1)).map((b) => b.id));
}

/** The outermost collapsed box containing ``box`` (itself included), or null. */
function collapsedAncestor(model: GraphModel, box: string | null, collapsed: Set<string>): string | null {
  let found: string | null = null;
  for (let id = box; id; id = model.boxes.get(id)!.parent) if (collapsed.has(id)) found = id;
  return found;
}

/** What is laid out for a set of collapsed boxes: vertices, expanded clusters and merged edges. */
export function visibleGraph(model: GraphModel, collapsed: Set<string>): VisibleGraph {
  const rep = new Map<string, string>();
  const vertices: VisibleVertex[] = [];
  const clusters: { id: string; parent: string | null }[] = [];
  const seenBox = new Set<string>();
  for (const b of model.boxes.values()) {
    const top = collapsedAncestor(model, b.id, collapsed);
    if (top === null) clusters.push({ id: b.id, parent: b.parent });
    else if (top === b.id && !seenBox.has(b.id)) {
      seenBox.add(b.id);
      vertices.push({ id: b.id, kind: "box", parent: b.parent });
    }
  }
  for (const n of model.nodes.values()) {
    const top = collapsedAncestor(model, n.box, collapsed);
    if (top === null) {
      rep.set(n.id, n.id);
      vertices.push({ id: n.id, kind: "node", parent: n.box });
    } else rep.set(n.id, top);
  }
  const seen = new Set<string>();
  const edges: [string, string][] = [];
  for (const [a, b] of model.edges) {
    const ra = rep.get(a)!;
    const rb = rep.get(b)!;
    const key = `${ra}\u0000${rb}`;
    if (ra === rb || seen.has(key)) continue;
    seen.add(key);
    edges.push([ra, rb]);
  }
  return { vertices, clusters, edges };
}

/** Node ids produced by a source line (file relative as in the document). */
export function nodesAtLine(model: GraphModel, file: string, line: number): string[] {
  const out: string[] = [];
  for (const n of model.nodes.values()) if (n.node.line === line && n.node.file === file) out.push(n.id);
  return out;
}

/** The vertex that shows ``id`` under the collapsed set: the node, or its outermost collapsed box. */
export function shownAs(model: GraphModel, id: string, collapsed: Set<string>): string {
  const n = model.nodes.get(id);
  if (!n) return id;
  return collapsedAncestor(model, n.box, collapsed) ?? id;
}
