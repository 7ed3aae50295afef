/**
 * What the npm tarball carries besides dist/: its README (generated from the root README's
 * "Rendering citations" section) and the root LICENSE, and React only as a peer.
 */
import { readFileSync } from "node:fs";

import { expect, it } from "vitest";

// @ts-expect-error -- a plain .mjs build script without declarations
import { packageReadme } from "../scripts/package-readme.mjs";

const read = (path: string): string => readFileSync(new URL(path, import.meta.url), "utf8");

it("ships the README generated from the root README (node scripts/package-readme.mjs)", () => {
  const generated = (packageReadme as (root: string) => string)(read("../../README.md"));
  expect(read("../README.md")).toBe(generated);
  expect(generated).toContain("```tsx\nimport { KnowledgeMarkdown, SourcesPanel, sourceId }");
});

it("ships the repository's LICENSE", () => {
  expect(read("../LICENSE")).toBe(read("../../LICENSE"));
});

it("takes React from the host app: a peer dependency, never a dependency", () => {
  const pkg = JSON.parse(read("../package.json")) as Record<string, Record<string, string>>;
  for (const name of ["react", "react-dom"]) expect(pkg["dependencies"]).not.toHaveProperty(name);
  expect(pkg["peerDependencies"]).toHaveProperty("react");
  expect(pkg["devDependencies"]).toHaveProperty("react");
});
