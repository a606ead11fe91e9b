/**
 * Draw a graph document as SVG: a layered DAG (dagre) with nodes boxed by module scope.
 *
 * Boxes collapse and expand on click; failed modules and lines with findings are marked;
 * every node has a tooltip (op, target, scope, source line). A node links to its source
 * line (``options.link`` gives an href) and/or reports clicks (``options.onReveal``).
 */

import dagre from "@dagrejs/dagre";

import {
  buildModel, defaultCollapsed, graphAnalyses, nodesAtLine, shortType, shownAs, visibleGraph, withAnalysis,
  type BoxInfo, type GraphModel, type NodeInfo,
} from "./model";
import type { Finding, GraphDocument } from "./types";

const SVG = "http://www.w3.org/2000/svg";
const CHAR_W = 7;
const NODE_H = 36;
const LABEL_MAX = 34;

export interface MountOptions {
  /** href for a source location (HTML file), or null for none. */
  link?: (file: string, line: number) => string | null;
  /** Called when a node or finding with a source location is clicked (webview). */
  onReveal?: (file: string, line: number) => void;
  /** Graphs with more nodes start collapsed (default 250). */
  collapseThreshold?: number;
  /** Which graphs to draw when the document has several kinds (an analysis's name, "fx" for
   * fxscope's own; default: the graphs another analysis captured where the target has them). */
  analysis?: string;
  /** Whether the findings column is shown (default: when the container is at least
   * {@link SIDE_MIN_WIDTH} pixels wide, so that the canvas keeps the space at a narrow split). */
  sideOpen?: boolean;
}

/** Below this container width the findings column starts collapsed. */
export const SIDE_MIN_WIDTH = 760;

/** The switch's label of the graphs of ``analysis``. */
const analysisLabel = (analysis: string): string => (analysis === "fx" ? "FX graph" : `${analysis} graphs`);

export interface GraphView {
  readonly model: GraphModel;
  /** The analysis whose graphs are drawn ("fx", or the analysis that captured them). */
  readonly analysis: string;
  /** Whether the findings column is shown. */
  readonly sideOpen: boolean;
  /** Show or hide the findings column. */
  setSide(open: boolean): void;
  /** Highlight the nodes of a source line; returns how many nodes that line produced. */
  highlightLine(file: string, line: number): number;
  expandAll(): void;
  collapseAll(): void;
  toggle(boxId: string): void;
  dispose(): void;
}

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, parent?: Element): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

function html<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent?: Element, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function clip(text: string, max = LABEL_MAX): string {
  return text.length > max ? text.slice(0, max - 1) + "\u2026" : text;
}

function shortTarget(n: NodeInfo): string {
  const t = n.node.target;
  if (n.node.op === "call_function") return t.replace(/^(_operator|builtins|torch\._C\._nn|torch\.nn\.functional)\./, "");
  return t;
}

function nodeLines(n: NodeInfo): [string, string] {
  return [clip(n.node.name), clip(`${n.node.op} ${shortTarget(n)}`)];
}

function boxLines(b: BoxInfo, collapsed: boolean): [string, string] {
  const name = b.label ?? (b.scope || "<root>");
  const type = b.type && !b.label ? ` \u00b7 ${shortType(b.type)}` : "";
  const title = `${collapsed ? "\u25b8" : "\u25be"} ${name}${type}${b.note && !collapsed ? ` \u00b7 ends: ${b.note}` : ""}`;
  return [clip(title, b.note ? 96 : 48), `${b.total} nodes${b.failed ? " \u00b7 failed" : ""}${b.findings ? ` \u00b7 ${b.findings} finding${b.findings > 1 ? "s" : ""}` : ""}`];
}

function where(file?: string, line?: number): string {
  return file ? `${file}:${line ?? ""}` : "(no source line)";
}

function nodeTooltip(n: NodeInfo): string {
  const lines = [
    `${n.node.name}`,
    `op: ${n.node.op}`,
    `target: ${n.node.target}`,
    `scope: ${n.node.scope || "<root>"} (${n.node.scope_type})`,
    `source: ${where(n.node.file, n.node.line)}`,
  ];
  if (n.failed) lines.push("this module's forward failed to trace; it is kept as a leaf");
  for (const f of n.findings) lines.push(`${f.code}: ${f.message}`);
  return lines.join("\n");
}

