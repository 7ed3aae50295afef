// @vitest-environment jsdom
/**
 * The README's `useStream` example, verbatim between the markers, typechecked (`npm run
 * typecheck` covers test/) and executed against the real gateway process of test/gateway/
 * global-setup.ts with the official client (`npm run test:gateway`).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, expect, inject, it } from "vitest";

// --- README useStream example: begin ---
import type { Message } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { KnowledgeMarkdown, SourcesPanel } from "../../src/index.js"; // "@deerflow/knowledge-citations"

export function Chat({ apiUrl = "http://127.0.0.1:8000/api" }: { apiUrl?: string }) {
  const stream = useStream<{ messages: Message[] }>({ apiUrl, assistantId: "agent", fetchStateHistory: { limit: 1 } });
  const { messages, isLoading } = stream;
  const ask = () => stream.submit({ messages: [{ type: "human", content: "How is a source id computed?" }] });
  return (
    <main>
      {messages.map((message, index) =>
        message.type === "ai" && message.content !== "" ? (
          <article key={message.id ?? index}>
            <KnowledgeMarkdown messages={messages} messageIndex={index} streaming={isLoading && index === messages.length - 1} />
            {!isLoading && <SourcesPanel messages={messages} messageIndex={index} />}
          </article>
        ) : null,
      )}
      <button onClick={ask} disabled={isLoading}>Ask</button>
    </main>
  );
}
// --- README useStream example: end ---

afterEach(cleanup);

it("is the example the README shows, verbatim", () => {
  const source = readFileSync(fileURLToPath(import.meta.url), "utf8");
  const begin = "// --- README useStream example: begin ---\n";
  const example = source
    .slice(source.indexOf(begin) + begin.length, source.indexOf("// --- README useStream example: end ---"))
    .replace('from "../../src/index.js"; // "@deerflow/knowledge-citations"', 'from "@deerflow/knowledge-citations";');
  const readme = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../../README.md"), "utf8");
  expect(readme).toContain("```tsx\n" + example + "```");
});

it(
  "asks a real gateway through useStream and renders verified chips",
  async () => {
    render(<Chat apiUrl={inject("gatewayUrl")} />);
    fireEvent.click(screen.getByRole("button", { name: "Ask" }));
    await waitFor(() => expect(screen.getByRole("region", { name: "Sources" })).toBeTruthy(), { timeout: 30_000 });
    const chips = screen.getAllByRole("button", { name: /^Source \d+: / });
    expect(chips.length).toBeGreaterThanOrEqual(1);
    expect(document.querySelector(".dk-unresolved")).toBeNull();
  },
  60_000,
);
