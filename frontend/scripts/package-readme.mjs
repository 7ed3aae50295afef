/**
 * The npm package's README is the root README's "Rendering citations" section with a short
 * header: `node scripts/package-readme.mjs` writes frontend/README.md, and
 * test/package-files.test.ts fails when the committed file and the root README drift apart.
 */

import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SECTION = "## Rendering citations\n";

/** frontend/README.md for the given root README text. */
export function packageReadme(rootReadme) {
  const start = rootReadme.indexOf(SECTION);
  if (start < 0) throw new Error(`the root README has no "${SECTION.trim()}" section`);
  const next = rootReadme.indexOf("\n## ", start + SECTION.length);
  const section = rootReadme.slice(start, next < 0 ? undefined : next + 1).trimEnd();
  return `# @deerflow/knowledge-citations

The TypeScript half of deerflow-knowledge (the Python package \`deerflow-knowledge\`): the
evidence contract's source ids, envelope reader and citation scanner, and a React renderer whose
citation chips show only evidence re-verified in the browser.

## Install

\`\`\`sh
npm install @deerflow/knowledge-citations
\`\`\`

\`react\` (18.3 or 19) is a peer dependency: the package uses your app's React, never its own.
The module is ESM-only; load the stylesheet once with
\`import "@deerflow/knowledge-citations/knowledge.css"\`.

${section}

## License

MIT
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  writeFileSync(new URL("../README.md", import.meta.url), packageReadme(root));
}
