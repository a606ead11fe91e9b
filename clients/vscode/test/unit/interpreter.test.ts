import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

import {
  candidateInterpreters, chooseInterpreter, missingMessage, olderThan, probeArgs, probeVerdict, sameInterpreter, serverCommand, substitute,
} from "../../src/interpreter";

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

test("the probe asks the interpreter itself whether fxscope and torch are there, without importing torch", () => {
  const probe = probeArgs({ command: ["/p/python"], source: "setting" });
  assert.equal(probe.command, "/p/python");
  assert.equal(probe.args[0], "-c");
  assert.match(probe.args[1], /find_spec\('fxscope'\)/);
  assert.match(probe.args[1], /find_spec\('torch'\)/);
  assert.doesNotMatch(probe.args[1], /import torch/);
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

test("the probe's verdict: fxscope, then torch, then torch's version", () => {
  const out = (o: object) => JSON.stringify(o);
  assert.deepEqual(probeVerdict(0, out({ fxscope: false, torch: "2.5.1" }), ""), { kind: "no-fxscope" });
  assert.deepEqual(probeVerdict(0, out({ fxscope: true, torch: null, requirement: "torch>=2.3" }), ""), { kind: "no-torch", requirement: "torch>=2.3" });
  assert.deepEqual(probeVerdict(0, out({ fxscope: true, torch: null }), ""), { kind: "no-torch", requirement: "torch>=2.2" },
    "an fxscope that does not name its requirement gets the default");
  assert.deepEqual(probeVerdict(0, out({ fxscope: true, torch: "2.1.2+cu121", requirement: "torch>=2.2" }), ""),
    { kind: "old-torch", torch: "2.1.2+cu121", requirement: "torch>=2.2" });
  assert.deepEqual(probeVerdict(0, "noise\n" + out({ fxscope: true, torch: "2.10.0" }), ""), { kind: "ok", torch: "2.10.0" });
  assert.deepEqual(probeVerdict(0, out({ fxscope: true, torch: "unknown" }), ""), { kind: "ok", torch: "unknown" },
    "an unreadable version is left to the server's own check");
  const bad = probeVerdict(1, "", "Traceback ...\nSyntaxError: bad");
  assert.equal(bad.kind, "error");
  assert.match(bad.kind === "error" ? bad.message : "", /exit 1: .*SyntaxError/s);
});

test("torch versions compare numerically against the requirement's lower bound", () => {
  assert.ok(olderThan("2.1.0", "torch>=2.2"));
  assert.ok(olderThan("1.13.1", "torch>=2.2"));
  assert.ok(!olderThan("2.2.0", "torch>=2.2"));
  assert.ok(!olderThan("2.10.1", "torch>=2.2"));
  assert.ok(!olderThan("3.0", "torch>=2.2"));
  assert.ok(!olderThan("nightly", "torch>=2.2"));
});

test("the missing-torch message names the interpreter and the pip command with the range", () => {
  const choice = { command: ["/envs/my env/bin/python"], source: "setting" as const };
  const m = missingMessage(choice, { kind: "no-torch", requirement: "torch>=2.2" });
  assert.equal(m.install, "'/envs/my env/bin/python' -m pip install 'torch>=2.2'");
  assert.match(m.message, /torch is not installed in \/envs\/my env\/bin\/python \(the fxscope.interpreter setting\)/);
  assert.equal(m.status, "no torch");
  const old = missingMessage(choice, { kind: "old-torch", torch: "2.0.1", requirement: "torch>=2.2" });
  assert.equal(old.install, "'/envs/my env/bin/python' -m pip install --upgrade 'torch>=2.2'");
  assert.match(old.message, /torch 2\.0\.1 .* older than fxscope supports \(torch>=2\.2\)/);
});

test("the probe script runs in a real interpreter and gives a verdict", () => {
  const probe = probeArgs({ command: ["python3", "-I"], source: "default" });
  const proc = spawnSync(probe.command, probe.args, { encoding: "utf8" });
  if (proc.error) return; // no python3 on this machine
  const verdict = probeVerdict(proc.status, proc.stdout, proc.stderr);
  assert.notEqual(verdict.kind, "error", JSON.stringify(verdict));
  assert.equal(JSON.parse(proc.stdout).executable.length > 0, true);
});

test("Select Interpreter offers the folder's virtual environments and the active one", () => {
  const present = new Set(["/w/.venv/bin/python", "/opt/conda/envs/t/bin/python"]);
  const found = candidateInterpreters("/w", { CONDA_PREFIX: "/opt/conda/envs/t", VIRTUAL_ENV: "/w/.venv" }, (p) => present.has(p));
  assert.deepEqual(found, ["/w/.venv/bin/python", "/opt/conda/envs/t/bin/python"]);
  assert.deepEqual(candidateInterpreters("C:\\w", {}, (p) => p === "C:\\w\\venv\\Scripts\\python.exe", "win32"), ["C:\\w\\venv\\Scripts\\python.exe"]);
  assert.deepEqual(candidateInterpreters(undefined, {}, () => true), []);
});
