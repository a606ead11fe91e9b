/**
 * The "FX Graph" webview: the bundled renderer (media/fxscope-graph.js, the same file the
 * Python package embeds in HTML) under a strict Content-Security-Policy. Node clicks reveal
 * the source line; moving the editor cursor highlights that line's nodes.
 */

import * as path from "node:path";
import * as vscode from "vscode";

/** The answer of the server's `fxscope.showGraph`: a text rendering, the graph document the
 * renderer draws (docs/graph-format.md: graphs, modules with their status, findings) and the URI
 * of the workspace folder whose root its file paths are relative to. */
export interface ShowGraphResult {
  text?: string;
  graph?: { target: string; root?: string; [key: string]: unknown };
  folder?: string;
}

function nonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

/** JSON that is safe inside a `<script type="application/json">` element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
}

/** Asks the server for a target's graph again (null: it has none now, or the server is gone). */
export type GraphRequester = (target: string, module: string | null) => Promise<ShowGraphResult | null | undefined>;

/** While the shown target is still being traced, its graph is asked for again this often. */
const PENDING_POLL_MS = 1000;

export class GraphPanel implements vscode.Disposable {
  private static current: GraphPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private root: vscode.Uri | undefined;
  private target: string | undefined;
  private module: string | null = null;
  private shown = "";
  private status = "";
  private timer: ReturnType<typeof setTimeout> | undefined;
  private requesting = false;
  private request: GraphRequester | undefined;

  /** The open panel, if any. */
  static get open(): GraphPanel | undefined {
    return GraphPanel.current;
  }

  private constructor(private readonly panel: vscode.WebviewPanel, private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.OutputChannel) {
    panel.onDidDispose(() => this.dispose(), null, this.disposables);
    panel.webview.onDidReceiveMessage((msg: { type?: string; file?: string; line?: number; count?: number }) => {
      if (msg.type === "reveal" && msg.file && msg.line) void this.reveal(msg.file, msg.line);
      else if (msg.type === "ready") this.sendCursor(vscode.window.activeTextEditor);
    }, null, this.disposables);
    vscode.window.onDidChangeTextEditorSelection((e) => this.sendCursor(e.textEditor), null, this.disposables);
    vscode.window.onDidChangeActiveTextEditor((e) => this.sendCursor(e), null, this.disposables);
  }

  /** Show ``result`` in the (single) graph panel; ``request`` asks for it again when it may have changed. */
  static show(extensionUri: vscode.Uri, result: ShowGraphResult, root: vscode.Uri | undefined, log: vscode.OutputChannel,
    module: string | null = null, request?: GraphRequester): GraphPanel {
    const title = `FX Graph: ${result.graph?.target ?? "?"}`;
    if (!GraphPanel.current) {
      const panel = vscode.window.createWebviewPanel("fxscope.graph", title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [vscode.Uri.joinPath(extensionUri, "media")],
      });
      GraphPanel.current = new GraphPanel(panel, extensionUri, log);
    }
    const current = GraphPanel.current;
    current.panel.title = title;
    current.root = result.graph?.root ? vscode.Uri.file(result.graph.root) : result.folder ? vscode.Uri.parse(result.folder) : root;
    current.panel.webview.html = current.html(result);
    current.target = result.graph?.target;
    current.module = module;
    current.request = request;
    current.remember(result);
    current.panel.reveal(vscode.ViewColumn.Beside, true);
    return current;
  }

  private remember(result: ShowGraphResult): void {
    this.shown = JSON.stringify(result.graph ?? null);
    this.status = String((result.graph as { status?: unknown } | undefined)?.status ?? "");
    if (this.status === "pending") this.refreshSoon(PENDING_POLL_MS);
  }

  /** The file (root-relative, posix) of the shown target: "m.py" for "m.py::Net". */
  get targetFile(): string | undefined {
    return this.target?.split("::")[0];
  }

  /** Whether ``uri`` is the shown target's file. */
  shows(uri: vscode.Uri): boolean {
    const file = this.targetFile;
    return !!file && this.relative(uri) === file;
  }

  /** Ask the server for the shown graph again after ``delayMs`` (coalesced) and redraw it when it changed:
   * a graph opened while its target traces fills in when the result arrives, and follows edits. */
  refreshSoon(delayMs = 300): void {
    if (!this.request || !this.target) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = undefined; void this.refresh(); }, delayMs);
  }

  private async refresh(): Promise<void> {
    const target = this.target;
    if (!this.request || !target || this.requesting) return;
    this.requesting = true;
    let result: ShowGraphResult | null | undefined;
    try {
      result = await this.request(target, this.module);
    } catch (e) {
      this.log.appendLine(`fxscope: the graph of ${target} could not be updated: ${String(e)}`);
      result = undefined; // e.g. the class is gone: keep the last drawing
    } finally {
      this.requesting = false;
    }
    if (GraphPanel.current !== this || target !== this.target || !result?.graph) return;
    const text = JSON.stringify(result.graph);
    if (text !== this.shown) void this.panel.webview.postMessage({ type: "graph", document: result.graph });
    this.remember(result);
  }

  private html(result: ShowGraphResult): string {
    const webview = this.panel.webview;
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "fxscope-graph.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "fxscope-graph.css"));
    const n = nonce();
    const csp = [`default-src 'none'`, `img-src ${webview.cspSource}`, `style-src ${webview.cspSource}`,
      `script-src 'nonce-${n}'`, `font-src ${webview.cspSource}`].join("; ");
    const data = result.graph ? { documents: [result.graph] } : { documents: [] };
    const empty = result.graph ? "" : `<pre class="fxscope-text">${(result.text ?? "no graph").replace(/[<&>]/g, (c) => `&#${c.charCodeAt(0)};`)}</pre>`;
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${style}">
<title>FX Graph</title></head>
<body class="fxscope-webview">${empty}
<div id="fxscope-graph"></div>
<script type="application/json" id="fxscope-data">${scriptJson(data)}</script>
<script nonce="${n}" src="${script}"></script>
</body></html>`;
  }

  /** Path of ``uri`` as the graph names files (relative to the root, posix). */
  private relative(uri: vscode.Uri): string | undefined {
    if (!this.root || uri.scheme !== "file") return undefined;
    const rel = path.relative(this.root.fsPath, uri.fsPath);
    return rel.startsWith("..") || path.isAbsolute(rel) ? uri.fsPath : rel.split(path.sep).join("/");
  }

  private sendCursor(editor: vscode.TextEditor | undefined): void {
    if (!editor || editor.document.languageId !== "python") return;
    const file = this.relative(editor.document.uri);
    if (!file) return;
    void this.panel.webview.postMessage({ type: "cursor", file, line: editor.selection.active.line + 1 });
  }

  private async reveal(file: string, line: number): Promise<void> {
    const uri = path.isAbsolute(file) || !this.root ? vscode.Uri.file(file) : vscode.Uri.joinPath(this.root, file);
    try {
      const doc = await vscode.workspace.openTextDocument(uri);
      const pos = new vscode.Position(Math.max(0, line - 1), 0);
      const column = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString())?.viewColumn ?? vscode.ViewColumn.One;
      await vscode.window.showTextDocument(doc, { viewColumn: column, selection: new vscode.Range(pos, pos), preserveFocus: false });
    } catch (e) {
      this.log.appendLine(`fxscope: cannot open ${uri.fsPath}: ${String(e)}`);
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    GraphPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