function boxTooltip(b: BoxInfo): string {
  return [b.label ?? `${b.scope || "<root>"} (${b.type || "module"})`, b.note ?? "", `${b.total} nodes`, b.failed ? "contains a module that failed to trace" : "",
    b.findings ? `${b.findings} finding(s) in this module` : "", "click to collapse or expand"].filter(Boolean).join("\n");
}

/**
 * Draw ``raw`` into ``container`` (emptied first). A document with graphs of several analyses
 * gets a switch between them (the view returned follows the switch).
 */
export function mount(container: HTMLElement, raw: GraphDocument, options: MountOptions = {}): GraphView {
  const kinds = graphAnalyses(raw);
  let current: GraphView;
  const open = (analysis: string | undefined, sideOpen: boolean | undefined): GraphView =>
    mountAnalysis(container, raw, { ...options, analysis, sideOpen }, kinds, (next) => {
      const highlighted = lastHighlight;
      current.dispose();
      current = open(next, current.sideOpen);
      if (highlighted) current.highlightLine(highlighted.file, highlighted.line);
    });
  let lastHighlight: { file: string; line: number } | null = null;
  current = open(options.analysis && kinds.includes(options.analysis) ? options.analysis : kinds[0], options.sideOpen);
  return {
    get model() { return current.model; },
    get analysis() { return current.analysis; },
    get sideOpen() { return current.sideOpen; },
    setSide: (o) => current.setSide(o),
    highlightLine: (file, line) => { lastHighlight = { file, line }; return current.highlightLine(file, line); },
    expandAll: () => current.expandAll(),
    collapseAll: () => current.collapseAll(),
    toggle: (id) => current.toggle(id),
    dispose: () => current.dispose(),
  };
}

