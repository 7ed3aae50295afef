import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

export default defineConfig({
  // Keep Vite's cache in the workspace root's node_modules, so frontend/ holds no generated files.
  cacheDir: fileURLToPath(new URL("../node_modules/.vite", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
    // The SDK tests need a gateway process: vitest.gateway.config.ts (npm run test:gateway).
    exclude: ["test/gateway/**", "**/node_modules/**"],
    environment: "node",
  },
});
