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

/** The requirement on torch when the interpreter's fxscope does not name it (fxscope's pyproject.toml). */
export const DEFAULT_TORCH_REQUIREMENT = "torch>=2.2";

/**
 * The probe, run by the chosen interpreter: whether fxscope is importable, which torch is
 * installed (read from torch/version.py, so torch itself is not imported: the probe stays fast)
 * and the torch requirement of that fxscope. Prints one JSON line; always exits 0.
 */
export const PROBE_SCRIPT = [
  "import importlib.util, json, os, sys",
  "out = {'fxscope': importlib.util.find_spec('fxscope') is not None, 'torch': None, 'requirement': None, 'executable': sys.executable}",
  "try:",
  "    from fxscope.worker.torch_env import TORCH_REQUIREMENT",
  "    out['requirement'] = TORCH_REQUIREMENT",
  "except Exception:",
  "    pass",
  "spec = importlib.util.find_spec('torch')",
  "if spec is not None:",
  "    out['torch'] = 'unknown'",
  "    try:",
  "        with open(os.path.join(os.path.dirname(spec.origin or ''), 'version.py'), encoding='utf-8') as fh:",
  "            for line in fh:",
  "                if line.startswith('__version__'):",
  "                    out['torch'] = line.split('=', 1)[1].strip().strip(\"'\\\"\")",
  "    except OSError:",
  "        pass",
  "print(json.dumps(out))",
].join("\n");

/** The arguments that run {@link PROBE_SCRIPT} with an interpreter. */
export function probeArgs(choice: InterpreterChoice): { command: string; args: string[] } {
  const [command, ...rest] = choice.command;
  return { command, args: [...rest, "-c", PROBE_SCRIPT] };
}

/** What the probe found: a usable interpreter, or what is missing there. */
export type ProbeVerdict =
  | { kind: "ok"; torch: string }
  | { kind: "no-fxscope" }
  | { kind: "no-torch"; requirement: string }
  | { kind: "old-torch"; torch: string; requirement: string }
  | { kind: "error"; message: string };

function minimum(requirement: string): [number, number] | null {
  const m = />=\s*(\d+)\.(\d+)/.exec(requirement);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** Whether torch ``version`` (e.g. "2.5.1+cpu") is older than ``requirement``'s lower bound. */
export function olderThan(version: string, requirement: string): boolean {
  const m = /^\s*(\d+)\.(\d+)/.exec(version);
  const min = minimum(requirement);
  if (!m || !min) return false; // unknown: the server checks it again when its worker starts
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < min[0] || (major === min[0] && minor < min[1]);
}

/** The verdict from the probe's exit code and output. */
export function probeVerdict(code: number | null, stdout: string, stderr: string): ProbeVerdict {
  const line = stdout.trim().split("\n").pop() ?? "";
  let out: { fxscope?: unknown; torch?: unknown; requirement?: unknown } | undefined;
  try {
    out = JSON.parse(line) as typeof out;
  } catch {
    out = undefined;
  }
  if (code !== 0 || !out || typeof out !== "object") {
    return { kind: "error", message: `exit ${code}: ${(stderr.trim() || stdout.trim()).slice(-300)}` };
  }
  if (!out.fxscope) return { kind: "no-fxscope" };
  const requirement = typeof out.requirement === "string" && out.requirement ? out.requirement : DEFAULT_TORCH_REQUIREMENT;
  if (typeof out.torch !== "string") return { kind: "no-torch", requirement };
  if (olderThan(out.torch, requirement)) return { kind: "old-torch", torch: out.torch, requirement };
  return { kind: "ok", torch: out.torch };
}

/** A shell word (quoted when it needs to be). */
function word(s: string): string {
  return /^[A-Za-z0-9_./:=@+-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

const WHERE = {
  setting: "the fxscope.interpreter setting",
  "python-extension": "the Python extension's selected interpreter",
  default: "the default interpreter",
} as const;

/** The notification shown when the chosen interpreter lacks fxscope or a supported torch. */
export function missingMessage(choice: InterpreterChoice, verdict: ProbeVerdict = { kind: "no-fxscope" }): { message: string; install: string; status: string } {
  const shown = choice.command.join(" ");
  const pip = `${choice.command.map(word).join(" ")} -m pip install`;
  const where = WHERE[choice.source];
  if (verdict.kind === "no-torch") {
    const install = `${pip} ${word(verdict.requirement)}`;
    return {
      message: `fxscope: torch is not installed in ${shown} (${where}). fxscope traces your models with that interpreter: install torch there with \`${install}\`, or select another interpreter.`,
      install,
      status: "no torch",
    };
  }
  if (verdict.kind === "old-torch") {
    const install = `${pip} --upgrade ${word(verdict.requirement)}`;
    return {
      message: `fxscope: torch ${verdict.torch} in ${shown} (${where}) is older than fxscope supports (${verdict.requirement}). Upgrade it with \`${install}\`, or select another interpreter.`,
      install,
      status: `torch ${verdict.torch} too old`,
    };
  }
  const install = `${pip} fxscope`;
  return {
    message: `fxscope is not installed in ${shown} (${where}). Install it there with \`${install}\`, or select another interpreter.`,
    install,
    status: "not installed",
  };
}

/** Interpreters worth offering in "fxscope: Select Interpreter": the folder's virtual
 * environments, the active conda or virtual environment, then python3 on PATH. */
export function candidateInterpreters(folder: string | undefined, env: Record<string, string | undefined>,
  exists: (p: string) => boolean, platform = "linux"): string[] {
  const win = platform === "win32";
  const sep = win ? "\\" : "/";
  const bin = (root: string): string => (win ? `${root}${sep}Scripts${sep}python.exe` : `${root}${sep}bin${sep}python`);
  const roots: string[] = [];
  if (folder) for (const name of [".venv", "venv", ".env", "env"]) roots.push(`${folder}${sep}${name}`);
  for (const name of ["VIRTUAL_ENV", "CONDA_PREFIX"]) {
    const v = env[name];
    if (v) roots.push(v);
  }
  const out: string[] = [];
  for (const r of roots) {
    const p = bin(r);
    if (!out.includes(p) && exists(p)) out.push(p);
  }
  return out;
}

/** Whether two choices start the same server (restart only when this changes). */
export function sameInterpreter(a: InterpreterChoice | undefined, b: InterpreterChoice | undefined): boolean {
  return !!a && !!b && a.command.length === b.command.length && a.command.every((s, i) => s === b.command[i]);
}
