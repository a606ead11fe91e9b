/**
 * Which Python runs `fxscope serve` (no VS Code API here, so it is unit-tested under Node).
 *
 * Order: the `fxscope.interpreter` setting, else the Python extension's active interpreter
 * when that extension is installed, else `python3` (`python` on Windows).
 */

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface InterpreterChoice {
  /** The executable followed by its own arguments (e.g. `["conda", "run", "-n", "x", "python"]`). */
  command: string[];
  source: InterpreterSource;
}

export interface InterpreterInputs {
  /** `fxscope.interpreter` (an array; a plain string is accepted too). */
  setting: unknown;
  /** The Python extension's active interpreter for the folder, if that extension is installed. */
  pythonExtension?: string[] | undefined;
  workspaceFolder?: string | undefined;
  env?: Record<string, string | undefined>;
  home?: string | undefined;
  platform?: string;
}

/** Replace `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function substitute(value: string, inputs: Pick<InterpreterInputs, "workspaceFolder" | "env" | "home">): string {
  let out = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
    if (name === "workspaceFolder") return inputs.workspaceFolder ?? whole;
    if (name === "userHome") return inputs.home ?? whole;
    return inputs.env?.[envName ?? ""] ?? "";
  });
  if (inputs.home && (out === "~" || out.startsWith("~/"))) out = inputs.home + out.slice(1);
  return out;
}

function asList(setting: unknown): string[] {
  if (typeof setting === "string") return setting.trim() ? [setting.trim()] : [];
  if (Array.isArray(setting)) return setting.filter((s): s is string => typeof s === "string" && s.trim() !== "").map((s) => s.trim());
  return [];
}

/** The interpreter command for a folder. */
export function chooseInterpreter(inputs: InterpreterInputs): InterpreterChoice {
  const configured = asList(inputs.setting);
  if (configured.length) return { command: configured.map((s) => substitute(s, inputs)), source: "setting" };
  const fromExtension = (inputs.pythonExtension ?? []).filter((s) => s.trim() !== "");
  if (fromExtension.length) return { command: fromExtension, source: "python-extension" };
  return { command: [(inputs.platform ?? "linux") === "win32" ? "python" : "python3"], source: "default" };
}

/** The command line that starts the server over stdio. */
export function serverCommand(choice: InterpreterChoice): { command: string; args: string[] } {
  const [command, ...rest] = choice.command;
  return { command, args: [...rest, "-m", "fxscope", "serve"] };
}

/** The arguments that ask an interpreter whether fxscope is importable (exit 0 yes, 3 no). */
export function probeArgs(choice: InterpreterChoice): { command: string; args: string[] } {
  const [command, ...rest] = choice.command;
  const code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('fxscope') else 3)";
  return { command, args: [...rest, "-c", code] };
}

/** The notification shown when fxscope cannot be imported by the chosen interpreter. */
export function missingMessage(choice: InterpreterChoice): { message: string; install: string } {
  const shown = choice.command.join(" ");
  const install = `${shown} -m pip install fxscope`;
  const where = { setting: "the fxscope.interpreter setting", "python-extension": "the Python extension's selected interpreter", default: "the default interpreter" }[choice.source];
  return {
    message: `fxscope is not installed in ${shown} (${where}). Install it there with \`${install}\`, or choose another interpreter with the fxscope.interpreter setting.`,
    install,
  };
}

/** Whether two choices start the same server (restart only when this changes). */
export function sameInterpreter(a: InterpreterChoice | undefined, b: InterpreterChoice | undefined): boolean {
  return !!a && !!b && a.command.length === b.command.length && a.command.every((s, i) => s === b.command[i]);
}
