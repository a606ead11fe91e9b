import assert from "node:assert/strict";
import { test } from "node:test";

import { parseStatus, PROBLEMS_COMMAND, statusText, type FolderStatus, type ServerState } from "../../src/statusText";

const folder = (extra: Partial<FolderStatus> = {}): FolderStatus => ({
  folder: "file:///w/proj", worker: "ready", torch: "2.5.1", configError: null, lastDurationMs: 2500, total: 12, done: 12, ...extra,
});
const running = (extra: Partial<Extract<ServerState, { kind: "running" }>> = {}): ServerState => ({
  kind: "running", interpreter: "/w/.venv/bin/python", tracing: null, counts: null, folders: [folder()], ...extra,
});

test("before anything ran the item claims nothing", () => {
  const s = statusText(running());
  assert.equal(s.text, "fxscope");
  assert.doesNotMatch(s.text + s.tooltip, /no problems|No findings/);
  assert.equal(s.warning, false);
  assert.equal(s.command, PROBLEMS_COMMAND);
});

test("a running indicator with counts while tracing", () => {
  assert.equal(statusText(running({ tracing: { done: 3, total: 8 } })).text, "$(sync~spin) fxscope 3/8");
  const again = statusText(running({ tracing: { done: 1, total: 2 }, counts: { errors: 3, warnings: 0, others: 0 } }));
  assert.equal(again.text, "$(sync~spin) fxscope 1/2: 3 errors");
  assert.match(again.tooltip, /1 of 2 targets/);
});

test("findings are counted, neutrally: no warning look for ordinary findings", () => {
  const s = statusText(running({ counts: { errors: 3, warnings: 1, others: 0 } }));
  assert.equal(s.text, "fxscope: 3 errors, 1 warning");
  assert.equal(s.warning, false);
  assert.equal(statusText(running({ counts: { errors: 1, warnings: 0, others: 2 } })).text, "fxscope: 1 error, 2 notes");
  const clean = statusText(running({ counts: { errors: 0, warnings: 0, others: 0 } }));
  assert.equal(clean.text, "$(check) fxscope");
  assert.equal(clean.warning, false);
});

test("real trouble gets the warning look and is explained in the tooltip", () => {
  const failed = statusText(running({ counts: { errors: 0, warnings: 0, others: 0 },
    folders: [folder({ worker: "failed: torch cannot be imported by /p (No module named 'torch')" })] }));
  assert.equal(failed.text, "$(warning) fxscope");
  assert.ok(failed.warning);
  assert.match(failed.tooltip, /torch cannot be imported/);
  const config = statusText(running({ counts: { errors: 2, warnings: 0, others: 0 }, folders: [folder({ configError: "bad toml" })] }));
  assert.equal(config.text, "$(warning) fxscope: 2 errors");
  assert.match(config.tooltip, /pyproject\.toml: bad toml/);
});

test("the sandbox is shown in the tooltip, and a warning when it is off", () => {
  const on = statusText(running({ folders: [folder({ sandbox: { on: true, kind: "landlock", detail: "" } })] }));
  assert.match(on.tooltip, /sandbox landlock/);
  assert.equal(on.warning, false);
  const off = statusText(running({ folders: [folder({ sandbox: { on: false, kind: "none", detail: "landlock unavailable" } })] }));
  assert.ok(off.warning);
  assert.match(off.tooltip, /sandbox off: landlock unavailable/);
  assert.match(statusText(running()).tooltip, /torch 2\.5\.1/, "no sandbox entry (an older server): nothing said about it");
  assert.doesNotMatch(statusText(running()).tooltip, /sandbox/);
});

test("the server's fxscope.status answer is parsed, tolerating absent and malformed fields", () => {
  const parsed = parseStatus({ server: {}, folders: [
    { folder: "file:///a", worker: "ready", torch: "2.5.1", config_error: null, last_duration_ms: 1200, total: 4, done: 4,
      sandbox: { on: false, kind: "none", detail: "no user namespaces" } },
    { folder: "file:///b" },
    { nope: 1 },
    null,
  ] });
  assert.equal(parsed.length, 2);
  assert.deepEqual(parsed[0].sandbox, { on: false, kind: "none", detail: "no user namespaces" });
  assert.equal(parsed[0].lastDurationMs, 1200);
  assert.deepEqual(parsed[1], { folder: "file:///b", worker: "unknown", torch: "unknown", configError: null, lastDurationMs: null, total: 0, done: 0 });
  assert.deepEqual(parseStatus(null), []);
  assert.deepEqual(parseStatus({ folders: "x" }), []);
});
