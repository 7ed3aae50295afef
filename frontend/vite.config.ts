/**
 * Library build of @deerflow/knowledge-citations: `npm run build` writes dist/index.js and
 * dist/core.js (ES modules, dependencies external; both import one shared chunk of the readers),
 * dist/knowledge.css, and — via `tsc -p tsconfig.build.json` — the .d.ts files. Tests use
 * vitest.config.ts, not this file.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
const external = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];
const isExternal = (id: string): boolean =>
  external.some((name) => id === name || id.startsWith(`${name}/`));

/** Ship the stylesheet as-is (components never import CSS, so apps choose when to load it). */
function copyStylesheet(): Plugin {
  const source = fileURLToPath(new URL("./src/components/knowledge.css", import.meta.url));
  return {
    name: "deerflow-knowledge-css",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "knowledge.css", source: readFileSync(source, "utf8") });
    },
  };
}

export default defineConfig({
  cacheDir: fileURLToPath(new URL("../node_modules/.vite", import.meta.url)),
  plugins: [react(), copyStylesheet()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    target: "es2022",
    minify: false,
    lib: {
      // Two entry points: the whole package, and `/core` (the readers without React or a parser).
      entry: {
        index: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
        core: fileURLToPath(new URL("./src/core.ts", import.meta.url)),
      },
      formats: ["es"],
      fileName: (_format, name) => `${name}.js`,
    },
    rolldownOptions: {
      external: isExternal,
      output: {
        // The React entry is a client module for React Server Components hosts (Next.js): its
        // first statement is the directive, which bundling would otherwise drop. The `/core`
        // entry (and the chunk it shares) stays directive-free, callable from server code.
        banner: (chunk) => (chunk.isEntry && chunk.name === "index" ? '"use client";' : ""),
      },
    },
  },
});
