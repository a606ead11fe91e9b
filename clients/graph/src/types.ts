/**
 * The graph document (version 1) that the renderer draws.
 *
 * Python writes it (`fxscope.graphview.graph_document`), the CLI embeds it in HTML
 * (`fxscope graph --format html`, `fxscope check --html-report`) and the language server
 * returns it from `fxscope.showGraph` as `result.graph`. docs/graph-format.md describes it.
 */

export interface GraphNode {
  name: string;
  op: string; // placeholder | get_attr | call_function | call_method | call_module | output
  target: string;
  scope: string; // module path of the instance that produced the node ("" = root)
  scope_type: string; // qualified class name of that module
  inputs: string[]; // names of the nodes this node reads (same graph)
  file?: string; // root-relative posix path (absolute outside the workspace)
  line?: number; // 1-based
}

/** Where the graph break that ended a graph torch.compile captured is, and its type. */
export interface GraphEnd {
  reason: string;
  file: string;
  line: number;
}

export interface FxGraph {
  module: string; // module path this graph was traced for ("" = the target itself)
  nodes: GraphNode[];
  analysis?: string; // "compile": a graph torch.compile captured (absent: fxscope's own FX graph)
  ends?: GraphEnd; // compile: the graph break that ended it (absent for the last graph)
}

export interface ModuleInfo {
  path: string;
  type: string;
  status: string; // traced | leaf | failed | ...
  file?: string;
  line?: number;
}

export interface FindingScope {
  path: string;
  type?: string;
  target?: string;
}

export interface Finding {
  code: string;
  severity: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
  end_line?: number;
  end_column?: number;
  hint?: string;
  target?: string;
  scopes?: FindingScope[];
}

export interface GraphDocument {
  version: 1;
  target: string;
  status: string;
  module: string | null;
  root?: string;
  graphs: FxGraph[];
  modules: ModuleInfo[];
  findings: Finding[];
}
