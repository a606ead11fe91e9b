/**
 * The status bar item's words for each server state (pure, unit-tested).
 *
 * Like the status items of Pylance, ruff or rust-analyzer it is neutral for ordinary findings:
 * "fxscope" before anything ran (no claim of "no problems"), a spinning icon while tracing,
 * "fxscope: 3 errors, 1 warning" after a run, a check mark for a run without findings. The
 * warning look (icon and background) is kept for real trouble: fxscope or torch missing in the
 * interpreter, the server or its worker failing, an invalid configuration, the sandbox off.
 */

/** One folder of the server's `fxscope.status` answer (fields absent in older servers are tolerated). */
export interface FolderStatus {
  folder: string;
  worker: string;
  torch: string;
  configError: string | null;
  lastDurationMs: number | null;
  total: number;
  done: number;
  sandbox?: { on: boolean; kind: string; detail: string };
}

export interface Counts {
  errors: number;
  warnings: number;
  others: number;
}

export type ServerState =
  | { kind: "disabled" }
  | { kind: "untrusted" }
  | { kind: "starting"; interpreter: string }
  | { kind: "missing"; interpreter: string; what: string }
  | { kind: "failed"; message: string }
  | { kind: "stopped" }
  | {
    kind: "running";
    interpreter: string;
    /** Targets traced of the current run, or null when nothing runs. */
    tracing: { done: number; total: number } | null;
    /** fxscope's diagnostics, or null before the first run ended (nothing is claimed yet). */
    counts: Counts | null;
    folders: FolderStatus[];
  };

export interface StatusText {
  text: string;
  /** Markdown (with theme icons). */
  tooltip: string;
  /** Show the warning look: something is wrong with the setup, not with the user's code. */
  warning: boolean;
  /** The command a click runs. */
  command: string;
}

export const PROBLEMS_COMMAND = "workbench.actions.view.problems";

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** "3 errors, 1 warning" ("" for none). */
export function countsText(c: Counts): string {
  return [c.errors ? plural(c.errors, "error") : "", c.warnings ? plural(c.warnings, "warning") : "",
    c.others ? plural(c.others, "note") : ""].filter(Boolean).join(", ");
}

function name(uri: string): string {
  const trimmed = uri.replace(/\/+$/, "");
  return decodeURIComponent(trimmed.slice(trimmed.lastIndexOf("/") + 1)) || uri;
}

