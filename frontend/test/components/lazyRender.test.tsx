// @vitest-environment jsdom
/**
 * Drawing a thread verifies only the evidence its citations need: a transcript of 20 turns
 * whose searches all returned the same sources, each answer citing them (chips, closed panels),
 * verifies the first search alone — through the components and through the glue.
 */
import { cleanup, render, screen } from "@testing-library/react";
import Markdown, { type Components } from "react-markdown";
import { afterEach, describe, expect, it } from "vitest";

import {
  KnowledgeLink,
  KnowledgeMarkdown,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  SourcesPanel,
  createSourceResolver,
  readEnvelope,
} from "../../src/index.js";
import { ai, cite, human, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const records = Array.from({ length: 6 }, (_, k) => sharedRecord({ title: `Doc ${k}`, excerpt: `Excerpt ${k}.` }));
const TURNS = 20;
const messages: Array<Record<string, unknown>> = [];
for (let turn = 0; turn < TURNS; turn++) {
  messages.push(
    human(`question ${turn}`),
    ai(""),
    toolMessage(records),
    ai(records.map((record, k) => `Fact ${turn}.${k} ${cite(record)}.`).join("\n\n")),
  );
}
const answers = messages.flatMap((message, index) =>
  message["type"] === "ai" && message["content"] !== "" ? [index] : [],
);

function countingResolver() {
  const counter = { validations: 0 };
  const resolver = createSourceResolver({
    readShared: (content, artifact) => {
      counter.validations += 1;
      return readEnvelope(content, artifact);
    },
  });
  return { resolver, counter };
}

describe("a rendered 20-search transcript", () => {
  it("verifies one tool message through KnowledgeMarkdown and closed SourcesPanels", () => {
    const { resolver, counter } = countingResolver();
    render(
      <div>
        {answers.map((index) => (
          <article key={index}>
            <KnowledgeMarkdown
              markdown={String(messages[index]!["content"])}
              messages={messages}
              messageIndex={index}
              resolver={resolver}
            />
            <SourcesPanel
              markdown={String(messages[index]!["content"])}
              messages={messages}
              messageIndex={index}
              resolver={resolver}
              defaultOpen={false}
            />
          </article>
        ))}
      </div>,
    );
    expect(screen.getAllByRole("button", { name: "Sources (6)" })).toHaveLength(TURNS);
    expect(screen.getAllByRole("button", { name: /Doc 0/ })).toHaveLength(TURNS);
    expect(counter.validations).toBe(1);
  });

  it("verifies one tool message through the glue (KnowledgeSources, KnowledgeLink)", () => {
    const { resolver, counter } = countingResolver();
    const components: Components = { a: (props) => <KnowledgeLink {...props} /> };
    render(
      <KnowledgeSources messages={messages} resolver={resolver}>
        {answers.map((index) => (
          <KnowledgeMessage key={index} message={messages[index]!}>
            <Markdown components={components}>{String(messages[index]!["content"])}</Markdown>
            <KnowledgeSourcesPanel defaultOpen={false} />
          </KnowledgeMessage>
        ))}
      </KnowledgeSources>,
    );
    expect(screen.getAllByRole("button", { name: "Sources (6)" })).toHaveLength(TURNS);
    expect(screen.getAllByRole("button", { name: /Doc 5/ })).toHaveLength(TURNS);
    expect(counter.validations).toBe(1);
  });
});
