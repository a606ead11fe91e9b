// End-to-end: install the packaged .vsix into code-server, open a workspace in headless Chromium,
// open a model file, and report what a person sees: the Problems panel rows, a hover, the status
// bar, and (when asked) whether the server was held back in an untrusted workspace.
//
// Environment (the test sets these):
//   FXSCOPE_CODE_SERVER  code-server executable     FXSCOPE_E2E_NODE_BIN  dir of the Node it needs
//   FXSCOPE_CHROMIUM     Chromium executable        FXSCOPE_VSIX          the extension package
//   FXSCOPE_WORKSPACE    folder to open             FXSCOPE_PYTHON        interpreter with fxscope
//   FXSCOPE_FILE         file to open (relative; a .ipynb opens in the notebook editor)
//   FXSCOPE_HOVER_LINE   1-based line to hover (0: none)
//   FXSCOPE_HOVER_COLUMN 1-based column to hover    FXSCOPE_EXPECT        lines the Problems panel must show
//   FXSCOPE_GRAPH_LINE   1-based line inside the class whose graph to show
//   FXSCOPE_TRUSTED      "0" to open the folder untrusted (the server must not start)
//   FXSCOPE_EXPECT_MISSING "1" when FXSCOPE_PYTHON lacks fxscope (expect the install hint)
//   FXSCOPE_EXPECT_STATUS  with FXSCOPE_EXPECT_MISSING: the status words to wait for ("not installed")
//   FXSCOPE_GRAPH_EARLY  "1": show the graph right after opening the file (its class still tracing)
//                        and wait until the result fills it in
//   FXSCOPE_RESTART      "1": end with "fxscope: Restart Server" and wait for the server to run again
//   FXSCOPE_QUICKFIX     "<line>|<title words>": apply that quick fix at that line, report the notification
//   FXSCOPE_COMMANDS     "1": run Clear Cache and Re-trace Workspace, report the feedback each gives
//   FXSCOPE_SCREENSHOTS  directory: save problems.png, hover.png and graph.png there
//   FXSCOPE_E2E_TMP      scratch directory (profiles, extensions)
//   FXSCOPE_INSERT       "<hold file>": once the Problems panel shows FXSCOPE_EXPECT, create that file (the
//                        model's forward waits while it exists, so no new result can land), insert two
//                        comment lines at the top of the file, and report where the code lenses and the
//                        Problems rows are then; the hold file is removed before the run ends
// Prints one JSON object on stdout; progress goes to stderr.

import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const log = (...args) => process.stderr.write(`[drive] ${args.join(" ")}\n`);

const codeServer = env("FXSCOPE_CODE_SERVER");
const nodeBin = env("FXSCOPE_E2E_NODE_BIN", "");
const chromiumPath = env("FXSCOPE_CHROMIUM");
const vsix = env("FXSCOPE_VSIX");
const workspace = env("FXSCOPE_WORKSPACE");
const python = env("FXSCOPE_PYTHON");
const file = env("FXSCOPE_FILE");
const hoverLine = Number(env("FXSCOPE_HOVER_LINE", "0"));
const hoverColumn = Number(env("FXSCOPE_HOVER_COLUMN", "1"));
const graphLine = Number(env("FXSCOPE_GRAPH_LINE", "0"));
// Substrings (one per line) that must each appear in some Problems row before reading on.
const expected = env("FXSCOPE_EXPECT", "").split("\n").filter(Boolean);
const trusted = env("FXSCOPE_TRUSTED", "1") !== "0";
const missingPython = env("FXSCOPE_EXPECT_MISSING", "0") === "1";
const missingStatus = env("FXSCOPE_EXPECT_STATUS", "not installed");
const graphEarly = env("FXSCOPE_GRAPH_EARLY", "0") === "1";
const restartAtEnd = env("FXSCOPE_RESTART", "0") === "1";
const shots = env("FXSCOPE_SCREENSHOTS", "");
const [quickFixLine, quickFixTitle] = env("FXSCOPE_QUICKFIX", "|").split("|");
const checkCommands = env("FXSCOPE_COMMANDS", "0") === "1";
const insertHold = env("FXSCOPE_INSERT", "");
const tmp = env("FXSCOPE_E2E_TMP");
const timeoutMs = Number(env("FXSCOPE_E2E_TIMEOUT_MS", "240000"));

