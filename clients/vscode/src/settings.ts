/**
 * The extension's settings and what the server receives (no VS Code API: unit-tested under Node).
 *
 * `initializationOptions` and the answer to `workspace/configuration` for section `fxscope`
 * carry every key the server accepts (its ServerOptions): `enable`, `traceOn` ("type" | "save",
 * from `fxscope.run`), `debounce` (ms), `timeout` (s), `workers` (left out when null: the
 * server's default), `watch`, `codeLens`, `inlayHints` and `logLevel`. The interpreter and
 * `trace.server` stay in the client.
 */

export type RunMode = "onType" | "onSave";
export type TraceLevel = "off" | "messages" | "verbose";
export type LogLevel = "error" | "warning" | "info" | "debug";

export interface FxscopeSettings {
  enable: boolean;
  interpreter: string[];
  run: RunMode;
  debounce: number;
  timeout: number;
  workers: number | null;
  traceServer: TraceLevel;
  watch: boolean;
  codeLens: boolean;
  inlayHints: boolean;
  logLevel: LogLevel;
}

export interface ServerOptions {
  enable: boolean;
  traceOn: "type" | "save";
  debounce: number;
  timeout: number;
  workers?: number;
  watch: boolean;
  codeLens: boolean;
  inlayHints: boolean;
  logLevel: LogLevel;
}

export const DEFAULTS: FxscopeSettings = {
  enable: true, interpreter: [], run: "onType", debounce: 50, timeout: 30, workers: null, traceServer: "off",
  watch: true, codeLens: true, inlayHints: false, logLevel: "info",
};

/** Settings that need a new server process when they change (the rest are sent live). */
export const RESTART_KEYS = ["fxscope.enable", "fxscope.interpreter", "fxscope.watch"] as const;
/** Settings the running server is told about through `workspace/didChangeConfiguration`. */
export const LIVE_KEYS = ["fxscope.run", "fxscope.debounce", "fxscope.timeout", "fxscope.workers", "fxscope.codeLens",
  "fxscope.inlayHints", "fxscope.logLevel"] as const;

function num(value: unknown, fallback: number, min: number): number {
  return typeof value === "number" && Number.isFinite(value) && value >= min ? value : fallback;
}

const LOG_LEVELS: readonly LogLevel[] = ["error", "warning", "info", "debug"];

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

/** Read and validate settings; ``get(key)`` returns the value of `fxscope.<key>`. */
export function readSettings(get: (key: string) => unknown): FxscopeSettings {
  const interp = get("interpreter");
  const run = get("run");
  const trace = get("trace.server");
  const workers = get("workers");
  return {
    enable: typeof get("enable") === "boolean" ? (get("enable") as boolean) : DEFAULTS.enable,
    interpreter: Array.isArray(interp) ? interp.filter((s): s is string => typeof s === "string")
      : typeof interp === "string" && interp ? [interp] : [],
    run: run === "onSave" || run === "onType" ? run : DEFAULTS.run,
    debounce: Math.round(num(get("debounce"), DEFAULTS.debounce, 0)),
    timeout: num(get("timeout"), DEFAULTS.timeout, 1),
    workers: typeof workers === "number" && Number.isInteger(workers) && workers >= 1 ? workers : null,
    traceServer: trace === "messages" || trace === "verbose" ? trace : "off",
    watch: bool(get("watch"), DEFAULTS.watch),
    codeLens: bool(get("codeLens"), DEFAULTS.codeLens),
    inlayHints: bool(get("inlayHints"), DEFAULTS.inlayHints),
    logLevel: LOG_LEVELS.includes(get("logLevel") as LogLevel) ? (get("logLevel") as LogLevel) : DEFAULTS.logLevel,
  };
}

/** What the server receives as `initializationOptions` (and for `workspace/configuration`). */
export function serverOptions(s: FxscopeSettings): ServerOptions {
  const out: ServerOptions = {
    enable: s.enable, traceOn: s.run === "onSave" ? "save" : "type", debounce: s.debounce, timeout: s.timeout,
    watch: s.watch, codeLens: s.codeLens, inlayHints: s.inlayHints, logLevel: s.logLevel,
  };
  if (s.workers !== null) out.workers = s.workers;
  return out;
}

/** Whether a configuration change needs a restart (``affects(key)`` from the change event). */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return RESTART_KEYS.some((k) => affects(k));
}

/** Whether a configuration change should be sent to the running server. */
export function needsNotify(affects: (key: string) => boolean): boolean {
  return LIVE_KEYS.some((k) => affects(k));
}
