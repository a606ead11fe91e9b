import assert from "node:assert/strict";
import { test } from "node:test";

import { parseProgress, statusText } from "../../src/statusText";
import { classAtLine, graphArguments, targetId } from "../../src/targets";

const source = [
  "import torch",            // 0
  "",                        // 1
  "class Block(nn.Module):", // 2
  "    def forward(self, x):",
  "        return x",        // 4
  "",
  "def helper():",           // 6
  "    class Inner(nn.Module):",
  "        pass",            // 8
  "    return Inner",
  "class Net(nn.Module):",   // 10
  "    pass",
].join("\n");

test("the class under the cursor, innermost first, none outside classes", () => {
  assert.equal(classAtLine(source, 0), null);
  assert.equal(classAtLine(source, 2), "Block");
  assert.equal(classAtLine(source, 4), "Block");
  assert.equal(classAtLine(source, 6), null);
  assert.equal(classAtLine(source, 8), "Inner");
  assert.equal(classAtLine(source, 11), "Net");
});

test("target ids are root-relative posix paths plus the class", () => {
  assert.equal(targetId("zoo\\models.py", "Net"), "zoo/models.py::Net");
  assert.equal(targetId("zoo/models.py", "Net"), "zoo/models.py::Net");
});

test("showGraph arguments from a code lens or the palette", () => {
  assert.deepEqual(graphArguments(["m.py::Net", "blocks.0"]), { target: "m.py::Net", module: "blocks.0" });
  assert.deepEqual(graphArguments(["m.py::Net"]), { target: "m.py::Net", module: null });
  assert.equal(graphArguments([]), null);
  assert.equal(graphArguments([{}]), null);
});

test("status bar words", () => {
  assert.match(statusText({ kind: "untrusted" }).tooltip, /trusted workspace/);
  const missing = statusText({ kind: "missing", interpreter: "/p", what: "no torch" });
  assert.ok(missing.warning);
  assert.equal(missing.text, "$(warning) fxscope: no torch");
  assert.equal(missing.command, "fxscope.selectInterpreter");
});
test("progress n/N from the server's messages", () => {
  assert.deepEqual(parseProgress("3/8 targets", undefined), { done: 3, total: 8 });
  assert.deepEqual(parseProgress("tracing 2 of 5", undefined), { done: 2, total: 5 });
  assert.deepEqual(parseProgress(undefined, 40), { done: 40, total: 100 });
  assert.equal(parseProgress("starting", undefined), null);
});
