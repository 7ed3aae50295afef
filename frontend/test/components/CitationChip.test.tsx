// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it } from "vitest";

import { CitationChip, KnowledgeMarkdown, SourcesPanel, createSourceResolver } from "../../src/index.js";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { MAX_NUMBER_CLASS, citedSentence } from "../../src/components/CitationChip.js";
import { ai, cite, human, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const guide = sharedRecord({
  title: "Deer field guide",
  excerpt: "Deer eat acorns in autumn.",
  url: "https://docs.example/deer",
});
const notes = sharedRecord({ title: "Ranger notes", excerpt: "Fawns are born in spring." });

function setup(markdown: string, records = [guide, notes]) {
  const messages = [human("q"), toolMessage(records), ai(markdown)];
  render(
    <>
      <button type="button">before</button>
      <KnowledgeMarkdown
        markdown={markdown}
        messages={messages}
        messageIndex={2}
        resolver={createSourceResolver()}
      />
      <button type="button">after</button>
    </>,
  );
  return userEvent.setup();
}

const describedBy = (button: HTMLElement): HTMLElement | null =>
  document.getElementById(button.getAttribute("aria-describedby")!);
const isOpen = (button: HTMLElement): boolean =>
  describedBy(button)?.classList.contains("dk-preview") === true;

interface Fiber {
  readonly tag: number;
  readonly alternate: Fiber | null;
  readonly memoizedProps: unknown;
  readonly child: Fiber | null;
  readonly sibling: Fiber | null;
  readonly memoizedState: unknown;
}

// React's work tags of components (function, class, forwardRef, memo, simple memo).
const COMPONENT_TAGS = new Set([0, 1, 11, 14, 15]);

/** The React components, and the fibers holding hook state, rendered inside `element`. */
function fibersBelow(element: HTMLElement): { components: number; stateful: number } {
  const key = Object.keys(element).find((name) => name.startsWith("__reactFiber$"));
  const propsKey = Object.keys(element).find((name) => name.startsWith("__reactProps$"));
  if (key === undefined || propsKey === undefined) throw new Error("not rendered by React");
  const fields = element as unknown as Record<string, Fiber>;
  // The node keeps the fiber it was created with; after an update the current one may be its
  // alternate (the one whose props React last committed to the node).
  const created = fields[key]!;
  const current = created.memoizedProps === fields[propsKey] ? created : created.alternate!;
  const counts = { components: 0, stateful: 0 };
  const walk = (fiber: Fiber | null): void => {
    for (let node = fiber; node !== null; node = node.sibling) {
      if (COMPONENT_TAGS.has(node.tag)) {
        counts.components += 1;
        if (node.memoizedState !== null) counts.stateful += 1;
      }
      walk(node.child);
    }
  };
  walk(current.child);
  return counts;
}

describe("lean chips", () => {
  it("mounts no preview and no excerpt before any interaction", () => {
    const records = Array.from({ length: 30 }, (_, k) =>
      sharedRecord({ title: `Doc ${k}`, excerpt: `Excerpt number ${k}.`, url: `https://d.example/${k}` }),
    );
    const markdown = records.map((record) => `Fact ${cite(record)}.`).join("\n\n");
    const messages = [human("q"), toolMessage(records), ai(markdown)];
    render(
      <>
        <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={2} resolver={createSourceResolver()} />
        <SourcesPanel markdown={markdown} messages={messages} messageIndex={2} defaultOpen={false} />
      </>,
    );
    const chips = screen.getAllByRole("button", { name: /^Source \d+:/ });
    expect(chips).toHaveLength(30);
    expect(document.querySelectorAll(".dk-preview, .dk-excerpt, .dk-sources-list").length).toBe(0);
    expect(document.body.textContent).not.toContain("Excerpt number");
    // A closed chip is one element; every description target exists, hidden (aria-describedby
    // reads hidden targets), one per distinct description.
    for (const chip of chips) {
      expect(chip.children).toHaveLength(0);
      expect(describedBy(chip)?.hidden).toBe(true);
    }
  });

  it("builds a closed chip from seven attributes, one shared description per distinct text", () => {
    const pages = Array.from({ length: 12 }, (_, k) =>
      sharedRecord({ title: `Doc ${k}`, excerpt: `Excerpt ${k}.`, page: (k % 3) + 1 }),
    );
    const markdown = pages.map((record) => `Fact ${cite(record)}.`).join("\n\n");
    const messages = [human("q"), toolMessage(pages), ai(markdown)];
    const { container } = render(
      <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={2} resolver={createSourceResolver()} />,
    );
    const chips = [...container.querySelectorAll(".dk-chip")];
    expect(chips).toHaveLength(12);
    for (const chip of chips) {
      expect(chip.getAttributeNames().sort()).toEqual([
        "aria-describedby",
        "aria-expanded",
        "aria-label",
        "class",
        "data-dk-number",
        "data-dk-source-id",
        "type",
      ]);
    }
    // "local, Page 1", "local, Page 2", "local, Page 3": three hidden descriptions for twelve chips,
    // each right after the first chip it describes.
    const descriptions = [...container.querySelectorAll("[hidden]")];
    expect(descriptions.map((element) => element.textContent)).toEqual(["local, Page 1", "local, Page 2", "local, Page 3"]);
    for (const [index, chip] of chips.entries()) {
      expect(describedBy(chip as HTMLElement)).toBe(descriptions[index % 3]);
      if (index < 3) expect(chip.nextElementSibling).toBe(descriptions[index]);
    }
    // The whole message: 12 paragraphs, 12 buttons, 3 descriptions.
    expect(container.querySelector(".dk-markdown")!.querySelectorAll("*")).toHaveLength(27);
  });

  it("mounts no component and no hook per chip: one state per message", async () => {
    const records = Array.from({ length: 20 }, (_, k) => sharedRecord({ title: `Doc ${k}`, excerpt: `Excerpt ${k}.` }));
    const markdown = records.map((record) => `Fact ${cite(record)}.`).join("\n\n");
    const messages = [human("q"), toolMessage(records), ai(markdown)];
    const { container } = render(
      <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={2} resolver={createSourceResolver()} />,
    );
    const root = container.querySelector<HTMLElement>(".dk-markdown")!;
    expect(fibersBelow(root)).toEqual({ components: 0, stateful: 0 });
    // Open: the one preview (ChipPreview, SourceDetails, SourceTitle) is all that mounts.
    const user = userEvent.setup();
    await user.hover(screen.getByRole("button", { name: "Source 7: Doc 6" }));
    expect(document.querySelectorAll(".dk-preview")).toHaveLength(1);
    expect(fibersBelow(root).components).toBe(3);
    await user.unhover(screen.getByRole("button", { name: "Source 7: Doc 6" }));
    expect(fibersBelow(root)).toEqual({ components: 0, stateful: 0 });
  });

  it("describes a closed chip briefly and an open one with the preview", async () => {
    const user = setup(`A ${cite(guide)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide", description: "local" });
    await user.hover(chip);
    expect(isOpen(chip)).toBe(true);
    expect(
      screen.getByRole("button", {
        name: "Source 1: Deer field guide",
        description: (text) => text.includes("Deer eat acorns in autumn.") && text.startsWith("local"),
      }),
    ).toBe(chip);
    await user.unhover(chip);
    expect(isOpen(chip)).toBe(false);
    expect(document.querySelector(".dk-preview")).toBeNull();
  });
});

describe("a chip on its own (CitationChip)", () => {
  it("is the same lean DOM, opens on hover and pins on click", async () => {
    const messages = [human("q"), toolMessage([guide])];
    const source = createSourceResolver().collectSources(messages, 2).get(guide.id)!;
    const { container } = render(<CitationChip source={source} number={3} />);
    const chip = screen.getByRole("button", { name: "Source 3: Deer field guide", description: "local" });
    expect(chip.getAttribute("aria-expanded")).toBe("false");
    expect(describedBy(chip)?.hidden).toBe(true);
    expect(container.querySelectorAll("*")).toHaveLength(2);
    const user = userEvent.setup();
    await user.hover(chip);
    expect(isOpen(chip)).toBe(true);
    expect(chip.getAttribute("aria-expanded")).toBe("true");
    await user.keyboard("{Escape}");
    expect(isOpen(chip)).toBe(false);
    await user.click(chip);
    expect(isOpen(chip)).toBe(true);
    await user.unhover(chip);
    expect(isOpen(chip)).toBe(true); // pinned (and focused)
    await user.tab(); // into the pinned preview
    expect(document.activeElement?.className).toBe("dk-excerpt");
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("link", { name: /Open source/ }));
    await user.tab(); // out: closes
    expect(container.querySelector(".dk-preview")).toBeNull();
  });
});

describe("the chip's number", () => {
  // Paths from strings: under jsdom the global URL is jsdom's.
  const css = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../../src/components/knowledge.css"), "utf8");
  const source = () => createSourceResolver().collectSources([human("q"), toolMessage([guide])], 2).get(guide.id)!;
  const chipFor = (number: number | undefined) => {
    const { container, unmount } = render(<CitationChip source={source()} number={number} />);
    const chip = container.querySelector(".dk-chip")!;
    const result = { className: chip.className, number: chip.getAttribute("data-dk-number") };
    unmount();
    return result;
  };

  it("names the number in the class up to MAX_NUMBER_CLASS, and only data-dk-number past it", () => {
    expect(chipFor(1)).toEqual({ className: "dk-citation dk-chip dk-n1", number: "1" });
    expect(chipFor(MAX_NUMBER_CLASS)).toEqual({ className: `dk-citation dk-chip dk-n${MAX_NUMBER_CLASS}`, number: `${MAX_NUMBER_CLASS}` });
    expect(chipFor(MAX_NUMBER_CLASS + 1)).toEqual({ className: "dk-citation dk-chip", number: `${MAX_NUMBER_CLASS + 1}` });
    expect(chipFor(undefined)).toEqual({ className: "dk-citation dk-chip", number: null });
    expect(chipFor(0).className).toBe("dk-citation dk-chip");
    expect(chipFor(2.5).className).toBe("dk-citation dk-chip");
  });

  it("is drawn by knowledge.css for exactly the numbers with a class, attr() for the rest", () => {
    const drawn = [...css.matchAll(/^\.dk-chip\.dk-n(\d+)::before \{ content: "(\d+)"; \}$/gm)];
    expect(drawn.map((match) => Number(match[1]))).toEqual(Array.from({ length: MAX_NUMBER_CLASS }, (_, k) => k + 1));
    for (const match of drawn) expect(match[2]).toBe(match[1]);
    expect(css).toMatch(/\.dk-chip\[data-dk-number\]::before \{\s*content: attr\(data-dk-number\);/);
  });
});

describe("citation chip accessibility", () => {
  it("is reachable by Tab and opens its preview on focus", async () => {
    const user = setup(`A ${cite(guide)} B ${cite(notes)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    expect(isOpen(chip)).toBe(false);
    await user.tab(); // "before"
    await user.tab();
    expect(document.activeElement).toBe(chip);
    expect(isOpen(chip)).toBe(true);
    expect(chip.getAttribute("aria-expanded")).toBe("true");
  });

  it("is one tab stop: focus goes from chip to chip, and the link joins only once pinned", async () => {
    const user = setup(`A ${cite(guide)} B ${cite(notes)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    const next = screen.getByRole("button", { name: "Source 2: Ranger notes" });
    await user.tab();
    await user.tab();
    expect(document.activeElement).toBe(chip);
    await user.tab(); // past the open preview's link
    expect(document.activeElement).toBe(next);
    expect(isOpen(chip)).toBe(false);
    expect(isOpen(next)).toBe(true);
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "after" }));
    expect(isOpen(next)).toBe(false);
  });

  it("keeps a pinned preview open while focus moves into its link, and Escape closes it", async () => {
    const user = setup(`A ${cite(guide)} B ${cite(notes)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    await user.tab();
    await user.tab();
    await user.keyboard("{Enter}"); // pin
    await user.tab(); // into the preview: its (scrollable) excerpt
    expect(document.activeElement?.className).toBe("dk-excerpt");
    expect(isOpen(chip)).toBe(true);
    await user.tab(); // its link
    const link = screen.getByRole("link", { name: /Open source/ });
    expect(document.activeElement).toBe(link);
    expect(isOpen(chip)).toBe(true);
    await user.keyboard("{Escape}");
    expect(isOpen(chip)).toBe(false);
    expect(document.activeElement).toBe(chip); // focus returns to the chip
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "Source 2: Ranger notes" }));
  });

  it("opens on hover, stays open over the preview, and closes when the pointer leaves or Escape is pressed", async () => {
    const user = setup(`A ${cite(guide)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    await user.hover(chip);
    expect(isOpen(chip)).toBe(true);
    const preview = describedBy(chip)!;
    fireEvent.mouseOut(chip, { relatedTarget: preview }); // the pointer moves onto the preview
    fireEvent.mouseOver(preview, { relatedTarget: chip });
    expect(isOpen(chip)).toBe(true);
    await user.keyboard("{Escape}");
    expect(isOpen(chip)).toBe(false);
    await user.unhover(chip);
    await user.hover(chip);
    expect(isOpen(chip)).toBe(true);
    await user.unhover(chip);
    expect(isOpen(chip)).toBe(false);
  });

  it("gives inert labels an accessible reason and keeps them out of the tab order", async () => {
    const markdown = `A ${cite({ id: "f".repeat(32) }, "Missing")} B [citation:X](#knowledge-source-bad)`;
    const user = setup(markdown);
    expect(screen.getByText("evidence not loaded").closest("[data-dk-reason]")?.textContent).toBe(
      "Missing (evidence not loaded)",
    );
    expect(screen.getByText("invalid citation").closest("[data-dk-reason]")?.textContent).toBe(
      "X (invalid citation)",
    );
    await user.tab();
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "after" }));
  });
});

describe("what the cited sentence quotes", () => {
  const long = sharedRecord({
    title: "Reader guide",
    excerpt:
      "Readers start here. A reader recomputes the id from the identity fields and compares it. " +
      "Then it looks for the handle.",
  });

  it("is highlighted in the preview", async () => {
    const user = setup(
      `Intro sentence. The reader recomputes the id from the identity fields ${cite(long)} and more.`,
      [long],
    );
    const chip = screen.getByRole("button", { name: "Source 1: Reader guide" });
    await user.hover(chip);
    expect(describedBy(chip)!.querySelector("mark.dk-quote")?.textContent).toBe(
      "reader recomputes the id from the identity fields",
    );
  });

  it("is nothing when the sentence does not quote the excerpt", async () => {
    const user = setup(`Something unrelated entirely ${cite(long)}.`, [long]);
    await user.hover(screen.getByRole("button", { name: "Source 1: Reader guide" }));
    expect(document.querySelector("mark")).toBeNull();
  });

  it("is read from the text since the previous chip or sentence end", () => {
    setup(`First one ${cite(guide)} then the second part. Third bit ${cite(notes)}`);
    const [first, second] = screen.getAllByRole("button", { name: /^Source/ });
    expect(citedSentence(first!)).toBe("First one ");
    expect(citedSentence(second!)).toBe("Third bit ");
  });
});

describe("two sources of one document", () => {
  it("are told apart by page, else by excerpt number, in the chip and its name", () => {
    const p3 = sharedRecord({ title: "Manual", excerpt: "Alpha.", page: 3 });
    const p9 = sharedRecord({ title: "Manual", excerpt: "Beta.", page: 9 });
    const x1 = sharedRecord({ title: "Notes", excerpt: "One." });
    const x2 = sharedRecord({ title: "Notes", excerpt: "Two." });
    const solo = sharedRecord({ title: "Solo", excerpt: "Only." });
    setup(`a ${cite(p3)} b ${cite(p9)} c ${cite(x1)} d ${cite(x2)} e ${cite(solo)} f ${cite(p3)}`, [
      p3,
      p9,
      x1,
      x2,
      solo,
    ]);
    const chips = screen.getAllByRole("button", { name: /^Source/ });
    expect(chips.map((chip) => chip.textContent)).toEqual([
      "Manual · p. 3",
      "Manual · p. 9",
      "Notes · excerpt 1",
      "Notes · excerpt 2",
      "Solo",
      "Manual · p. 3",
    ]);
    expect(chips[3]!.getAttribute("aria-label")).toBe("Source 4: Notes · excerpt 2");
    // Label in name (WCAG 2.5.3): each chip's name holds its visible text word for word.
    for (const chip of chips) expect(chip.getAttribute("aria-label")).toContain(chip.textContent);
  });
});
