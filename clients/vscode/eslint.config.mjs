// Lint the extension, its tests and the graph renderer (typescript-eslint's recommended rules).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "out/**", "media/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      "no-console": "off",
    },
  },
  {
    files: ["test/e2e/**/*.mjs", "esbuild.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly", setTimeout: "readonly", URL: "readonly", Buffer: "readonly", fetch: "readonly" } },
  },
);
