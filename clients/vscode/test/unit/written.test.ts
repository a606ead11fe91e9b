import assert from "node:assert/strict";
import { test } from "node:test";

import { writtenFiles, writtenMessage } from "../../src/written";

test("the files a code action writes besides the edited document, each once", () => {
  const edited = "file:///w/m.py";
  assert.deepEqual(writtenFiles([edited, "file:///w/fxscope_targets.py", "file:///w/pyproject.toml", "file:///w/pyproject.toml"], edited),
    ["file:///w/fxscope_targets.py", "file:///w/pyproject.toml"]);
  assert.deepEqual(writtenFiles([edited], edited), [], "an edit of the open file only: nothing to announce");
});

test("the notification names every file written", () => {
  assert.equal(writtenMessage("Create an fxscope target for `Net` (defaults)", ["fxscope_targets.py", "pyproject.toml"]),
    "fxscope: wrote fxscope_targets.py and pyproject.toml (Create an fxscope target for Net (defaults))");
  assert.equal(writtenMessage("Keep `Attention` opaque", ["pyproject.toml"]), "fxscope: wrote pyproject.toml (Keep Attention opaque)");
});