function mountAnalysis(container: HTMLElement, raw: GraphDocument, options: MountOptions, kinds: string[],
  switchTo: (analysis: string) => void): GraphView {
  const analysis = options.analysis ?? "fx";
  const model = buildModel(withAnalysis(raw, options.analysis));
  const doc = model.doc;
  let collapsed = defaultCollapsed(model, options.collapseThreshold);
  let highlighted: { file: string; line: number } | null = null;

  container.replaceChildren();
  container.classList.add("fxg");
  const toolbar = html("div", "fxg-toolbar", container);
  const title = html("span", "fxg-title", toolbar, `${doc.target}${doc.module ? ` \u203a ${doc.module}` : ""}`);
  title.title = doc.target;
  html("span", `fxg-status fxg-status-${doc.status}`, toolbar, doc.status);
  if (kinds.length > 1) {
    const group = html("span", "fxg-analyses", toolbar);
    for (const kind of kinds) {
      const b = html("button", `fxg-btn fxg-analysis${kind === analysis ? " fxg-active" : ""}`, group, analysisLabel(kind));
      b.dataset.analysis = kind;
      b.setAttribute("aria-pressed", String(kind === analysis));
      if (kind !== analysis) b.addEventListener("click", () => switchTo(kind));
    }
  }
  const counts = html("span", "fxg-counts", toolbar);
  const expandBtn = html("button", "fxg-btn", toolbar, "Expand all");
  const collapseBtn = html("button", "fxg-btn", toolbar, "Collapse all");
  const fitBtn = html("button", "fxg-btn", toolbar, "Fit");
  const sideBtn = html("button", "fxg-btn fxg-side-toggle", toolbar);
  const body = html("div", "fxg-body", container);
  const canvas = html("div", "fxg-canvas", body);
  const side = html("div", "fxg-side", body);
  let sideOpen = options.sideOpen ?? (container.clientWidth === 0 || container.clientWidth >= SIDE_MIN_WIDTH);
  const showSide = (open: boolean): void => {
    sideOpen = open;
    body.classList.toggle("fxg-side-hidden", !open);
    const n = doc.findings.length;
    sideBtn.textContent = `${open ? "Hide findings" : "Findings"}${n ? ` (${n})` : ""}`;
    sideBtn.setAttribute("aria-expanded", String(open));
    sideBtn.title = open ? "Give the canvas the whole width" : "Show the findings column";
  };
  showSide(sideOpen);
  if (model.total === 0) {
    const note = doc.status === "pending" ? "Waiting for this target's trace: the graph appears when its result arrives."
      : `No graph (${doc.status}).${doc.findings.length ? " The findings say why." : ""}`;
    html("div", "fxg-empty", canvas, note);
  }
  const svg = el("svg", { class: "fxg-svg", role: "img", "aria-label": `FX graph of ${doc.target}` }, canvas);
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "fxg-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "fxg-arrowhead" }, marker);
  const viewport = el("g", { class: "fxg-viewport" }, svg);

  let scale = 1;
  let tx = 0;
  let ty = 0;
  let size = { width: 0, height: 0 };
  const applyTransform = (): void => viewport.setAttribute("transform", `translate(${tx},${ty}) scale(${scale})`);

  /** Fit the drawing into the canvas; ``readable`` keeps text legible (scale >= 0.5, top aligned). */
  const fit = (readable = true): void => {
    const w = canvas.clientWidth || 800;
    const h = canvas.clientHeight || 600;
    scale = Math.min(1, w / Math.max(size.width, 1), h / Math.max(size.height, 1));
    scale = Math.max(scale, readable ? 0.5 : 0.05);
    tx = Math.max(0, (w - size.width * scale) / 2);
    ty = Math.max(0, (h - size.height * scale) / 2);
    applyTransform();
  };

  const reveal = (file?: string, line?: number): void => {
    if (file && line && options.onReveal) options.onReveal(file, line);
  };

  const linkWrap = (parent: Element, file?: string, line?: number): Element => {
    const href = file && line && options.link ? options.link(file, line) : null;
    if (!href) return parent;
    return el("a", { href, class: "fxg-link" }, parent);
  };

  const renderFindings = (): void => {
    side.replaceChildren();
    html("h3", "fxg-side-title", side, doc.findings.length ? `Findings (${doc.findings.length})` : "No findings");
    const list = html("ul", "fxg-findings", side);
    for (const f of doc.findings) renderFinding(list, f);
    const failed = doc.modules.filter((m) => m.status === "failed");
    if (failed.length) {
      html("h3", "fxg-side-title", side, "Modules that failed to trace");
      const ul = html("ul", "fxg-failed", side);
      for (const m of failed) html("li", "", ul, `${m.path || "<root>"} (${shortType(m.type)})`);
    }
  };

  const renderFinding = (list: HTMLElement, f: Finding): void => {
    const li = html("li", `fxg-finding fxg-sev-${f.severity}`, list);
    const href = f.file && f.line && options.link ? options.link(f.file, f.line) : null;
    const head = href ? html("a", "fxg-finding-loc", li) : html("span", "fxg-finding-loc", li);
    if (href) (head as HTMLAnchorElement).href = href;
    head.textContent = `${f.code} ${where(f.file, f.line)}`;
    if (options.onReveal && f.file && f.line) {
      head.addEventListener("click", (ev) => { if (!href) ev.preventDefault(); reveal(f.file, f.line); });
      head.classList.add("fxg-clickable");
    }
    html("div", "fxg-finding-msg", li, f.message);
    const scopes = (f.scopes ?? []).map((s) => s.path || "<root>");
    if (scopes.length) html("div", "fxg-finding-scopes", li, `in: ${scopes.slice(0, 6).join(", ")}${scopes.length > 6 ? ", \u2026" : ""}`);
  };

  const draw = (): void => {
    const vis = visibleGraph(model, collapsed);
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, edgesep: 8, marginx: 16, marginy: 16 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const c of vis.clusters) g.setNode(c.id, {});
    for (const c of vis.clusters) if (c.parent) g.setParent(c.id, c.parent);
    for (const v of vis.vertices) {
      const lines = v.kind === "node" ? nodeLines(model.nodes.get(v.id)!) : boxLines(model.boxes.get(v.id)!, true);
      const width = Math.max(...lines.map((l) => l.length)) * CHAR_W + 20;
      g.setNode(v.id, { width, height: NODE_H });
      if (v.parent) g.setParent(v.id, v.parent);
    }
    for (const [a, b] of vis.edges) g.setEdge(a, b);
    dagre.layout(g);
    const graphLabel = g.graph();
    size = { width: graphLabel.width ?? 0, height: graphLabel.height ?? 0 };

    viewport.replaceChildren();
    const boxLayer = el("g", { class: "fxg-boxes" }, viewport);
    const edgeLayer = el("g", { class: "fxg-edges" }, viewport);
    const nodeLayer = el("g", { class: "fxg-nodes" }, viewport);

    const depth = (id: string): number => { let d = 0; for (let p = model.boxes.get(id)!.parent; p; p = model.boxes.get(p)!.parent) d++; return d; };
    const clusters = [...vis.clusters].sort((a, b) => depth(a.id) - depth(b.id));
    for (const c of clusters) {
      const box = model.boxes.get(c.id)!;
      const lay = g.node(c.id);
      if (!lay) continue;
      const cls = ["fxg-box", box.failed ? "fxg-failed" : "", box.findings ? "fxg-has-findings" : "", box.compiled ? "fxg-compiled" : ""].filter(Boolean).join(" ");
      const grp = el("g", { class: cls, "data-box": c.id, "data-scope": box.scope }, boxLayer);
      if (box.note) grp.setAttribute("data-ends", box.note);
      el("title", {}, grp).textContent = boxTooltip(box);
      el("rect", { x: lay.x - lay.width / 2, y: lay.y - lay.height / 2 - 14, width: lay.width, height: lay.height + 14, rx: 6 }, grp);
      const label = el("text", { x: lay.x - lay.width / 2 + 8, y: lay.y - lay.height / 2 - 1, class: "fxg-box-label" }, grp);
      label.textContent = boxLines(box, false)[0];
      grp.addEventListener("click", (ev) => { ev.stopPropagation(); view.toggle(c.id); });
    }

    for (const [a, b] of vis.edges) {
      const e = g.edge(a, b);
      if (!e || !e.points?.length) continue;
      const d = e.points.map((p: { x: number; y: number }, i: number) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
      el("path", { d, class: "fxg-edge", "marker-end": "url(#fxg-arrow)", "data-from": a, "data-to": b }, edgeLayer);
    }

    for (const v of vis.vertices) {
      const lay = g.node(v.id);
      const x = lay.x - lay.width / 2;
      const y = lay.y - lay.height / 2;
      if (v.kind === "box") {
        const box = model.boxes.get(v.id)!;
        const cls = ["fxg-vertex", "fxg-collapsed", box.failed ? "fxg-failed" : "", box.findings ? "fxg-has-findings" : "", box.compiled ? "fxg-compiled" : ""].filter(Boolean).join(" ");
        const grp = el("g", { class: cls, "data-box": v.id, "data-scope": box.scope, transform: `translate(${x},${y})` }, nodeLayer);
        el("title", {}, grp).textContent = boxTooltip(box);
        el("rect", { width: lay.width, height: lay.height, rx: 6 }, grp);
        const [l1, l2] = boxLines(box, true);
        el("text", { x: 10, y: 15, class: "fxg-l1" }, grp).textContent = l1;
        el("text", { x: 10, y: 29, class: "fxg-l2" }, grp).textContent = l2;
        grp.addEventListener("click", (ev) => { ev.stopPropagation(); view.toggle(v.id); });
        continue;
      }
      const info = model.nodes.get(v.id)!;
      const n = info.node;
      const cls = ["fxg-vertex", "fxg-node", `fxg-op-${n.op}`, info.failed ? "fxg-failed" : "", info.findings.length ? "fxg-finding" : ""].filter(Boolean).join(" ");
      const outer = linkWrap(nodeLayer, n.file, n.line);
      const grp = el("g", {
        class: cls, "data-node": n.name, "data-id": v.id, "data-op": n.op, "data-scope": n.scope,
        "data-file": n.file ?? "", "data-line": n.line ?? "", transform: `translate(${x},${y})`,
      }, outer);
      el("title", {}, grp).textContent = nodeTooltip(info);
      el("rect", { width: lay.width, height: lay.height, rx: 4 }, grp);
      const [l1, l2] = nodeLines(info);
      el("text", { x: 10, y: 15, class: "fxg-l1" }, grp).textContent = l1;
      el("text", { x: 10, y: 29, class: "fxg-l2" }, grp).textContent = l2;
      if (options.onReveal && n.file && n.line) {
        grp.classList.add("fxg-clickable");
        grp.addEventListener("click", (ev) => { ev.stopPropagation(); reveal(n.file, n.line); });
      }
    }
    svg.setAttribute("data-width", String(Math.round(size.width)));
    svg.setAttribute("data-height", String(Math.round(size.height)));
    svg.setAttribute("data-vertices", String(vis.vertices.length));
    counts.textContent = `${model.total} nodes \u00b7 ${vis.vertices.length} shown \u00b7 ${collapsed.size} collapsed`;
    if (highlighted) applyHighlight(highlighted.file, highlighted.line);
  };

  const applyHighlight = (file: string, line: number): number => {
    for (const e of viewport.querySelectorAll(".fxg-hl")) e.classList.remove("fxg-hl");
    const ids = nodesAtLine(model, file, line);
    const shown = new Set(ids.map((id) => shownAs(model, id, collapsed)));
    for (const id of shown) {
      const sel = model.nodes.has(id) ? `[data-id="${CSS.escape(id)}"]` : `.fxg-collapsed[data-box="${CSS.escape(id)}"]`;
      for (const e of viewport.querySelectorAll(sel)) e.classList.add("fxg-hl");
    }
    return ids.length;
  };

  // Pan with the mouse, zoom with the wheel (around the pointer).
  let drag: { x: number; y: number; tx: number; ty: number } | null = null;
  const onDown = (ev: MouseEvent): void => { if (ev.button === 0) drag = { x: ev.clientX, y: ev.clientY, tx, ty }; };
  const onMove = (ev: MouseEvent): void => {
    if (!drag) return;
    tx = drag.tx + ev.clientX - drag.x;
    ty = drag.ty + ev.clientY - drag.y;
    moved = true;
    applyTransform();
  };
  const onUp = (): void => { drag = null; };
  const onWheel = (ev: WheelEvent): void => {
    ev.preventDefault();
    const rect = svg.getBoundingClientRect();
    const px = ev.clientX - rect.left;
    const py = ev.clientY - rect.top;
    const k = Math.exp(-ev.deltaY * 0.0015);
    const next = Math.min(4, Math.max(0.05, scale * k));
    tx = px - ((px - tx) * next) / scale;
    ty = py - ((py - ty) * next) / scale;
    scale = next;
    moved = true;
    applyTransform();
  };
  // The canvas follows the panel's size: re-fit while the user has not moved the drawing, else
  // bring it back when a resize left it outside the canvas (never an empty canvas).
  let moved = false;
  const onResize = (): void => {
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    if (!w || !h) return; // hidden: fitted again when shown
    const outside = tx > w - 20 || ty > h - 20 || tx + size.width * scale < 20 || ty + size.height * scale < 20;
    if (!moved || outside) {
      moved = false;
      fit();
    }
  };
  const resizeObserver = typeof ResizeObserver === "function" ? new ResizeObserver(onResize) : null;
  resizeObserver?.observe(canvas);
  svg.addEventListener("mousedown", onDown);
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  svg.addEventListener("wheel", onWheel, { passive: false });

  const view: GraphView = {
    model,
    analysis,
    get sideOpen() { return sideOpen; },
    setSide(open) { showSide(open); },
    highlightLine(file, line) {
      highlighted = { file, line };
      return applyHighlight(file, line);
    },
    expandAll() { collapsed = new Set(); draw(); fit(); },
    collapseAll() { collapsed = new Set(model.boxes.keys()); draw(); fit(); },
    toggle(id) {
      const next = new Set(collapsed);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      collapsed = next;
      draw();
      applyTransform();
    },
    dispose() {
      resizeObserver?.disconnect();
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
      container.replaceChildren();
    },
  };
  expandBtn.addEventListener("click", () => view.expandAll());
  collapseBtn.addEventListener("click", () => view.collapseAll());
  fitBtn.addEventListener("click", () => { moved = false; fit(false); });
  sideBtn.addEventListener("click", () => showSide(!sideOpen));

  renderFindings();
  draw();
  fit();
  return view;
}
