import assert from "node:assert/strict";
import { test } from "node:test";

import { DEFAULTS, needsNotify, needsRestart, readSettings, serverOptions } from "../../src/settings";

const from = (values: Record<string, unknown>) => (key: string) => values[key];

test("defaults when nothing is set", () => {
  assert.deepEqual(readSettings(from({})), DEFAULTS);
});

test("settings map to the server's initializationOptions keys (fxscope.run -> traceOn)", () => {
  const s = readSettings(from({ enable: true, run: "onSave", debounce: 120.4, timeout: 12, workers: 3, "trace.server": "verbose", interpreter: ["/p"] }));
  const views = { watch: true, codeLens: true, inlayHints: false, logLevel: "info" };
  assert.deepEqual(serverOptions(s), { enable: true, traceOn: "save", debounce: 120, timeout: 12, workers: 3, ...views });
  assert.deepEqual(serverOptions(DEFAULTS), { enable: true, traceOn: "type", debounce: 50, timeout: 30, ...views }, "workers: null is left to the server");
  assert.equal(s.traceServer, "verbose");
  assert.deepEqual(s.interpreter, ["/p"]);
  assert.ok(!("interpreter" in serverOptions(s)), "the interpreter stays in the client");
});

test("invalid values fall back to the defaults instead of reaching the server", () => {
  const s = readSettings(from({ enable: "yes", run: "sometimes", debounce: -5, timeout: 0, workers: 1.5, "trace.server": "loud",
    watch: "no", codeLens: 1, inlayHints: null, logLevel: "chatty" }));
  assert.deepEqual(serverOptions(s), serverOptions(DEFAULTS));
  assert.equal(s.traceServer, "off");
  assert.equal(readSettings(from({ workers: 0 })).workers, null);
});

test("interpreter and enable restart the server; run/debounce/timeout/workers are sent live", () => {
  const only = (key: string) => (k: string) => k === key;
  assert.ok(needsRestart(only("fxscope.interpreter")));
  assert.ok(needsRestart(only("fxscope.enable")));
  assert.ok(!needsRestart(only("fxscope.debounce")));
  assert.ok(needsRestart(only("fxscope.watch")), "the file watcher starts with the folder");
  for (const k of ["fxscope.run", "fxscope.debounce", "fxscope.timeout", "fxscope.workers", "fxscope.codeLens",
    "fxscope.inlayHints", "fxscope.logLevel"]) assert.ok(needsNotify(only(k)), k);
  assert.ok(!needsNotify(only("fxscope.trace.server")));
});

test("lens, inlay-hint, watch and log-level settings reach the server", () => {
  const s = readSettings(from({ codeLens: false, inlayHints: true, watch: false, logLevel: "debug" }));
  const o = serverOptions(s);
  assert.equal(o.codeLens, false);
  assert.equal(o.inlayHints, true);
  assert.equal(o.watch, false);
  assert.equal(o.logLevel, "debug");
});
