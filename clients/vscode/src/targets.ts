/** Find the fxscope target for the class under the cursor (pure text logic, unit-tested). */

/** The name of the innermost class whose body contains 0-based ``line`` (or whose header is there). */
export function classAtLine(text: string, line: number): string | null {
  const lines = text.split(/\r?\n/);
  const stack: { name: string; indent: number }[] = [];
  let found: string | null = null;
  for (let i = 0; i < lines.length && i <= line; i++) {
    const raw = lines[i];
    if (!raw.trim() || raw.trim().startsWith("#")) continue;
    const indent = raw.length - raw.trimStart().length;
    while (stack.length && indent <= stack[stack.length - 1].indent) stack.pop();
    const m = /^(\s*)class\s+([A-Za-z_][A-Za-z0-9_]*)\s*[(:]/.exec(raw);
    if (m) stack.push({ name: m[2], indent });
  }
  found = stack.length ? stack[stack.length - 1].name : null;
  return found;
}

/** The target id of a class: `<path relative to the root, posix>::<ClassName>`. */
export function targetId(relativePath: string, className: string): string {
  return `${relativePath.split("\\").join("/")}::${className}`;
}

/** The arguments of `fxscope.showGraph` given whatever the caller passed. */
export function graphArguments(args: unknown[]): { target: string; module: string | null } | null {
  const [target, module] = args;
  if (typeof target !== "string" || !target) return null;
  return { target, module: typeof module === "string" ? module : null };
}
