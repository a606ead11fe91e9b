// esbuild options shared by the build (esbuild.mjs) and the test that checks the committed bundle.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const graphSrc = join(here, "..", "graph", "src");
export const packageStatic = join(here, "..", "..", "daemon", "fxscope", "graphview", "static");

/** The renderer bundle: the same bytes in the .vsix and in the Python package. */
export const graphOptions = {
  entryPoints: [join(graphSrc, "index.ts")],
  bundle: true,
  format: "iife",
  globalName: "FxscopeGraph",
  platform: "browser",
  target: ["es2020"],
  minify: true,
  legalComments: "eof",
  nodePaths: [join(here, "node_modules")],
  logLevel: "warning",
};
