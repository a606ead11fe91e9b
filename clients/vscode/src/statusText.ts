/** The status bar's words for each server state (pure, unit-tested). */

export type ServerState =
  | { kind: "disabled" }
  | { kind: "untrusted" }
  | { kind: "starting"; interpreter: string }
  | { kind: "missing"; interpreter: string }
  | { kind: "failed"; message: string }
  | { kind: "stopped" }
  | { kind: "tracing"; done: number; total: number }
  | { kind: "idle"; errors: number; warnings: number; others: number };

export interface StatusText {
  text: string;
  tooltip: string;
  error: boolean;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function statusText(state: ServerState): StatusText {
  switch (state.kind) {
    case "disabled":
      return { text: "$(circle-slash) fxscope", tooltip: "fxscope is disabled (fxscope.enable)", error: false };
    case "untrusted":
      return {
        text: "$(shield) fxscope: untrusted",
        tooltip: "fxscope imports this workspace's model code to trace it, so it runs only in a trusted workspace. Trust the folder to start it.",
        error: false,
      };
    case "starting":
      return { text: "$(sync~spin) fxscope", tooltip: `Starting fxscope serve with ${state.interpreter}`, error: false };
    case "missing":
      return { text: "$(error) fxscope: not installed", tooltip: `fxscope is not installed in ${state.interpreter}. Click for the output.`, error: true };
    case "failed":
      return { text: "$(error) fxscope", tooltip: `The fxscope server failed: ${state.message}. Click for the output.`, error: true };
    case "stopped":
      return { text: "$(debug-stop) fxscope", tooltip: "The fxscope server is not running. Click for the output.", error: false };
    case "tracing":
      return { text: `$(sync~spin) fxscope: tracing ${state.done}/${state.total}`, tooltip: `Tracing ${state.done} of ${state.total} targets. Click for the output.`, error: false };
    case "idle": {
      const parts = [state.errors ? plural(state.errors, "error") : "", state.warnings ? plural(state.warnings, "warning") : "", state.others ? plural(state.others, "note") : ""].filter(Boolean);
      const summary = parts.length ? parts.join(", ") : "no problems";
      return { text: state.errors ? `$(error) fxscope: ${summary}` : `$(check) fxscope: ${summary}`, tooltip: `Last result: ${summary}. Click for the output.`, error: state.errors > 0 };
    }
  }
}

/** n/N from an LSP `$/progress` report message such as "3/8" or "3 of 8 targets". */
export function parseProgress(message: string | undefined, percentage: number | undefined): { done: number; total: number } | null {
  const m = /(\d+)\s*(?:\/|of)\s*(\d+)/.exec(message ?? "");
  if (m) return { done: Number(m[1]), total: Number(m[2]) };
  if (typeof percentage === "number") return { done: Math.round(percentage), total: 100 };
  return null;
}
