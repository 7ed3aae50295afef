import { describe, expect, it } from "vitest";

import {
  MAX_EMPHASIS_RUNS,
  MAX_INDENT_COLUMNS,
  MAX_NESTING_DEPTH,
  guardMarkdown,
} from "../../src/components/markdownGuard.js";
import { MAX_MARKDOWN_CHARS } from "../../src/citations.js";

const markdownOf = (text: string): string => {
  const guarded = guardMarkdown(text);
  if (guarded.kind !== "markdown") throw new Error(`fell back: ${guarded.reason}`);
  return guarded.markdown;
};

describe("guardMarkdown: nesting", () => {
  it("leaves ordinary Markdown untouched (the same string)", () => {
    const text = "# Title\n\n> quote\n> > nested\n\n- a\n  - b\n    1. c\n\n```\n>>>> code\n```\n*em* __strong__";
    const guarded = guardMarkdown(text);
    expect(guarded).toEqual({ kind: "markdown", markdown: text, cappedLines: 0 });
  });

  it("keeps exactly the limit and escapes the marker one past it", () => {
    expect(markdownOf(">".repeat(MAX_NESTING_DEPTH))).toBe(">".repeat(MAX_NESTING_DEPTH));
    expect(markdownOf(">".repeat(MAX_NESTING_DEPTH + 1))).toBe(`${">".repeat(MAX_NESTING_DEPTH)}\\>`);
    expect(markdownOf("- ".repeat(MAX_NESTING_DEPTH + 1) + "x")).toBe(
      `${"- ".repeat(MAX_NESTING_DEPTH)}\\- x`,
    );
    expect(markdownOf("> 1. ".repeat(MAX_NESTING_DEPTH / 2) + "1) x")).toBe(
      `${"> 1. ".repeat(MAX_NESTING_DEPTH / 2)}1\\) x`,
    );
  });

  it("caps the hostile messages from issue 12", () => {
    expect(markdownOf(">".repeat(2492))).toBe(`${">".repeat(MAX_NESTING_DEPTH)}\\${">".repeat(2492 - MAX_NESTING_DEPTH)}`);
    expect(guardMarkdown(">".repeat(10_000))).toMatchObject({ kind: "markdown", cappedLines: 1 });
  });

  it("trims indentation past the limit", () => {
    expect(markdownOf(`${" ".repeat(MAX_INDENT_COLUMNS)}- x`)).toBe(`${" ".repeat(MAX_INDENT_COLUMNS)}- x`);
    expect(markdownOf(`${" ".repeat(MAX_INDENT_COLUMNS + 1)}- x`)).toBe(`${" ".repeat(MAX_INDENT_COLUMNS)}- x`);
  });

  it("leaves fenced code alone", () => {
    const fenced = "```\n" + ">".repeat(100) + "\n```";
    expect(markdownOf(fenced)).toBe(fenced);
  });
});

describe("guardMarkdown: plain-text fallback", () => {
  it("at exactly the emphasis limit renders Markdown, one past it plain text", () => {
    expect(guardMarkdown("*a".repeat(MAX_EMPHASIS_RUNS)).kind).toBe("markdown");
    expect(guardMarkdown("*a".repeat(MAX_EMPHASIS_RUNS + 1))).toMatchObject({
      kind: "plain",
      reason: "too_much_emphasis",
    });
    expect(guardMarkdown("*a".repeat(25_000)).kind).toBe("plain");
  });

  it("at exactly the length limit renders Markdown, one past it plain text", () => {
    expect(guardMarkdown("a".repeat(MAX_MARKDOWN_CHARS)).kind).toBe("markdown");
    expect(guardMarkdown("a".repeat(MAX_MARKDOWN_CHARS + 1))).toMatchObject({ kind: "plain", reason: "too_long" });
  });
});

describe("guardMarkdown: linear work", () => {
  it.each([
    ["deep quotes", (n: number) => ">".repeat(n)],
    ["deep lists", (n: number) => "- ".repeat(n / 2)],
    ["many deep lines", (n: number) => `${">".repeat(99)}\n`.repeat(n / 100)],
    ["deep indentation", (n: number) => `${" ".repeat(999)}\n`.repeat(n / 1000)],
    ["ordered markers", (n: number) => "1. ".repeat(n / 3)],
    ["long digit runs", (n: number) => "123456789".repeat(n / 9)],
    ["emphasis", (n: number) => "*a".repeat(n / 2)],
  ])("examines each character a bounded number of times: %s", (_name, make) => {
    for (const n of [1_000, 10_000, 100_000, 1_000_000]) {
      const text = make(n);
      const work = { steps: 0 };
      guardMarkdown(text, { work, maxChars: 2_000_000 });
      expect(work.steps).toBeLessThanOrEqual(3 * text.length + 10);
    }
  });
});
