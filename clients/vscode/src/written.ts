/** Which files a code action writes besides the edited document, and how to say so (pure, unit-tested). */

/** The URIs of ``entries`` (a WorkspaceEdit's files, in order) other than ``edited``, each once. */
export function writtenFiles(entries: string[], edited: string): string[] {
  const out: string[] = [];
  for (const uri of entries) if (uri !== edited && !out.includes(uri)) out.push(uri);
  return out;
}

/** "fxscope: wrote a.py and b.toml (title)". */
export function writtenMessage(title: string, files: string[]): string {
  const names = files.length <= 1 ? files.join("")
    : `${files.slice(0, -1).join(", ")} and ${files[files.length - 1]}`;
  return `fxscope: wrote ${names} (${title.replace(/`/g, "")})`;
}
