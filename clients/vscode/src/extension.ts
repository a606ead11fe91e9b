/**
 * fxscope for VS Code: starts `fxscope serve` (stdio) with the chosen Python interpreter in a
 * trusted workspace, shows its state in the status bar, and draws FX graphs in a webview.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  LanguageClient, State, Trace, WorkDoneProgress, WorkDoneProgressCreateRequest,
  type LanguageClientOptions, type ServerOptions as LspServerOptions,
} from "vscode-languageclient/node";

import { GraphPanel, type ShowGraphResult } from "./graphPanel";
import {
  candidateInterpreters, chooseInterpreter, missingMessage, probeArgs, probeVerdict, sameInterpreter, serverCommand,
  type InterpreterChoice, type ProbeVerdict,
} from "./interpreter";
import { activeInterpreter, hasPythonExtension, onInterpreterChange } from "./python";
import { needsNotify, needsRestart, readSettings, serverOptions, type FxscopeSettings } from "./settings";
import { parseProgress, parseStatus, statusText, type Counts, type FolderStatus, type ServerState } from "./statusText";
import { classAtLine, graphArguments, targetId } from "./targets";
import { writtenFiles, writtenMessage } from "./written";

/** Commands the server executes (`workspace/executeCommand`). */
const SERVER_COMMANDS = ["fxscope.showGraph", "fxscope.retrace", "fxscope.clearCache"] as const;
const SELECT = "Select Interpreter";
const COPY = "Copy Install Command";

