import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

// The SDK tests against a real gateway process (started by test/gateway/global-setup.ts).
export default defineConfig({
  cacheDir: fileURLToPath(new URL("../node_modules/.vite", import.meta.url)),
  test: {
    include: ["test/gateway/**/*.test.ts", "test/gateway/**/*.test.tsx"],
    environment: "node",
    globalSetup: ["test/gateway/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