const userData = join(tmp, "user-data");
const extensions = join(tmp, "extensions");
const browserProfile = join(tmp, "chromium-profile");
for (const d of [join(userData, "User"), extensions, browserProfile]) mkdirSync(d, { recursive: true });
const childEnv = { ...process.env, PATH: nodeBin ? `${nodeBin}:${process.env.PATH}` : process.env.PATH };

writeFileSync(join(userData, "User", "settings.json"), JSON.stringify({
  "fxscope.interpreter": [python],
  "fxscope.trace.server": "messages",
  "security.workspace.trust.enabled": true,
  "security.workspace.trust.startupPrompt": "never",
  "security.workspace.trust.emptyWindow": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off",
  "editor.hover.delay": 100,
  "editor.stickyScroll.enabled": false,
  "window.commandCenter": false,
  "chat.disableAIFeatures": true,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
}, null, 2));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on("error", reject);
  });
}

/** The extension's output channel as code-server logged it (for failure messages). */
function extensionOutput() {
  const found = [];
  const walk = (dir) => {
    let entries = [];
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/fxscope/i.test(e.name) && e.name.endsWith(".log")) found.push(p);
    }
  };
  walk(join(userData, "logs"));
  return found.map((p) => readFileSync(p, "utf8").split("\n").slice(-60).join("\n")).join("\n---\n");
}

/** Thrown to end the scenario early (not an error). */
class Done extends Error {}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitHttp(url, deadline) {
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch { /* not yet */ }
    await sleep(300);
  }
  throw new Error(`code-server did not answer at ${url}`);
}

log("installing", vsix);
const install = spawnSync(codeServer, ["--user-data-dir", userData, "--extensions-dir", extensions, "--install-extension", vsix, "--force"],
  { env: childEnv, encoding: "utf8", timeout: 180000 });
if (install.status !== 0) throw new Error(`--install-extension failed (${install.status}): ${install.stderr}\n${install.stdout}`);
log(install.stdout.trim().split("\n").pop());

const port = await freePort();
const args = ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check",
  "--disable-getting-started-override", "--user-data-dir", userData, "--extensions-dir", extensions];
