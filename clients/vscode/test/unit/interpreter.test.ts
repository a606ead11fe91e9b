import assert from "node:assert/strict";
import { test } from "node:test";

import { chooseInterpreter, missingMessage, probeArgs, sameInterpreter, serverCommand, substitute } from "../../src/interpreter";

test("the fxscope.interpreter setting wins over the Python extension", () => {
  const choice = chooseInterpreter({ setting: ["${workspaceFolder}/.venv/bin/python"], pythonExtension: ["/usr/bin/python3.11"], workspaceFolder: "/w/proj" });
  assert.deepEqual(choice, { command: ["/w/proj/.venv/bin/python"], source: "setting" });
});

test("a setting given as a plain string is accepted", () => {
  assert.deepEqual(chooseInterpreter({ setting: " /opt/py/bin/python " }).command, ["/opt/py/bin/python"]);
});

test("a multi-word setting keeps its own arguments before -m fxscope serve", () => {
  const choice = chooseInterpreter({ setting: ["conda", "run", "-n", "torch", "python"] });
  assert.deepEqual(serverCommand(choice), { command: "conda", args: ["run", "-n", "torch", "python", "-m", "fxscope", "serve"] });
});

test("empty setting falls back to the Python extension's active interpreter", () => {
  const choice = chooseInterpreter({ setting: [], pythonExtension: ["/envs/a/bin/python"] });
  assert.deepEqual(choice, { command: ["/envs/a/bin/python"], source: "python-extension" });
  assert.deepEqual(chooseInterpreter({ setting: ["", "  "], pythonExtension: ["/envs/a/bin/python"] }).source, "python-extension");
});

test("without setting and Python extension the default is python3 (python on Windows)", () => {
  assert.deepEqual(chooseInterpreter({ setting: undefined }), { command: ["python3"], source: "default" });
  assert.deepEqual(chooseInterpreter({ setting: [], pythonExtension: [] , platform: "win32" }).command, ["python"]);
});

test("variables and ~ are substituted; unknown env variables become empty", () => {
  const inputs = { workspaceFolder: "/w", home: "/home/u", env: { VENV: "/v" } };
  assert.equal(substitute("${env:VENV}/bin/python", inputs), "/v/bin/python");
  assert.equal(substitute("~/py/bin/python", inputs), "/home/u/py/bin/python");
  assert.equal(substitute("${userHome}/x", inputs), "/home/u/x");
  assert.equal(substitute("${env:NOPE}python", inputs), "python");
  assert.equal(substitute("${workspaceFolder}", {}), "${workspaceFolder}");
});

test("the probe asks the interpreter itself whether fxscope is importable", () => {
  const probe = probeArgs({ command: ["/p/python"], source: "setting" });
  assert.equal(probe.command, "/p/python");
  assert.equal(probe.args[0], "-c");
  assert.match(probe.args[1], /find_spec\('fxscope'\)/);
});

test("the missing-fxscope message names the interpreter and the pip command", () => {
  const m = missingMessage({ command: ["/envs/a/bin/python"], source: "python-extension" });
  assert.equal(m.install, "/envs/a/bin/python -m pip install fxscope");
  assert.match(m.message, /not installed in \/envs\/a\/bin\/python/);
  assert.match(m.message, /Python extension/);
});

test("sameInterpreter compares the whole command", () => {
  const a = { command: ["/a/python"], source: "setting" as const };
  assert.ok(sameInterpreter(a, { command: ["/a/python"], source: "python-extension" }));
  assert.ok(!sameInterpreter(a, { command: ["/b/python"], source: "setting" }));
  assert.ok(!sameInterpreter(undefined, a));
});
