// @vitest-environment jsdom
import { act, cleanup, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";

import {
  KnowledgeMarkdown,
  createSourceResolver,
  readEnvelope,
  type SourceResolver,
} from "../../src/index.js";
import { readNative } from "../../src/native.js";
import { ai, cite, human, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

let parses = 0;
/** A no-op remark plugin whose transformer runs once per Markdown parse. */
const countParses = () => () => {
  parses += 1;
};
const PLUGINS = [countParses];

function Transcript({
  messages,
  resolver,
}: {
  messages: ReadonlyArray<Record<string, unknown>>;
  resolver: SourceResolver;
}) {
  return (
    <div>
      {messages.map((message, index) =>
        message["type"] === "ai" ? (
          <KnowledgeMarkdown
            key={String(message["id"])}
            markdown={String(message["content"])}
            messages={messages}
            messageIndex={index}
            resolver={resolver}
            remarkPlugins={PLUGINS}
            streaming={index === messages.length - 1}
          />
        ) : message["type"] === "human" ? (
          <p key={String(message["id"])}>{String(message["content"])}</p>
        ) : null,
      )}
    </div>
  );
}

it("validates each tool message once and re-parses only the streaming message over 200 updates", () => {
  let validations = 0;
  const resolver = createSourceResolver({
    readShared: (content, artifact) => {
      validations += 1;
      return readEnvelope(content, artifact);
    },
    readNative,
  });
  // 1,000 messages: 200 turns of human, ai (tool call), tool (3 sources), ai answer, human ack; the
  // last ack is replaced by the streaming answer.
  const history: Array<Record<string, unknown>> = [];
  let last = sharedRecord({ title: "none", excerpt: "none" });
  for (let turn = 0; turn < 200; turn++) {
    const records = [0, 1, 2].map((k) => sharedRecord({ title: `Doc ${turn}.${k}`, excerpt: `Text ${turn}.${k}.` }));
    last = records[0]!;
    history.push(
      human(`question ${turn}`),
      ai(""),
      toolMessage(records),
      ai(`Answer ${turn} ${cite(records[0]!)} ${cite(records[2]!)}`),
      human("thanks"),
    );
  }
  history.pop();
  expect(history).toHaveLength(999);

  let text = `Streaming answer ${cite(last)}`;
  const streamingId = "streaming-answer";
  const withAnswer = () => [...history, ai(text, { id: streamingId })];
  parses = 0;
  const { rerender } = render(<Transcript messages={withAnswer()} resolver={resolver} />);
  const answers = 200 + 200 + 1; // tool-call AI messages render too (empty Markdown)
  expect(parses).toBe(answers);
  expect(validations).toBe(200);

  for (let update = 0; update < 200; update++) {
    text += ` token${update}`;
    act(() => rerender(<Transcript messages={withAnswer()} resolver={resolver} />));
  }
  expect(validations).toBe(200); // every tool message validated exactly once
  expect(resolver.stats.indexBuilds).toBe(1);
  expect(parses).toBe(answers + 200); // only the streaming message re-parsed
  expect(screen.getAllByRole("button", { name: /Doc 199\.0/ })).toHaveLength(2);
  expect(document.body.textContent).toContain("token199");
}, 120_000); // ~8 s under jsdom with React's development build; no timing is asserted
