// @vitest-environment jsdom
/**
 * The README's "Rendering citations" example, verbatim between the markers, executed. The one
 * difference: the README imports from "@deerflow/knowledge-citations", which resolves to the built
 * dist/; this test imports the same names from the source so it runs without a build.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";

// --- README example: begin ---
import { KnowledgeMarkdown, SourcesPanel, sourceId } from "../src/index.js"; // "@deerflow/knowledge-citations"
// In an app, also: import "@deerflow/knowledge-citations/knowledge.css";

// A tool result as LangGraph delivers it: citable handles + excerpts in `content`, the
// evidence envelope in `artifact` (normally written by deerflow-knowledge's `format_result`).
const identity = { provider: "local", title: "Deer field guide", excerpt: "Deer eat acorns in autumn." };
const record = { id: sourceId(identity), ...identity };
const messages = [
  { type: "human", id: "h1", content: "What do deer eat?" },
  {
    type: "tool",
    id: "t1",
    name: "knowledge_search",
    tool_call_id: "call-1",
    content: `[citation:${record.title}](#knowledge-source-${record.id})\n${record.excerpt}`,
    artifact: { knowledge_sources_version: 1, knowledge_sources: [record] },
  },
  { type: "ai", id: "a1", content: `Acorns [citation:Guide](#knowledge-source-${record.id}).` },
];

export function Answer({ index, streaming = false }: { index: number; streaming?: boolean }) {
  const message = messages[index]!;
  return (
    <article>
      <KnowledgeMarkdown
        markdown={message.content}
        messages={messages}
        messageIndex={index}
        streaming={streaming}
      />
      <SourcesPanel markdown={message.content} messages={messages} messageIndex={index} />
    </article>
  );
}
// --- README example: end ---

afterEach(cleanup);

it("is the example the README shows, verbatim", () => {
  const source = readFileSync(fileURLToPath(import.meta.url), "utf8");
  const begin = "// --- README example: begin ---\n";
  const example = source
    .slice(source.indexOf(begin) + begin.length, source.indexOf("// --- README example: end ---"))
    .replace('from "../src/index.js"; // "@deerflow/knowledge-citations"', 'from "@deerflow/knowledge-citations";');
  const readme = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../README.md"), "utf8");
  expect(readme).toContain("```tsx\n" + example + "```");
});

it("renders the README example", () => {
  render(<Answer index={2} />);
  expect(screen.getByRole("button", { name: "Source 1: Deer field guide" })).toBeTruthy();
  expect(screen.getByRole("region", { name: "Sources" }).textContent).toContain("Deer eat acorns in autumn.");
});
