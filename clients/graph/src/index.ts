/**
 * Entry of the bundled renderer (`fxscope-graph.js`, global `FxscopeGraph`).
 *
 * The same bundle runs in two hosts:
 * - a self-contained HTML file (`fxscope graph --format html`, `fxscope check --html-report`):
 *   `<script type="application/json" id="fxscope-data">` holds `{documents, anchors}`; each
 *   `details.fxscope-target[data-doc=i]` gets document i drawn when opened, and nodes link to
 *   the embedded source snippets (`#src-<anchor>-L<line>`);
 * - the VS Code webview (`acquireVsCodeApi` exists): clicks post `{type: "reveal", file, line}`
 *   and `{type: "cursor", file, line}` messages highlight that line's nodes.
 */

import { mount, type GraphView, type MountOptions } from "./render";
import type { GraphDocument } from "./types";

export { mount };
export { buildModel, visibleGraph, defaultCollapsed, graphAnalyses, withAnalysis, COLLAPSE_THRESHOLD } from "./model";
export type { GraphDocument, GraphView, MountOptions };

interface PageData {
  documents: GraphDocument[];
  anchors?: Record<string, string>;
  collapseThreshold?: number;
}

interface VsCodeApi {
  postMessage(message: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

function readData(): PageData | null {
  const script = document.getElementById("fxscope-data");
  if (!script?.textContent) return null;
  return JSON.parse(script.textContent) as PageData;
}

function openTarget(hash: string): void {
  if (!hash.startsWith("#")) return;
  const target = document.getElementById(decodeURIComponent(hash.slice(1)));
  if (!target) return;
  for (let p: HTMLElement | null = target; p; p = p.parentElement) if (p instanceof HTMLDetailsElement) p.open = true;
  target.scrollIntoView({ block: "center" });
}

function bootPage(data: PageData): Map<number, GraphView> {
  const views = new Map<number, GraphView>();
  const anchors = data.anchors ?? {};
  const options: MountOptions = {
    collapseThreshold: data.collapseThreshold,
    link: (file, line) => (file in anchors ? `#src-${anchors[file]}-L${line}` : null),
  };
  const show = (details: HTMLElement): void => {
    const index = Number(details.dataset.doc);
    const host = details.querySelector<HTMLElement>(".fxscope-graph");
    if (!host || views.has(index) || !data.documents[index]) return;
    views.set(index, mount(host, data.documents[index], options));
  };
  for (const details of document.querySelectorAll<HTMLDetailsElement>("details.fxscope-target")) {
    if (details.open) show(details);
    details.addEventListener("toggle", () => { if (details.open) show(details); });
  }
  window.addEventListener("hashchange", () => openTarget(location.hash));
  if (location.hash) openTarget(location.hash);
  document.body.dataset.fxscopeReady = "true";
  return views;
}

function bootWebview(data: PageData): GraphView | null {
  const vscode = acquireVsCodeApi();
  const host = document.getElementById("fxscope-graph");
  if (!host) return null;
  let view: GraphView | null = null;
  let cursor: { file: string; line: number } | null = null;
  // A new document for the same target (its result arrived, or changed) keeps the reader's
  // choices: the analysis shown, the findings column, the highlighted line.
  const draw = (doc: GraphDocument): void => {
    const keep = view && view.model.doc.target === doc.target ? { analysis: view.analysis, sideOpen: view.sideOpen } : {};
    view?.dispose();
    view = mount(host, doc, {
      collapseThreshold: data.collapseThreshold,
      onReveal: (file, line) => vscode.postMessage({ type: "reveal", file, line }),
      ...keep,
    });
    if (cursor) view.highlightLine(cursor.file, cursor.line);
    document.body.dataset.fxscopeStatus = doc.status;
  };
  if (data.documents[0]) draw(data.documents[0]);
  window.addEventListener("message", (ev: MessageEvent) => {
    const msg = ev.data as { type?: string; file?: string; line?: number; document?: GraphDocument };
    if (msg.type === "cursor" && msg.file && msg.line && view) {
      cursor = { file: msg.file, line: msg.line };
      const count = view.highlightLine(msg.file, msg.line);
      vscode.postMessage({ type: "highlighted", file: msg.file, line: msg.line, count });
    } else if (msg.type === "graph" && msg.document) draw(msg.document);
  });
  vscode.postMessage({ type: "ready" });
  document.body.dataset.fxscopeReady = "true";
  return view;
}

function boot(): void {
  const data = readData();
  if (!data) return;
  if (typeof acquireVsCodeApi === "function") bootWebview(data);
  else bootPage(data);
}

if (typeof document !== "undefined") {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
}
