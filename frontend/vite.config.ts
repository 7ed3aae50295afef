/**
 * Library build of @deerflow/knowledge-citations: `npm run build` writes dist/index.js and
 * dist/core.js (ES modules, dependencies external) beside one module per source module (so a
 * host's bundler drops every module the host's imports do not reach, not just unused exports of
 * one big chunk), the stylesheets (knowledge.css, citations.css, shadcn.css), and — via `tsc -p tsconfig.build.json` — the .d.ts files.
 * Tests use vitest.config.ts, not this file.
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

const RENDERER_ONLY = /\/\* renderer-only: begin[^*]*\*\/\n[\s\S]*?\/\* renderer-only: end \*\/\n\n?/g;

/**
 * Ship the stylesheets (components never import CSS, so apps choose when to load them):
 * knowledge.css whole; citations.css, the same without the blocks marked renderer-only (for hosts
 * that keep their own Markdown renderer and use the glue); shadcn.css, the badge look.
 */
function copyStylesheets(): Plugin {
  const source = (name: string): string =>
    readFileSync(fileURLToPath(new URL(`./src/components/${name}`, import.meta.url)), "utf8");
  return {
    name: "deerflow-knowledge-css",
    generateBundle() {
      const sheet = source("knowledge.css");
      const glue = sheet.replace(RENDERER_ONLY, "");
      if (glue === sheet || /renderer-only: (begin|end)/.test(glue)) this.error("knowledge.css: unbalanced renderer-only marks");
      this.emitFile({ type: "asset", fileName: "knowledge.css", source: sheet });
      this.emitFile({ type: "asset", fileName: "citations.css", source: glue });
      this.emitFile({ type: "asset", fileName: "shadcn.css", source: source("shadcn.css") });
    },
  };
}

export default defineConfig({
  cacheDir: fileURLToPath(new URL("../node_modules/.vite", import.meta.url)),
  plugins: [react(), copyStylesheets()],
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
        preserveModules: true,
        preserveModulesRoot: fileURLToPath(new URL("./src", import.meta.url)),
        // The React entry is a client module for React Server Components hosts (Next.js): its
        // first statement is the directive, which bundling would otherwise drop. The `/core`
        // entry (and the chunk it shares) stays directive-free, callable from server code.
        banner: (chunk) => (chunk.isEntry && chunk.name === "index" ? '"use client";' : ""),
      },
    },
  },
});
