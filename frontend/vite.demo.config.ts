/**
 * Build of the bundled chat page (frontend/demo) into the Python package's static folder, where
 * the gateway serves it at `/`. `npm run build:demo` runs it; the output is not committed.
 */

import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL("./demo", import.meta.url)),
  base: "./",
  cacheDir: fileURLToPath(new URL("../node_modules/.vite-demo", import.meta.url)),
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL("../backend/deerflow/knowledge/server/static", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    rolldownOptions: {
      output: {
        // One chunk per library family, each under Vite's 500 kB warning: React, LangChain's
        // client (it brings @langchain/core and langsmith along) and the Markdown renderer.
        codeSplitting: {
          groups: [
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler)[\\/]/ },
            { name: "langchain", test: /node_modules[\\/](@langchain|langsmith)[\\/]/ },
            { name: "vendor", test: /node_modules[\\/]/ },
          ],
        },
      },
    },
  },
});
