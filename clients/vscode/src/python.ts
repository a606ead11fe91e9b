/** The Python extension's active interpreter (when that extension is installed). */

import * as vscode from "vscode";

interface PythonApi {
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand: string[] | undefined };
    onDidChangeExecutionDetails?: vscode.Event<vscode.Uri | undefined>;
  };
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path: string };
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION = "ms-python.python";

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

/** The active interpreter's command for ``resource``, or undefined without the extension. */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string[] | undefined> {
  const py = await api();
  const details = py?.settings?.getExecutionDetails?.(resource)?.execCommand;
  if (details?.length) return details;
  const path = py?.environments?.getActiveEnvironmentPath?.(resource)?.path;
  return path ? [path] : undefined;
}

/** Call ``listener`` when the user picks another interpreter in the Python extension. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const py = await api();
  const event = py?.settings?.onDidChangeExecutionDetails ?? py?.environments?.onDidChangeActiveEnvironmentPath;
  return event ? event(() => listener()) : undefined;
}

/** Whether the Python extension is installed (its interpreter picker can be offered). */
export function hasPythonExtension(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}
