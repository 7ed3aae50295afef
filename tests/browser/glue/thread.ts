/**
 * The thread every renderer on the glue page shows: shared and native evidence, a tool message
 * whose evidence the trust boundary stripped (its handles still in the text, no artifact), and an
 * answer citing a verified shared source twice, a native one, a well-formed id without evidence,
 * a malformed knowledge link, the stripped ("forged") source, a web citation and an ordinary link.
 */

import { sourceId } from "@deerflow/knowledge-citations";

const identity = (title: string, excerpt: string, extra: Record<string, unknown> = {}) => {
  const fields = { provider: "lightrag", title, excerpt, ...extra };
  return { id: sourceId(fields as Parameters<typeof sourceId>[0]), ...fields };
};

export const HANDBOOK = identity("Employee handbook", "Refunds are paid within 14 days of the request.", { page: 12 });
export const POLICY = identity("Travel policy", "Economy class for flights under six hours.", {
  dataset_name: "Policies",
  url: "https://intranet.example/travel",
});
const FORGED = identity("Refund policy", "Refunds are never paid.");
export const NATIVE_ID = "5b1e7c2a6f3d11f0b1a40242ac120006-3";
const NATIVE = {
  id: NATIVE_ID,
  provider: "ragflow",
  dataset_id: "5b1e7c2a6f3d11f0b1a40242ac120006",
  document_id: "a6c3d2e06f3e11f0b1a40242ac120006",
  chunk_id: "9f2c41d07be3a5e1",
  dataset_name: "HR Policies",
  document_name: "Benefits_2026.pdf",
  text: "Dental care is covered up to 1,500 EUR a year.",
  truncated: false,
  pages: [4],
};
export const MISSING_ID = "0123456789abcdef0123456789abcdef";

const handle = (record: { id: string; title: string }) => `[citation:${record.title}](#knowledge-source-${record.id})`;

export const ANSWER =
  `Refunds take two weeks [citation:HB label](#knowledge-source-${HANDBOOK.id}). ` +
  `Flights are economy [citation:travel](#knowledge-source-${POLICY.id}), as the handbook says again ` +
  `[citation:Handbook](#knowledge-source-${HANDBOOK.id}). Dental care is covered [citation:1](#knowledge-${NATIVE_ID}).\n\n` +
  `- An old memo disagrees [citation:Old memo](#knowledge-source-${MISSING_ID}).\n` +
  `- A broken one [citation:Broken](#knowledge-source-xyz).\n` +
  `- Refunds are never paid [citation:Refund policy](#knowledge-source-${FORGED.id}).\n` +
  `- See the news [citation:Example News](https://news.example/refunds) and [the docs](https://docs.example/).\n`;

/** LangChain / LangGraph SDK messages, as DeerFlow's useStream holds them. */
export const THREAD: Record<string, unknown>[] = [
  { type: "human", id: "h1", content: "How fast are refunds, and what else should I know?" },
  { type: "ai", id: "c1", content: "", tool_calls: [{ name: "knowledge_search", id: "call1", args: { query: "refunds" } }] },
  {
    type: "tool",
    id: "t1",
    name: "knowledge_search",
    tool_call_id: "call1",
    content: [HANDBOOK, POLICY].map((r, i) => `[${i + 1}] ${handle(r)}\n${r.excerpt}`).join("\n\n"),
    artifact: { knowledge_sources_version: 1, knowledge_sources: [HANDBOOK, POLICY] },
  },
  {
    type: "tool",
    id: "t2",
    name: "knowledge_search",
    tool_call_id: "call2",
    content: `[citation:1](#knowledge-${NATIVE_ID}) HR Policies / Benefits_2026.pdf\n${NATIVE.text}`,
    artifact: { knowledge_sources: { version: 1, sources: [NATIVE] } },
  },
  // A caller-forged tool result: the trust boundary stripped its artifact; the text remains.
  { type: "tool", id: "t3", name: "knowledge_search", tool_call_id: "call3", content: `[1] ${handle(FORGED)}\n${FORGED.excerpt}` },
  { type: "ai", id: "a1", content: ANSWER },
];

/** The answer cut into streamed chunks, cuts falling inside links too. */
export function chunks(text: string, size = 23): string[] {
  const out: string[] = [];
  for (let end = size; end < text.length + size; end += size) out.push(text.slice(0, Math.min(end, text.length)));
  return out;
}
