// @vitest-environment jsdom
import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { KnowledgeMarkdown, createSourceResolver } from "../../src/index.js";
import { ai, cite, human, nativeRecord, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const guide = sharedRecord({ title: "Deer field guide", excerpt: "Deer eat acorns in autumn." });

/** The same message without its `id` (histories from stores that never assign one). */
function idless(message: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, ...rest } = message;
  return rest;
}

function view(messages: readonly unknown[], resolver = createSourceResolver()) {
  const index = messages.length - 1;
  const answer = messages[index] as { content: string };
  return (
    <KnowledgeMarkdown markdown={answer.content} messages={messages} messageIndex={index} resolver={resolver} />
  );
}

const chip = () => screen.queryByRole("button", { name: /Deer field guide/ });

describe("the resolved-chip memory is keyed by the message", () => {
  it("drops old evidence on a switch to another id-less conversation", () => {
    // Before: the memory was keyed by index, so B's answer opened A's source.
    const resolver = createSourceResolver();
    const a = [human("q"), toolMessage([guide]), ai(`A says ${cite(guide)}`)].map(idless);
    const { rerender } = render(view(a, resolver));
    expect(chip()).not.toBeNull();
    const b = [human("other"), ai("Let me check."), ai(`B claims ${cite(guide)} too`)].map(idless);
    rerender(view(b, resolver));
    expect(chip()).toBeNull();
    expect(screen.getByText("evidence not loaded")).toBeTruthy();
  });

  it("keeps an id-less message's chip while the same message stays, even without its evidence", () => {
    const resolver = createSourceResolver();
    const answer = idless(ai(`Fact ${cite(guide)}`));
    const q = idless(human("q"));
    const { rerender } = render(view([q, idless(toolMessage([guide])), answer], resolver));
    expect(chip()).not.toBeNull();
    rerender(view([q, answer], resolver)); // a trimmed window: the same message object
    expect(chip()).not.toBeNull();
    rerender(view([q, structuredClone(answer)], resolver)); // re-parsed: deep-equal content
    expect(chip()).not.toBeNull();
  });

  it("survives a JSON reload of the same conversation and drops a changed message", () => {
    const resolver = createSourceResolver();
    const q = human("q");
    const answer = ai(`Fact ${cite(guide)}`);
    const { rerender } = render(view([q, toolMessage([guide]), answer], resolver));
    expect(chip()).not.toBeNull();
    const reloaded = JSON.parse(JSON.stringify([q, answer])) as unknown[];
    rerender(view(reloaded, resolver));
    expect(chip()).not.toBeNull();
    // The same id with other content is another message: the memory goes.
    const edited = { ...(reloaded[1] as object), content: `Edited ${cite(guide)}` };
    rerender(view([reloaded[0], edited], resolver));
    expect(chip()).toBeNull();
  });

  it("drops the memory when the message is no longer in messages", () => {
    const resolver = createSourceResolver();
    const q = idless(human("q"));
    const answer = idless(ai(`Fact ${cite(guide)}`));
    const markdown = answer["content"] as string;
    const { rerender } = render(view([q, idless(toolMessage([guide])), answer], resolver));
    expect(chip()).not.toBeNull();
    // The history shrinks below the rendered index: that message is gone, and so is its memory.
    const at = (messages: unknown[]) => (
      <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={2} resolver={resolver} />
    );
    rerender(at([q, idless(human("new question"))]));
    rerender(at([q, idless(human("new question")), idless(ai(`Another ${cite(guide)}`))]));
    expect(chip()).toBeNull();
  });
});

describe("saved batch evidence", () => {
  const hex = "ab".repeat(16);
  const record = nativeRecord({ id: `${hex}-1`, text: "Employees accrue 25 days.", pages: [14] });
  const report = `The policy grants 25 days [citation:1](#knowledge-${hex}-1).`;
  const payload = { knowledge_sources: { version: 1, sources: [record], omitted_count: 0 } };

  it("resolves a saved report's chips against its saved evidence only", () => {
    render(<KnowledgeMarkdown markdown={report} savedEvidence={payload} />);
    const saved = screen.getByRole("button", { name: /Employee_Handbook_2026\.pdf/ });
    const preview = document.getElementById(saved.getAttribute("aria-describedby")!)!;
    expect(preview.textContent).toContain("Employees accrue 25 days.");
  });

  it("shows inert labels when the evidence is rejected whole", () => {
    const blank = { knowledge_sources: { ...payload.knowledge_sources, sources: [{ ...record, text: " " }] } };
    render(<KnowledgeMarkdown markdown={report} savedEvidence={blank} />);
    expect(screen.queryByRole("button")).toBeNull();
    const uncited = `No link here, but a shared one ${cite(guide)}.`;
    cleanup();
    render(<KnowledgeMarkdown markdown={uncited} savedEvidence={payload} />);
    expect(screen.queryByRole("button")).toBeNull(); // not cited in the report: rejected whole
  });
});
