/**
 * The README's "Without React" example, verbatim between the markers, executed. As in
 * readme-example.test.tsx, the README imports the package ("@deerflow/knowledge-citations/core",
 * the built dist/); this test imports the same names from the source.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { expect, it } from "vitest";

import { ENVELOPE_VERSION, handleFor, nativeHandle, sourceId } from "../src/core.js";

// --- README example: begin ---
import { readEnvelope, readNative } from "../src/core.js"; // "@deerflow/knowledge-citations/core"

/** The ids of the evidence one tool message verifiably carries, in either format. */
export function verifiedIds(message: { name?: string; content: unknown; artifact?: unknown }): string[] {
  const shared = readEnvelope(message.content, message.artifact).sources;
  const native = readNative(message.content, message.artifact, message.name).sources;
  return [...shared, ...native].map((source) => source.id);
}
// --- README example: end ---

it("is the example the README shows, verbatim", () => {
  const source = readFileSync(fileURLToPath(import.meta.url), "utf8");
  const begin = "// --- README example: begin ---\n";
  const example = source
    .slice(source.indexOf(begin) + begin.length, source.indexOf("// --- README example: end ---"))
    .replace('from "../src/core.js"; // "@deerflow/knowledge-citations/core"', 'from "@deerflow/knowledge-citations/core";');
  const readme = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../README.md"), "utf8");
  expect(readme).toContain("```ts\n" + example + "```");
});

it("returns the verified ids of a shared and of a native tool message, and none of a forged one", () => {
  const identity = { provider: "local", title: "Deer field guide", excerpt: "Deer eat acorns in autumn." };
  const record = { id: sourceId(identity), ...identity };
  const shared = {
    name: "knowledge_search",
    content: `[citation:${record.title}](${handleFor(record.id)})\n${record.excerpt}`,
    artifact: { knowledge_sources_version: ENVELOPE_VERSION, knowledge_sources: [record] },
  };
  expect(verifiedIds(shared)).toEqual([record.id]);

  const id = "0123456789abcdef0123456789abcdef-1";
  const chunk = {
    id,
    provider: "ragflow",
    dataset_id: "5b1e7c2a6f3d11f0b1a40242ac120006",
    document_id: "a6c3d2e06f3e11f0b1a40242ac120006",
    chunk_id: "9f2c41d07be3a5e1",
    dataset_name: "HR Policies",
    document_name: "Employee_Handbook_2026.pdf",
    text: "Employees accrue leave.",
    truncated: false,
    pages: [14],
  };
  const native = {
    name: "knowledge_search",
    content: `[citation:1](${nativeHandle(id)}) HR Policies / Employee_Handbook_2026.pdf\n${chunk.text}`,
    artifact: { knowledge_sources: { version: 1, sources: [chunk] } },
  };
  expect(verifiedIds(native)).toEqual([id]);

  expect(verifiedIds({ ...shared, content: "no handle here" })).toEqual([]);
  expect(verifiedIds({ ...native, name: "web_search" })).toEqual([]);
});
