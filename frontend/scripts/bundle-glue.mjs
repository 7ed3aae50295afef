/**
 * What a host pays for the thread glue alone: bundles exactly the imports DeerFlow's patch makes
 * (`KnowledgeSources`, `KnowledgeMessage`, `KnowledgeLink`, `isKnowledgeHref`,
 * `KnowledgeSourcesPanel`) from a built package directory with rolldown, the host's own packages
 * (React, the unified / hast / mdast / micromark family) external, minified, in one chunk, and
 * prints JSON: the gzip size, the package modules that kept code, and the external packages the
 * bundle still imports. tests/test_npm_package.py checks it on the packed tarball.
 *
 *   node scripts/bundle-glue.mjs <package dir>      # e.g. dist/.. or an unpacked tarball
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";

import { rolldown } from "rolldown";

const GLUE = ["KnowledgeLink", "KnowledgeMessage", "KnowledgeSources", "KnowledgeSourcesPanel", "isKnowledgeHref"];
const HOST = /^(react|react-dom|unified|vfile|remark-|rehype-|hast-|mdast-|micromark)/;

const root = resolve(process.argv[2] ?? ".");
const work = mkdtempSync(join(tmpdir(), "bundle-glue-"));
try {
  const entry = join(work, "entry.js");
  writeFileSync(
    entry,
    `import { ${GLUE.join(", ")} } from ${JSON.stringify(join(root, "dist", "index.js"))};\n` +
      `globalThis.glue = [${GLUE.join(", ")}];\n`,
  );
  const imported = new Set();
  const bundle = await rolldown({
    input: entry,
    cwd: root,
    logLevel: "silent",
    external: (id) => {
      const host = HOST.test(id);
      if (host) imported.add(id);
      return host;
    },
  });
  const { output } = await bundle.generate({ format: "es", minify: true });
  const [chunk] = output;
  const modules = Object.entries(chunk.modules)
    .filter(([, info]) => info.renderedLength > 0)
    .map(([id]) => relative(root, id))
    .filter((id) => !id.startsWith(".."))
    .sort();
  const externals = [...new Set(chunk.imports)].sort();
  console.log(
    JSON.stringify({
      bytes: chunk.code.length,
      gzip: gzipSync(chunk.code, { level: 9 }).length,
      modules,
      externals,
    }),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
