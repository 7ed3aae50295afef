// @vitest-environment jsdom
/**
 * A closed sources panel costs next to nothing: a transcript mounts one per answer and most stay
 * closed, so closed it is its toggle (name, count, state) and nothing else — no list item, no
 * per-source work (no summary, no per-source display, no suffixes) — and opening it mounts the
 * same list as ever.
 */
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import Markdown, { type Components } from "react-markdown";
import { afterEach, describe, expect, it, vi } from "vitest";

import {
  KnowledgeLink,
  KnowledgeMarkdown,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  SourcesPanel,
  createSourceResolver,
} from "../../src/index.js";
import { CitationRegistry } from "../../src/components/citationRegistry.js";
import { ai, cite, human, sharedRecord, toolMessage } from "./fixtures.js";

// Counts the summaries built (the per-source lists a closed panel must not build).
const summaries = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/summary.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/summary.js")>();
  return {
    ...original,
    summarizeCitations: (...args: Parameters<typeof original.summarizeCitations>) => {
      summaries.count += 1;
      return original.summarizeCitations(...args);
    },
  };
});

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

const records = Array.from({ length: 6 }, (_, k) =>
  sharedRecord({ title: k < 2 ? "Manual" : `Doc ${k}`, excerpt: `Excerpt ${k}.`, page: k + 1 }),
);
const missing = { id: "0".repeat(32) };
const markdown =
  records.map((record) => `Fact ${cite(record)}.`).join("\n\n") +
  `\n\nUnverified ${cite(missing)} and [citation:Bad](#knowledge-source-zz).`;
const messages = [human("q"), toolMessage(records), ai(markdown)];

/** The toggle of the only panel on the page, checked to be all the panel holds. */
function closedToggle(): HTMLElement {
  const toggle = screen.getByRole("button", { name: "Sources (6)" });
  expect(toggle.getAttribute("aria-expanded")).toBe("false");
  expect(toggle.hasAttribute("aria-controls")).toBe(false);
  const panel = document.querySelector(".dk-sources")!;
  expect(panel.getAttribute("aria-label")).toBe("Sources");
  expect([...panel.querySelectorAll("*")]).toEqual([toggle]);
  expect(document.querySelectorAll("li, .dk-sources-body, .dk-sources-note")).toHaveLength(0);
  return toggle;
}

/** Opens the panel: the list, numbers, suffixes and notes are the full summary's. */
function expectOpenList(toggle: HTMLElement): void {
  fireEvent.click(toggle);
  expect(toggle.getAttribute("aria-expanded")).toBe("true");
  const body = document.getElementById(toggle.getAttribute("aria-controls")!)!;
  expect([...body.querySelectorAll(".dk-source")].map((el) => el.querySelector(".dk-title-line, .dk-title")?.textContent)).toEqual([
    "Manual · p. 1",
    "Manual · p. 2",
    "Doc 2",
    "Doc 3",
    "Doc 4",
    "Doc 5",
  ]);
  expect(body.textContent).toContain("1 cited source: evidence not loaded");
  expect(body.textContent).toContain("1 malformed citation");
  fireEvent.click(toggle);
  expect(document.querySelectorAll("li")).toHaveLength(0);
}

describe("a closed SourcesPanel", () => {
  it("is its toggle alone and builds no summary until opened", () => {
    const resolver = createSourceResolver();
    summaries.count = 0;
    render(
      <>
        <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={2} resolver={resolver} />
        <SourcesPanel markdown={markdown} messages={messages} messageIndex={2} resolver={resolver} defaultOpen={false} />
      </>,
    );
    const toggle = closedToggle();
    expect(summaries.count).toBe(0);
    expectOpenList(toggle);
    expect(summaries.count).toBe(1);
  });

  it("counts as the open list does, for every mix of citations", () => {
    // Every subset of cited, uncited, missing and malformed citations, in a rotating order.
    for (let mask = 1; mask < 1 << 5; mask++) {
      const parts = [
        cite(records[0]!),
        cite(records[1]!),
        cite(records[0]!),
        cite(missing),
        "[citation:Bad](#knowledge-source-zz)",
      ].filter((_, k) => (mask >> k) & 1);
      const text = parts.map((part, k) => `Point ${k} ${part}.`).join("\n\n");
      const history = [human("q"), toolMessage(records), ai(text)];
      const { unmount } = render(<SourcesPanel markdown={text} messages={history} messageIndex={2} defaultOpen={false} />);
      const toggle = document.querySelector<HTMLElement>(".dk-sources-summary");
      const open = (): { items: number; notes: string } => {
        fireEvent.click(toggle!);
        return {
          items: document.querySelectorAll(".dk-source").length,
          notes: document.querySelector(".dk-sources-body")!.textContent ?? "",
        };
      };
      if (toggle === null) {
        expect(text).not.toContain("#knowledge-source-");
      } else {
        const closedCount = Number(/\((\d+)\)/.exec(toggle.textContent ?? "")![1]);
        const { items, notes } = open();
        expect(closedCount).toBe(items);
        expect(notes.includes("evidence not loaded")).toBe(((mask >> 3) & 1) === 1);
        expect(notes.includes("malformed")).toBe(((mask >> 4) & 1) === 1);
      }
      unmount();
    }
  });
});

describe("a closed KnowledgeSourcesPanel (the glue)", () => {
  const COMPONENTS: Components = { a: (props) => <KnowledgeLink {...props} /> };

  it("is its toggle alone and reads no source list until opened", () => {
    const cited = vi.spyOn(CitationRegistry.prototype, "cited");
    render(
      <KnowledgeSources messages={messages} resolver={createSourceResolver()}>
        <KnowledgeMessage message={messages[2]!}>
          <Markdown components={COMPONENTS}>{markdown}</Markdown>
          <KnowledgeSourcesPanel defaultOpen={false} />
        </KnowledgeMessage>
      </KnowledgeSources>,
    );
    const toggle = closedToggle();
    expect(cited).not.toHaveBeenCalled();
    expectOpenList(toggle);
    expect(cited).toHaveBeenCalled();
  });
});