function md(text: string): string {
  return text.replace(/([\\`*_{}[\]<>()#+!|~-])/g, "\\$1");
}

/** What is wrong with one folder's setup (empty: nothing). */
export function folderTrouble(f: FolderStatus): string[] {
  const out: string[] = [];
  if (f.worker.startsWith("failed")) out.push(`worker ${f.worker}`);
  if (f.configError) out.push(`pyproject.toml: ${f.configError}`);
  if (f.sandbox && !f.sandbox.on) out.push(`sandbox off${f.sandbox.detail ? `: ${f.sandbox.detail}` : ""}`);
  return out;
}

function folderLine(f: FolderStatus): string {
  const parts = [md(`torch ${f.torch}`), md(`worker ${f.worker.startsWith("failed") ? "failed" : f.worker}`)];
  if (f.sandbox) parts.push(f.sandbox.on ? md(`sandbox ${f.sandbox.kind}`) : "$(warning) sandbox off");
  if (f.total) parts.push(md(`${f.done}/${f.total} targets`));
  if (f.lastDurationMs !== null) parts.push(md(`last run ${(f.lastDurationMs / 1000).toFixed(1)} s`));
  const lines = [`**${md(name(f.folder))}**: ${parts.join(" · ")}`];
  for (const t of folderTrouble(f)) lines.push(`$(warning) ${md(t)}`);
  return lines.join("  \n");
}

export function statusText(state: ServerState): StatusText {
  const output = "fxscope.showOutput";
  switch (state.kind) {
    case "disabled":
      return { text: "$(circle-slash) fxscope", tooltip: "fxscope is disabled (`fxscope.enable`).", warning: false, command: output };
    case "untrusted":
      return {
        text: "$(shield) fxscope: untrusted",
        tooltip: "fxscope imports this workspace's model code to trace it, so it runs only in a trusted workspace. Trust the folder to start it.",
        warning: false,
        command: "workbench.trust.manage",
      };
    case "starting":
      return { text: "$(sync~spin) fxscope", tooltip: `Starting \`fxscope serve\` with ${md(state.interpreter)}`, warning: false, command: output };
    case "missing":
      return {
        text: `$(warning) fxscope: ${state.what}`,
        tooltip: `${md(state.interpreter)}: ${md(state.what)}. Click to select another interpreter.`,
        warning: true,
        command: "fxscope.selectInterpreter",
      };
    case "failed":
      return { text: "$(warning) fxscope", tooltip: `The fxscope server failed: ${md(state.message)}. Click for the output.`, warning: true, command: output };
    case "stopped":
      return { text: "$(debug-stop) fxscope", tooltip: "The fxscope server is not running. Click for the output.", warning: false, command: output };
    case "running": {
      const trouble = state.folders.some((f) => folderTrouble(f).length > 0);
      const summary = state.counts ? countsText(state.counts) : "";
      let text: string;
      let head: string;
      if (state.tracing) {
        const n = state.tracing.total ? ` ${state.tracing.done}/${state.tracing.total}` : "";
        text = `$(sync~spin) fxscope${n}${summary ? `: ${summary}` : ""}`;
        head = state.tracing.total ? `Tracing: ${state.tracing.done} of ${state.tracing.total} targets done.` : "Tracing.";
      } else if (!state.counts) {
        text = "fxscope";
        head = "No results yet.";
      } else {
        text = summary ? `fxscope: ${summary}` : "$(check) fxscope";
        head = summary ? `${summary}.` : "No findings.";
      }
      if (trouble) text = `$(warning) ${text.replace(/^\$\(check\) /, "")}`;
      const lines = [head, ...state.folders.map(folderLine), `Interpreter: ${md(state.interpreter)}`,
        "Click to open the Problems panel."];
      return { text, tooltip: lines.join("\n\n"), warning: trouble, command: PROBLEMS_COMMAND };
    }
  }
}

function str(v: unknown, fallback = ""): string {
  return typeof v === "string" ? v : fallback;
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** The folders of a `fxscope.status` answer (malformed entries are skipped, absent fields tolerated). */
export function parseStatus(value: unknown): FolderStatus[] {
  const folders = (value as { folders?: unknown } | null)?.folders;
  if (!Array.isArray(folders)) return [];
  const out: FolderStatus[] = [];
  for (const f of folders as Record<string, unknown>[]) {
    if (!f || typeof f !== "object" || typeof f.folder !== "string") continue;
    const entry: FolderStatus = {
      folder: f.folder, worker: str(f.worker, "unknown"), torch: str(f.torch, "unknown"),
      configError: typeof f.config_error === "string" && f.config_error ? f.config_error : null,
      lastDurationMs: num(f.last_duration_ms), total: num(f.total) ?? 0, done: num(f.done) ?? 0,
    };
    const sb = f.sandbox as Record<string, unknown> | undefined;
    if (sb && typeof sb === "object" && typeof sb.on === "boolean") {
      entry.sandbox = { on: sb.on, kind: str(sb.kind, "none"), detail: str(sb.detail) };
    }
    out.push(entry);
  }
  return out;
}

/** n/N from an LSP `$/progress` report message such as "3/8" or "3 of 8 targets". */
export function parseProgress(message: string | undefined, percentage: number | undefined): { done: number; total: number } | null {
  const m = /(\d+)\s*(?:\/|of)\s*(\d+)/.exec(message ?? "");
  if (m) return { done: Number(m[1]), total: Number(m[2]) };
  if (typeof percentage === "number") return { done: Math.round(percentage), total: 100 };
  return null;
}