if (trusted) args.push("--disable-workspace-trust");
const server = spawn(codeServer, [...args, workspace], { env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
let serverLog = "";
server.stdout.on("data", (d) => { serverLog += d; });
server.stderr.on("data", (d) => { serverLog += d; });

let browser;
let currentPage;
const result = { trusted, problems: [], hover: "", status: "", notification: "", output: "", errors: [] };
const deadline = Date.now() + timeoutMs;
try {
  await waitHttp(`http://127.0.0.1:${port}/healthz`, Date.now() + 60000);
  log("code-server up on port", port);
  // A fresh profile directory for this run (launchPersistentContext passes it as --user-data-dir).
  browser = await chromium.launchPersistentContext(browserProfile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const page = browser.pages()[0] ?? await browser.newPage();
  currentPage = page;
  page.on("pageerror", (e) => result.errors.push(String(e.message).slice(0, 300)));
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
  await page.waitForSelector(".statusbar", { timeout: 60000 });
  log("workbench loaded");
  await sleep(2000);

  const statusText = async () => (await page.locator(".statusbar-item").allInnerTexts()).filter((t) => t.includes("fxscope")).join(" | ");

  const notifications = async () => (await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts()).join("\n");

  /** Wait (until the deadline) for a notification containing ``words``; its text and buttons. */
  async function notification(words) {
    let text = "";
    while (Date.now() < deadline && !(text = await notifications()).includes(words)) await sleep(500);
    const buttons = await page.locator(".notifications-toasts .notification-list-item-buttons-container .monaco-button").allInnerTexts();
    return { text, buttons };
  }

  /** Move the cursor to a 1-based line. */
  async function goToLine(line) {
    await page.keyboard.press("Escape");
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+G");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(`${line}:1`, { delay: 20 });
    await page.keyboard.press("Enter");
    await sleep(300);
  }

  /** Run a command from the palette by its title. */
  async function runCommand(title) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("Control+Shift+P");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(title, { delay: 20 });
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title.replace(/^fxscope: /, "") }).first();
    await row.waitFor({ timeout: 20000 });
    await row.click();
  }

  /** "fxscope: Show FX Graph" for the class at graphLine, drawn in the webview; reports what it shows. */
  async function showGraph() {
    await goToLine(graphLine);
    await runCommand("fxscope: Show FX Graph");
    // The webview's frame: the renderer marks its body once drawn (a pending graph has no nodes yet).
    let graphFrame;
    for (let i = 0; i < 120 && !graphFrame; i++) {
      for (const f of page.frames()) {
        if (await f.locator("body[data-fxscope-ready]").count().catch(() => 0)) { graphFrame = f; break; }
      }
      if (!graphFrame) await sleep(500);
    }
    if (!graphFrame) return;
    result.graph = { firstStatus: await graphFrame.locator("body").getAttribute("data-fxscope-status").catch(() => null) };
    while (Date.now() < deadline && !(await graphFrame.locator("g.fxg-node").count().catch(() => 0))) await sleep(500);
    Object.assign(result.graph, {
      status: await graphFrame.locator("body").getAttribute("data-fxscope-status").catch(() => null),
      nodes: await graphFrame.locator("g.fxg-node").count(),
      title: await graphFrame.locator(".fxg-title").innerText(),
      boxes: await graphFrame.locator("g.fxg-box").evaluateAll((els) => els.map((e) => e.getAttribute("data-scope"))),
      sideOpen: await graphFrame.locator(".fxg-body:not(.fxg-side-hidden) .fxg-side").count() > 0,
      canvasWidth: await graphFrame.locator(".fxg-canvas").evaluate((e) => e.clientWidth),
      viewWidth: await graphFrame.locator(".fxg").evaluate((e) => e.clientWidth),
    });
    if (shots) {
      // The picture: the bottom panel closed, the boxes collapsed but the first, fitted to the canvas.
      await page.keyboard.press("Control+J");
      await sleep(800);
      await graphFrame.locator(".fxg-btn", { hasText: "Collapse all" }).click();
      const first = graphFrame.locator("g.fxg-collapsed").first();
      if (await first.count()) await first.dispatchEvent("click");
      await graphFrame.locator(".fxg-btn", { hasText: "Fit" }).click();
      await sleep(800);
      await page.screenshot({ path: join(shots, "graph.png") });
      await graphFrame.locator(".fxg-btn", { hasText: "Expand all" }).click();
      await page.keyboard.press("Control+J");
      await sleep(500);
    }
    if (hoverLine > 0) {
      // Clicking a node reveals its source line in the editor.
      const node = graphFrame.locator(`g.fxg-node[data-line="${hoverLine}"]`).first();
      await node.dispatchEvent("click");
      await sleep(1500);
      result.graph.afterClick = (await page.locator(".statusbar-item").allInnerTexts()).find((t) => /Ln \d+/.test(t)) ?? "";
      // The cursor is now on that line: the webview highlights the line's nodes.
      result.graph.highlighted = await graphFrame.locator("g.fxg-node.fxg-hl").evaluateAll((els) => els.map((e) => e.getAttribute("data-node")));
    }
    log("graph:", JSON.stringify(result.graph ?? null));
  }
  if (missingPython) {
    // The interpreter lacks fxscope or torch: the status bar and a notification say how to install it.
    while (Date.now() < deadline && !(result.status = await statusText()).includes(missingStatus)) await sleep(1000);
    for (let i = 0; i < 20 && !result.notification.includes("pip install"); i++) {
      result.notification = (await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts()).join("\n");
      await sleep(500);
    }
    result.buttons = await page.locator(".notifications-toasts .notification-list-item-buttons-container .monaco-button").allInnerTexts();
    throw new Done();
  }
  if (!trusted) {
    // Restricted mode: the extension must say why it does not start, without opening anything.
    while (Date.now() < deadline && !(result.status = await statusText()).includes("untrusted")) await sleep(1000);
    await page.keyboard.press("Control+Shift+M");
    await sleep(3000);
    result.problems = (await page.locator(".markers-panel .monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    throw new Done();
  }

  // Open the model file with Quick Open.
  await page.keyboard.press("Control+P");
  await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
  await page.keyboard.type(file.split("/").pop(), { delay: 20 });
  const pick = page.locator(".quick-input-list .monaco-list-row", { hasText: file.split("/").pop() }).first();
  await pick.waitFor({ timeout: 20000 });
  await pick.click();
  await page.waitForSelector(".monaco-editor .view-lines", { timeout: 30000 });
  log("opened", file);
  if (trusted && graphLine > 0 && graphEarly) await showGraph();

  // Problems panel: wait until the expected diagnostic is listed (or the deadline).
  await page.keyboard.press("Control+Shift+M");
  await page.waitForSelector(".markers-panel", { timeout: 20000 }).catch(() => undefined);
  const readProblems = async () => page.locator(".markers-panel .monaco-list-row").allInnerTexts();
  while (Date.now() < deadline) {
    result.problems = (await readProblems()).map((t) => t.replace(/\s+/g, " ").trim());
    result.status = await statusText();
    if (!trusted && result.status.includes("untrusted")) break;
    if (expected.length && expected.every((x) => result.problems.some((p) => p.includes(x)))) break;
    await sleep(1000);
  }
  log("problems:", JSON.stringify(result.problems));
  if (shots) {
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, "problems.png") });
  }
  log("status:", result.status);
  if (insertHold) {
    /** The code lenses of the open editor: each one's text and the 1-based line it stands above. */
    const lenses = async () => page.evaluate(() => {
      const editor = globalThis.document.querySelector(".monaco-editor");
      if (!editor) return [];
      const numbers = [...editor.querySelectorAll(".margin-view-overlays .line-numbers")]
        .map((e) => ({ n: Number(e.textContent.trim()), top: e.getBoundingClientRect().top }))
        .filter((x) => x.n > 0);
      return [...editor.querySelectorAll(".codelens-decoration")].map((e) => {
        const bottom = e.getBoundingClientRect().bottom;
        const below = numbers.filter((x) => x.top >= bottom - 3).sort((a, b) => a.top - b.top)[0];
        return { text: e.textContent.trim(), line: below ? below.n : null };
      });
    });
    // The whole file in view: the Problems panel closed (a lens outside the viewport is not drawn).
    await page.keyboard.press("Control+J");
    await sleep(800);
    while (Date.now() < deadline && (result.lensesBefore = await lenses()).length === 0) await sleep(500);
    await sleep(1500);
    result.lensesBefore = await lenses();
    writeFileSync(insertHold, "held");
    try {
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Home");
      // Two empty lines first, then words on them: no state in between comments out a line.
      await page.keyboard.press("Enter");
      await page.keyboard.press("Enter");
      await page.keyboard.press("Control+Home");
      await page.keyboard.type("# two lines inserted above everything", { delay: 20 });
      // The re-trace is held: what moves now moves by the server's mapping of the edit.
      await sleep(4000);
      result.lensesAfter = await lenses();
      await page.keyboard.press("Control+Shift+M");
      await sleep(800);
      result.problemsAfter = (await readProblems()).map((t) => t.replace(/\s+/g, " ").trim());
      log("lenses:", JSON.stringify({ before: result.lensesBefore, after: result.lensesAfter }));
    } finally {
      rmSync(insertHold, { force: true });
    }
  }
  if (file.endsWith(".ipynb")) {
    // A notebook opens in the notebook editor: its cells' editors show the diagnostics (drawn a
    // little after the Problems panel lists them).
    const squiggles = page.locator(".notebookOverlay .cell-editor-container .squiggly-error");
    for (let i = 0; i < 60 && Date.now() < deadline; i++) {
      result.cellSquiggles = await squiggles.count();
      if (result.cellSquiggles > 0) break;
      await sleep(500);
    }
    log("cell squiggles:", result.cellSquiggles);
  }

  if (trusted && hoverLine > 0) {
    // Go to the line and ask for the hover there.
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+G");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(`${hoverLine}:${hoverColumn}`, { delay: 20 });
    await page.keyboard.press("Enter");
    await sleep(500);
    for (let attempt = 0; attempt < 20 && !result.hover; attempt++) {
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+I");
      await sleep(1500);
      const hovers = await page.locator(".monaco-hover:not(.hidden) .monaco-hover-content, .monaco-hover:not(.hidden) .hover-contents").allInnerTexts();
      const text = hovers.join("\n").trim();
      if (text && !/^Loading/.test(text)) result.hover = text;
      else await page.keyboard.press("Escape");
    }
    log("hover:", JSON.stringify(result.hover.slice(0, 300)));
    if (shots && result.hover) await page.screenshot({ path: join(shots, "hover.png") });
  }
  if (trusted && graphLine > 0 && !graphEarly) await showGraph();
  if (quickFixLine) {
    // The quick-fix menu at that line, then the fix whose title has those words.
    await goToLine(Number(quickFixLine));
    let item;
    for (let attempt = 0; attempt < 20 && !item; attempt++) {
      await page.keyboard.press("Control+.");
      const row = page.locator(".action-widget .monaco-list-row", { hasText: quickFixTitle }).first();
      if (await row.waitFor({ timeout: 3000 }).then(() => true, () => false)) item = row;
      else await page.keyboard.press("Escape");
    }
    if (item) {
      result.quickFixTitle = await item.innerText();
      await item.click();
      result.quickFix = await notification("fxscope: wrote");
    }
    log("quick fix:", JSON.stringify(result.quickFix ?? null));
  }
  if (checkCommands) {
    await runCommand("fxscope: Clear Cache");
    result.clearCache = await notification("cleared the result cache");
    await runCommand("fxscope: Re-trace Workspace");
    while (Date.now() < deadline && !(result.retrace = await statusText()).includes("re-tracing")) await sleep(200);
    log("commands:", JSON.stringify({ clearCache: result.clearCache, retrace: result.retrace }));
  }
  if (restartAtEnd) {
    // A normal restart: the server stops and starts again, and nothing of it is an error.
    await runCommand("fxscope: Restart Server");
    await sleep(2000);
    while (Date.now() < deadline && !/fxscope: \d+ error/.test(result.status = await statusText())) await sleep(1000);
    result.afterRestart = result.status;
    await sleep(1500);
  }
  result.status = await statusText();
} catch (e) {
  if (!(e instanceof Done)) {
    result.errors.push(String(e?.stack ?? e));
    const shot = join(tmp, "failure.png");
    if (await currentPage?.screenshot({ path: shot }).then(() => true, () => false)) result.screenshot = shot;
  }
} finally {
  if (browser) await browser.close().catch(() => undefined);
  try { process.kill(-server.pid, "SIGTERM"); } catch { /* gone */ }
  await sleep(1000);
  try { process.kill(-server.pid, "SIGKILL"); } catch { /* gone */ }
  result.serverLog = serverLog.split("\n").slice(-40).join("\n");
  result.output = extensionOutput();
}
process.stdout.write(JSON.stringify(result) + "\n");
