// Build the extension (dist/extension.js), the graph renderer bundle (media/fxscope-graph.js,
// also the Python package's copy with --graph-package) and the unit tests (--tests).
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as esbuild from "esbuild";

import { graphOptions, graphSrc, here, packageStatic } from "./build-options.mjs";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

async function buildGraph() {
  mkdirSync(join(here, "media"), { recursive: true });
  await esbuild.build({ ...graphOptions, outfile: join(here, "media", "fxscope-graph.js") });
  copyFileSync(join(graphSrc, "graph.css"), join(here, "media", "fxscope-graph.css"));
  if (args.has("--graph-package")) {
    mkdirSync(packageStatic, { recursive: true });
    copyFileSync(join(here, "media", "fxscope-graph.js"), join(packageStatic, "fxscope-graph.js"));
    copyFileSync(join(here, "media", "fxscope-graph.css"), join(packageStatic, "fxscope-graph.css"));
  }
}

async function buildExtension() {
  const options = {
    entryPoints: [join(here, "src", "extension.ts")],
    bundle: true,
    format: "cjs",
    platform: "node",
    target: ["node18"],
    external: ["vscode"],
    outfile: join(here, "dist", "extension.js"),
    sourcemap: !production,
    minify: production,
    logLevel: "warning",
  };
  if (args.has("--watch")) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
    return;
  }
  await esbuild.build(options);
}

async function buildTests() {
  const dir = join(here, "test", "unit");
  const entries = readdirSync(dir).filter((f) => f.endsWith(".test.ts")).map((f) => join(dir, f));
  await esbuild.build({
    entryPoints: entries,
    bundle: true,
    format: "cjs",
    platform: "node",
    target: ["node18"],
    outdir: join(here, "out", "test"),
    external: ["vscode", "esbuild"],
    nodePaths: [join(here, "node_modules")],
    logLevel: "warning",
  });
}

if (args.has("--tests")) await buildTests();
else {
  await buildGraph();
  await buildExtension();
}
