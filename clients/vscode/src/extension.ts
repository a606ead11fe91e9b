/**
 * fxscope for VS Code: starts `fxscope serve` (stdio) with the chosen Python interpreter in a
 * trusted workspace, shows its state in the status bar, and draws FX graphs in a webview.
 */

import { spawn } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  LanguageClient, State, Trace, WorkDoneProgress, WorkDoneProgressCreateRequest,
  type LanguageClientOptions, type ServerOptions as LspServerOptions,
} from "vscode-languageclient/node";

import { GraphPanel, type ShowGraphResult } from "./graphPanel";
import { chooseInterpreter, missingMessage, probeArgs, sameInterpreter, serverCommand, type InterpreterChoice } from "./interpreter";
import { activeInterpreter, onInterpreterChange } from "./python";
import { needsNotify, needsRestart, readSettings, serverOptions, type FxscopeSettings } from "./settings";
import { parseProgress, statusText, type ServerState } from "./statusText";
import { classAtLine, graphArguments, targetId } from "./targets";

/** Commands the server executes (`workspace/executeCommand`). */
const SERVER_COMMANDS = ["fxscope.showGraph", "fxscope.retrace", "fxscope.clearCache"] as const;

class Extension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private choice: InterpreterChoice | undefined;
  private readonly output = vscode.window.createOutputChannel("fxscope");
  private readonly status = vscode.window.createStatusBarItem("fxscope.status", vscode.StatusBarAlignment.Left, 50);
  private readonly disposables: vscode.Disposable[] = [];
  private fallbacks = new Map<string, vscode.Disposable>();
  private restarting: Promise<void> = Promise.resolve();
  private tracing = false;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.status.name = "fxscope";
    this.status.command = "fxscope.showOutput";
    this.status.show();
    this.disposables.push(this.output, this.status);
  }

  settings(): FxscopeSettings {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const cfg = vscode.workspace.getConfiguration("fxscope", folder?.uri);
    return readSettings((key) => cfg.get(key));
  }

  setState(state: ServerState): void {
    const s = statusText(state);
    this.status.text = s.text;
    this.status.tooltip = s.tooltip;
    this.status.backgroundColor = s.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  log(line: string): void {
    this.output.appendLine(`[${new Date().toISOString()}] ${line}`);
  }

  async activate(): Promise<void> {
    this.disposables.push(
      vscode.commands.registerCommand("fxscope.restartServer", () => this.restart("restart requested")),
      vscode.commands.registerCommand("fxscope.showOutput", () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((k) => e.affectsConfiguration(k))) void this.restart("settings changed");
        else if (needsNotify((k) => e.affectsConfiguration(k)) && this.client?.state === State.Running) {
          void this.client.sendNotification("workspace/didChangeConfiguration", { settings: { fxscope: serverOptions(this.settings()) } });
        }
        if (e.affectsConfiguration("fxscope.trace.server") && this.client) void this.client.setTrace(traceValue(this.settings()));
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart("workspace trusted")),
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.restart("workspace folders changed")),
      vscode.languages.onDidChangeDiagnostics(() => this.updateIdle()),
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
      void vscode.window.showWarningMessage(`fxscope: the server is not running (${this.status.tooltip ?? "see the output"}).`);
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
    const probe = await runProbe(choice);
    if (probe === "missing") {
      const { message, install } = missingMessage(choice);
      this.log(message);
      this.setState({ kind: "missing", interpreter: shown });
      void vscode.window.showErrorMessage(message, "Copy Install Command", "Open Settings").then((pick) => {
        if (pick === "Copy Install Command") void vscode.env.clipboard.writeText(install);
        else if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "fxscope.interpreter");
      });
      return;
    }
    if (probe !== "ok") {
      this.log(`cannot run ${shown}: ${probe}`);
      this.setState({ kind: "failed", message: `cannot run ${shown}` });
      void vscode.window.showErrorMessage(`fxscope: cannot run the Python interpreter ${shown}: ${probe}. Set fxscope.interpreter.`, "Open Settings")
        .then((pick) => { if (pick) void vscode.commands.executeCommand("workbench.action.openSettings", "fxscope.interpreter"); });
      return;
    }
    await this.start(choice, settings);
  }

  private async start(choice: InterpreterChoice, settings: FxscopeSettings): Promise<void> {
    const { command, args } = serverCommand(choice);
    const folder = vscode.workspace.workspaceFolders![0];
    const server: LspServerOptions = { command, args, options: { cwd: folder.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: "1" } } };
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
          if (cmd !== "fxscope.showGraph") return next(cmd, cmdArgs);
          return this.showGraph(cmdArgs, (a) => next(cmd, a));
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
      this.log(`the server did not start: ${String(e)}`);
      this.setState({ kind: "failed", message: String(e) });
      for (const c of SERVER_COMMANDS) this.addFallback(c);
      return;
    }
    await client.setTrace(traceValue(settings));
    const offered = new Set(client.initializeResult?.capabilities.executeCommandProvider?.commands ?? []);
    for (const c of SERVER_COMMANDS) if (!offered.has(c)) this.addFallback(c);
    this.trackProgress(client);
    this.updateIdle();
    this.log(`server running (pid via ${command} ${args.join(" ")})`);
  }

  /** Show "tracing n/N" from the server's work-done progress, and VS Code's own progress too. */
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
          this.tracing = false;
          this.updateIdle();
          return;
        }
        const n = parseProgress(value.message ?? (value.kind === "begin" ? value.title : undefined), value.percentage);
        if (n) {
          this.tracing = n.done < n.total;
          this.setState({ kind: "tracing", ...n });
          if (!this.tracing) this.updateIdle();
        }
        reporter?.report({ message: value.message });
      });
      return null;
    });
  }

  private updateIdle(): void {
    if (this.client?.state !== State.Running || this.tracing) return;
    let errors = 0;
    let warnings = 0;
    let others = 0;
    for (const [, diags] of vscode.languages.getDiagnostics()) {
      for (const d of diags) {
        if (d.source !== "fxscope") continue;
        if (d.severity === vscode.DiagnosticSeverity.Error) errors++;
        else if (d.severity === vscode.DiagnosticSeverity.Warning) warnings++;
        else others++;
      }
    }
    this.setState({ kind: "idle", errors, warnings, others });
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
    GraphPanel.show(this.context.extensionUri, result, folder?.uri, this.output);
    return result;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.state === State.Running || client.state === State.Starting) await client.stop(5000);
    } catch (e) {
      this.log(`stopping the server: ${String(e)}`);
    }
    for (const c of SERVER_COMMANDS) this.addFallback(c);
  }

  dispose(): void {
    for (const d of this.fallbacks.values()) d.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

function traceValue(settings: FxscopeSettings): Trace {
  return { off: Trace.Off, messages: Trace.Messages, verbose: Trace.Verbose }[settings.traceServer];
}

/** Whether the interpreter runs and can import fxscope: "ok", "missing" or an error message. */
function runProbe(choice: InterpreterChoice): Promise<string> {
  const { command, args } = probeArgs(choice);
  return new Promise((resolve) => {
    let stderr = "";
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.on("error", (e) => resolve(e.message));
    child.on("close", (code) => resolve(code === 0 ? "ok" : code === 3 ? "missing" : `exit ${code}: ${stderr.trim().slice(-300)}`));
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