class Extension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private process: ChildProcess | undefined;
  private stopping = new WeakSet<ChildProcess>();
  private choice: InterpreterChoice | undefined;
  private readonly output = vscode.window.createOutputChannel("fxscope");
  private readonly status = vscode.window.createStatusBarItem("fxscope.status", vscode.StatusBarAlignment.Left, 50);
  private readonly disposables: vscode.Disposable[] = [];
  private fallbacks = new Map<string, vscode.Disposable>();
  private restarting: Promise<void> = Promise.resolve();
  private state: ServerState = { kind: "stopped" };
  /** A run ended since the server started: counts are claims from then on. */
  private ran = false;
  private tracing: { done: number; total: number } | null = null;
  private folders: FolderStatus[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.status.name = "fxscope";
    this.status.show();
    this.disposables.push(this.output, this.status);
  }

  settings(): FxscopeSettings {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const cfg = vscode.workspace.getConfiguration("fxscope", folder?.uri);
    return readSettings((key) => cfg.get(key));
  }

  setState(state: ServerState): void {
    this.state = state;
    const s = statusText(state);
    this.status.text = s.text;
    const tooltip = new vscode.MarkdownString(s.tooltip, true);
    this.status.tooltip = tooltip;
    this.status.command = s.command;
    this.status.backgroundColor = s.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  log(line: string): void {
    this.output.appendLine(`[${new Date().toISOString()}] ${line}`);
  }

  async activate(): Promise<void> {
    this.disposables.push(
      vscode.commands.registerCommand("fxscope.restartServer", () => this.restart("restart requested")),
      vscode.commands.registerCommand("fxscope.showOutput", () => this.output.show(true)),
      vscode.commands.registerCommand("fxscope.selectInterpreter", () => this.selectInterpreter(false)),
      vscode.commands.registerCommand("fxscope.filesWritten", (title: string, uris: string[]) => this.filesWritten(title, uris)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((k) => e.affectsConfiguration(k))) void this.restart("settings changed");
        else if (needsNotify((k) => e.affectsConfiguration(k)) && this.client?.state === State.Running) {
          void this.client.sendNotification("workspace/didChangeConfiguration", { settings: { fxscope: serverOptions(this.settings()) } });
        }
        if (e.affectsConfiguration("fxscope.trace.server") && this.client) void this.client.setTrace(traceValue(this.settings()));
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart("workspace trusted")),
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.restart("workspace folders changed")),
      vscode.languages.onDidChangeDiagnostics((e) => {
        this.updateCounts();
        const panel = GraphPanel.open;
        if (panel && e.uris.some((u) => panel.shows(u))) panel.refreshSoon();
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        const panel = GraphPanel.open;
        if (panel && e.contentChanges.length && e.document.languageId === "python") panel.refreshSoon(1500);
      }),
    );
    for (const command of SERVER_COMMANDS) this.addFallback(command);
    const sub = await onInterpreterChange(() => void this.restart("Python interpreter changed", true));
    if (sub) this.disposables.push(sub);
    await this.restart("activation");
  }

  /** While the server does not run, its commands still exist and say why nothing happens. */
  private addFallback(command: string): void {
    if (this.fallbacks.has(command)) return;
    this.fallbacks.set(command, vscode.commands.registerCommand(command, () => {
      const why = this.status.tooltip instanceof vscode.MarkdownString ? this.status.tooltip.value : "see the output";
      void vscode.window.showWarningMessage(`fxscope: the server is not running (${why}).`);
    }));
  }

  private dropFallbacks(): void {
    for (const d of this.fallbacks.values()) d.dispose();
    this.fallbacks.clear();
  }

  restart(reason: string, interpreterOnly = false): Promise<void> {
    this.restarting = this.restarting.then(() => this.doRestart(reason, interpreterOnly)).catch((e) => this.log(`restart failed: ${String(e)}`));
    return this.restarting;
  }

  private async chooseInterpreter(): Promise<InterpreterChoice> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    return chooseInterpreter({
      setting: this.settings().interpreter,
      pythonExtension: await activeInterpreter(folder?.uri),
      workspaceFolder: folder?.uri.fsPath,
      env: process.env,
      home: os.homedir(),
      platform: process.platform,
    });
  }

  private async doRestart(reason: string, interpreterOnly: boolean): Promise<void> {
    const settings = this.settings();
    const choice = await this.chooseInterpreter();
    if (interpreterOnly && sameInterpreter(choice, this.choice) && this.client) return;
    await this.stop();
    this.log(`(re)start: ${reason}`);
    if (!vscode.workspace.isTrusted) {
      this.log("workspace is not trusted: fxscope imports the workspace's code, so the server does not start");
      this.setState({ kind: "untrusted" });
      return;
    }
    if (!settings.enable) {
      this.setState({ kind: "disabled" });
      return;
    }
    if (!vscode.workspace.workspaceFolders?.length) {
      this.setState({ kind: "stopped" });
      this.log("no workspace folder open: fxscope needs a folder to find targets");
      return;
    }
    this.choice = choice;
    const shown = choice.command.join(" ");
    this.setState({ kind: "starting", interpreter: shown });
    this.log(`interpreter: ${shown} (from ${choice.source})`);
    const verdict = await runProbe(choice);
    if (verdict.kind === "no-fxscope" || verdict.kind === "no-torch" || verdict.kind === "old-torch") {
      const { message, install, status } = missingMessage(choice, verdict);
      this.log(message);
      this.setState({ kind: "missing", interpreter: shown, what: status });
      void vscode.window.showErrorMessage(message, SELECT, COPY).then((pick) => {
        if (pick === COPY) {
          void vscode.env.clipboard.writeText(install);
          vscode.window.setStatusBarMessage(`fxscope: copied \`${install}\``, 5000);
        } else if (pick === SELECT) void this.selectInterpreter(choice.source === "python-extension");
      });
      return;
    }
    if (verdict.kind === "error") {
      this.log(`cannot run ${shown}: ${verdict.message}`);
      this.setState({ kind: "failed", message: `cannot run ${shown}` });
      void vscode.window.showErrorMessage(`fxscope: cannot run the Python interpreter ${shown}: ${verdict.message}.`, SELECT)
        .then((pick) => { if (pick) void this.selectInterpreter(); });
      return;
    }
    this.log(`torch ${verdict.torch}`);
    await this.start(choice, settings);
  }

  /** Spawn the server ourselves, so that its exit is logged for what it is: a requested stop
   * or a normal end is information, only an unexpected exit is an error. */
  private spawnServer(choice: InterpreterChoice, cwd: string): ChildProcess {
    const { command, args } = serverCommand(choice);
    const child = spawn(command, args, { cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    this.process = child;
    child.on("exit", (code, signal) => {
      const requested = this.stopping.has(child);
      if (requested || code === 0) this.log(`the server stopped${requested ? "" : " (exit 0)"}`);
      else this.log(`error: the server exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`}); see the lines above`);
    });
    return child;
  }

  private async start(choice: InterpreterChoice, settings: FxscopeSettings): Promise<void> {
    const folder = vscode.workspace.workspaceFolders![0];
    const server: LspServerOptions = () => Promise.resolve(this.spawnServer(choice, folder.uri.fsPath));
    const clientOptions: LanguageClientOptions = {
      // Python files, and the Python cells of Jupyter notebooks (the server declares
      // notebookDocumentSync for them, so cells are synced as part of their notebook).
      documentSelector: [
        { scheme: "file", language: "python" },
        { notebook: { notebookType: "jupyter-notebook" }, language: "python" },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: serverOptions(settings),
      middleware: {
        executeCommand: async (cmd, cmdArgs, next) => {
          if (cmd === "fxscope.showGraph") return this.showGraph(cmdArgs, (a) => next(cmd, a));
          const result: unknown = await next(cmd, cmdArgs);
          if (cmd === "fxscope.retrace") this.retraced(result);
          else if (cmd === "fxscope.clearCache") this.cleared(result);
          return result;
        },
        provideCodeActions: async (document, range, context, token, next) => {
          const actions = await next(document, range, context, token);
          return actions?.map((a) => (a instanceof vscode.CodeAction ? announceWrites(a, document.uri) : a));
        },
        workspace: {
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) return answer;
            // The server reads section "fxscope"; answer it with the same keys as initializationOptions.
            return params.items.map((item, i) => (item.section === "fxscope" ? serverOptions(this.settings()) : answer[i]));
          },
        },
      },
    };
    const client = new LanguageClient("fxscope", "fxscope", server, clientOptions);
    this.client = client;
    this.ran = false;
    this.tracing = null;
    this.folders = [];
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.setState({ kind: "stopped" });
        for (const c of SERVER_COMMANDS) this.addFallback(c);
      }
    });
    this.dropFallbacks();
    try {
      await client.start();
    } catch (e) {
      this.log(`error: the server did not start: ${String(e)}`);
      this.setState({ kind: "failed", message: String(e) });
      for (const c of SERVER_COMMANDS) this.addFallback(c);
      return;
    }
    await client.setTrace(traceValue(settings));
    const offered = new Set(client.initializeResult?.capabilities.executeCommandProvider?.commands ?? []);
    for (const c of SERVER_COMMANDS) if (!offered.has(c)) this.addFallback(c);
    this.trackProgress(client);
    this.updateCounts();
    void this.refreshStatus();
    this.log(`server running (pid ${this.process?.pid ?? "?"}: ${serverCommand(choice).command} ${serverCommand(choice).args.join(" ")})`);
  }

  /** Track the server's work-done progress: the running indicator, and VS Code's own progress. */
  private trackProgress(client: LanguageClient): void {
    client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      let resolveDone: () => void = () => undefined;
      const done = new Promise<void>((resolve) => { resolveDone = resolve; });
      let reporter: vscode.Progress<{ message?: string }> | undefined;
      void vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: "fxscope" }, (p) => { reporter = p; return done; });
      const sub = client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === "end") {
          resolveDone();
          sub.dispose();
          this.tracing = null;
          this.ran = true;
          this.updateCounts();
          void this.refreshStatus();
          GraphPanel.open?.refreshSoon();
          return;
        }
        const n = parseProgress(value.message ?? (value.kind === "begin" ? value.title : undefined), value.percentage);
        this.tracing = n ?? this.tracing ?? { done: 0, total: 0 };
        this.updateCounts();
        reporter?.report({ message: value.message });
      });
      return null;
    });
  }

  /** The server's own view of each folder (worker, torch, sandbox, configuration errors). */
  private async refreshStatus(): Promise<void> {
    const client = this.client;
    if (client?.state !== State.Running) return;
    try {
      this.folders = parseStatus(await client.sendRequest("workspace/executeCommand", { command: "fxscope.status", arguments: [] }));
    } catch (e) {
      this.log(`fxscope.status failed: ${String(e)}`);
    }
    if (this.client === client) this.updateCounts();
  }

  private updateCounts(): void {
    if (this.client?.state !== State.Running) return;
    const counts: Counts = { errors: 0, warnings: 0, others: 0 };
    for (const [, diags] of vscode.languages.getDiagnostics()) {
      for (const d of diags) {
        if (d.source !== "fxscope") continue;
        if (d.severity === vscode.DiagnosticSeverity.Error) counts.errors++;
        else if (d.severity === vscode.DiagnosticSeverity.Warning) counts.warnings++;
        else counts.others++;
      }
    }
    const any = counts.errors + counts.warnings + counts.others > 0;
    this.setState({
      kind: "running", interpreter: this.choice?.command.join(" ") ?? "", tracing: this.tracing,
      counts: this.ran || any ? counts : null, folders: this.folders,
    });
  }

  private folderNames(result: unknown, key: string): string {
    const uris = (result as Record<string, unknown> | null)?.[key];
    const names = Array.isArray(uris) ? uris.filter((u): u is string => typeof u === "string").map((u) => path.basename(vscode.Uri.parse(u).fsPath)) : [];
    return names.length ? names.join(", ") : "the workspace";
  }

  private retraced(result: unknown): void {
    const where = this.folderNames(result, "retracing");
    this.log(`re-trace requested: ${where}`);
    vscode.window.setStatusBarMessage(`$(sync~spin) fxscope: re-tracing ${where}`, 5000);
  }

  private cleared(result: unknown): void {
    const where = this.folderNames(result, "cleared");
    this.log(`cache cleared: ${where}`);
    void vscode.window.showInformationMessage(`fxscope: cleared the result cache of ${where}. The results shown stay until their targets are traced again.`,
      "Re-trace Now").then((pick) => { if (pick) void vscode.commands.executeCommand("fxscope.retrace"); });
  }

  /** After a code action that wrote files other than the edited one: say which, and offer to open them. */
  private async filesWritten(title: string, uris: string[]): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const files = uris.map((u) => vscode.Uri.parse(u));
    const message = writtenMessage(title, files.map((f) => (folder ? path.relative(folder, f.fsPath) : f.fsPath)));
    this.log(message);
    const buttons = files.length === 1 ? ["Open"] : files.map((f) => `Open ${path.basename(f.fsPath)}`);
    const pick = await vscode.window.showInformationMessage(message, ...buttons);
    const index = pick === "Open" ? 0 : pick ? buttons.indexOf(pick) : -1;
    if (index >= 0) await vscode.window.showTextDocument(files[index], { preview: false });
  }

  /** "fxscope: Select Interpreter": the Python extension's picker when it is installed (and
   * fxscope follows it), the workspace's virtual environments, or a path of the user's choice. */
  private async selectInterpreter(pythonPicker = false): Promise<void> {
    if (pythonPicker && hasPythonExtension()) {
      // fxscope follows the Python extension's choice: its own picker is the one to use.
      await vscode.commands.executeCommand("python.setInterpreter");
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    const current = this.choice?.command.join(" ");
    type Item = vscode.QuickPickItem & { run: () => Promise<string[] | null | undefined> };
    const items: Item[] = [];
    if (hasPythonExtension()) {
      items.push({
        label: "$(python) Use the Python extension's interpreter…", detail: "Pick it in the Python extension; fxscope follows that choice.",
        run: async () => {
          await vscode.commands.executeCommand("python.setInterpreter");
          return null; // null: clear fxscope.interpreter
        },
      });
    }
    for (const p of candidateInterpreters(folder?.uri.fsPath, process.env, existsSync, process.platform)) {
      items.push({ label: p, description: p === current ? "current" : undefined, run: async () => [p] });
    }
    items.push({
      label: "$(edit) Enter interpreter path…",
      run: async () => {
        const typed = await vscode.window.showInputBox({ prompt: "Python interpreter with fxscope and torch", value: current ?? "", ignoreFocusOut: true });
        return typed?.trim() ? [typed.trim()] : undefined;
      },
    });
    items.push({
      label: "$(folder-opened) Browse…",
      run: async () => {
        const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: "Select Interpreter", defaultUri: folder?.uri });
        return picked?.[0] ? [picked[0].fsPath] : undefined;
      },
    });
    const pick = await vscode.window.showQuickPick(items, { title: "fxscope: Select Interpreter", placeHolder: current ? `Current: ${current}` : undefined });
    if (!pick) return;
    const value = await pick.run();
    if (value === undefined) return;
    const target = folder ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration("fxscope", folder?.uri).update("interpreter", value ?? undefined, target);
    this.log(value ? `interpreter set to ${value.join(" ")}` : "interpreter: following the Python extension");
    // A changed setting (or the Python extension's choice) restarts the server by itself; picking
    // the interpreter in use again checks it again (e.g. after installing torch there).
    if (value !== null && sameInterpreter({ command: value, source: "setting" }, this.choice)) void this.restart("interpreter selected");
  }

  /** `fxscope.showGraph [target [module]]`: ask the server, then draw the answer. */
  private async showGraph(args: unknown[], send: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
    let parsed = graphArguments(args);
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!parsed) {
      const editor = vscode.window.activeTextEditor;
      const name = editor && classAtLine(editor.document.getText(), editor.selection.active.line);
      if (!editor || !name || !folder) {
        void vscode.window.showInformationMessage("fxscope: put the cursor inside an nn.Module class (or use its code lens) to show its FX graph.");
        return undefined;
      }
      const base = vscode.workspace.getWorkspaceFolder(editor.document.uri) ?? folder;
      parsed = { target: targetId(path.relative(base.uri.fsPath, editor.document.uri.fsPath), name), module: null };
    }
    const sendArgs = parsed.module === null ? [parsed.target] : [parsed.target, parsed.module];
    this.log(`showGraph ${sendArgs.join(" ")}`);
    const result = (await send(sendArgs)) as ShowGraphResult | null | undefined;
    if (!result || (!result.graph && !result.text)) {
      void vscode.window.showWarningMessage(`fxscope: no graph for ${parsed.target}`);
      return result;
    }
    const request = (target: string, module: string | null): Promise<ShowGraphResult | null | undefined> =>
      send(module === null ? [target] : [target, module]) as Promise<ShowGraphResult | null | undefined>;
    GraphPanel.show(this.context.extensionUri, result, folder?.uri, this.output, parsed.module, request);
    return result;
  }

  async stop(): Promise<void> {
    const client = this.client;
    const child = this.process;
    this.client = undefined;
    this.process = undefined;
    if (!client) return;
    if (child) this.stopping.add(child);
    try {
      if (client.state === State.Running || client.state === State.Starting) await client.stop(5000);
    } catch (e) {
      this.log(`stopping the server: ${String(e)}`);
    }
    if (child && child.exitCode === null && child.signalCode === null) {
      // It did not exit after shutdown/exit: end it (its worker processes die with it).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { child.kill("SIGKILL"); resolve(); }, 2000);
        child.once("exit", () => { clearTimeout(timer); resolve(); });
      });
    }
    for (const c of SERVER_COMMANDS) this.addFallback(c);
  }

  dispose(): void {
    for (const d of this.fallbacks.values()) d.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** ``action`` with a command after its edit that says which other files it wrote, if any. */
function announceWrites(action: vscode.CodeAction, edited: vscode.Uri): vscode.CodeAction {
  if (!action.edit || action.command) return action;
  const files = writtenFiles(action.edit.entries().map(([uri]) => uri.toString()), edited.toString());
  if (files.length) action.command = { title: "fxscope: files written", command: "fxscope.filesWritten", arguments: [action.title, files] };
  return action;
}

function traceValue(settings: FxscopeSettings): Trace {
  return { off: Trace.Off, messages: Trace.Messages, verbose: Trace.Verbose }[settings.traceServer];
}

/** Run the probe with the chosen interpreter: fxscope and a supported torch there, or what is missing. */
function runProbe(choice: InterpreterChoice): Promise<ProbeVerdict> {
  const { command, args } = probeArgs(choice);
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.on("error", (e) => resolve({ kind: "error", message: e.message }));
    child.on("close", (code) => resolve(probeVerdict(code, stdout, stderr)));
  });
}

let extension: Extension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extension = new Extension(context);
  context.subscriptions.push(extension);
  await extension.activate();
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
}
