/**
 * Build of the renderer glue page (tests/browser/test_glue.py builds it into a temp
 * folder with `--outDir`). The package is imported by its npm name and resolved to its sources, so
 * no `npm run build` of the package is needed first.
 */

import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const source = (path: string): string => fileURLToPath(new URL(`../../../frontend/src/${path}`, import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  cacheDir: fileURLToPath(new URL("../../../node_modules/.vite-glue", import.meta.url)),
  plugins: [react()],
  resolve: {
    alias: [
      { find: /^@deerflow\/knowledge-citations\/knowledge\.css$/, replacement: source("components/knowledge.css") },
      { find: /^@deerflow\/knowledge-citations$/, replacement: source("index.ts") },
    ],
  },
  build: { emptyOutDir: true, target: "es2022", sourcemap: false, chunkSizeWarningLimit: 4096 },
});
