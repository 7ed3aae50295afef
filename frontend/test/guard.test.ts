/**
 * The one Markdown cost guard (src/guard.ts): its single pass does counted linear work on
 * pathological input up to 10^6 characters, the renderer's scan and the finder's per-block rule
 * agree, and the parse uses the ranges the renderer already scanned instead of scanning again.
 */
import { VFile } from "vfile";
import remarkParse from "remark-parse";
import { unified } from "unified";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  MAX_BRACKET_DEPTH,
  MAX_EMPHASIS_RUNS,
  MAX_INDENT_COLUMNS,
  MAX_INLINE_MARKERS,
  MAX_MARKDOWN_CHARS,
  MAX_NESTING_DEPTH,
  capNesting,
  guardMarkdown,
  literalRanges,
  originalOffset,
  scanMarkdown,
} from "../src/guard.js";
import { findCitations, remarkCitations } from "../src/citations.js";

const ID = "0123456789abcdef0123456789abcdef";
const cite = (label = "x") => `[citation:${label}](#knowledge-source-${ID})`;

/** Pathological shapes for every budget at once, each about `n` characters. */
const HOSTILE: Record<string, (n: number) => string> = {
  "deep quotes": (n) => ">".repeat(n),
  "deep lists with markers": (n) => `${"- ".repeat(40)}*a`.repeat(n / 82),
  "deep lines, one block": (n) => `${">".repeat(99)}[\n`.repeat(n / 101),
  "deep indentation": (n) => `${" ".repeat(999)}*\n`.repeat(n / 1001),
  "ordered markers": (n) => "1. ".repeat(n / 3),
  "emphasis": (n) => "*a".repeat(n / 2),
  "brackets": (n) => "[".repeat(n / 2) + "]".repeat(n / 2),
  "escapes": (n) => "\\[".repeat(n / 2),
  "CR line ends, many blocks": (n) => `${cite()}\r\r`.repeat(n / 52),
  "fences": (n) => "```\n>>>>\n".repeat(n / 9),
  "links, one block": (n) => cite().repeat(n / 50),
};

describe("scanMarkdown does linear work", () => {
  for (const [name, build] of Object.entries(HOSTILE)) {
    it(name, () => {
      for (const n of [1_000, 100_000, 1_000_000]) {
        const text = build(n);
        const work = { steps: 0 };
        scanMarkdown(text, { work, maxChars: 2_000_000, maxEmphasisRuns: Infinity });
        // The per-line pass examines each character at most 3 times, the per-block pass once
        // (over the capped text, at most one escape per line longer).
        expect(work.steps, `steps at ${text.length}`).toBeLessThanOrEqual(4 * text.length + 2 * text.split("\n").length + 10);
      }
    });
  }
});

describe("one rule for both parsers", () => {
  it("the renderer's ranges are the finder's ranges of the text it parses", () => {
    for (const build of Object.values(HOSTILE)) {
      const text = build(20_000);
      const scanned = scanMarkdown(text, { maxChars: Infinity, maxEmphasisRuns: Infinity });
      if (scanned.kind !== "markdown") throw new Error("fell back");
      expect(scanned.literal).toEqual(literalRanges(scanned.markdown));
    }
  });

  it("guardMarkdown is the scan without its ranges", () => {
    const text = `${">".repeat(MAX_NESTING_DEPTH + 3)} ${"[".repeat(MAX_BRACKET_DEPTH + 1)}`;
    const scanned = scanMarkdown(text);
    if (scanned.kind !== "markdown") throw new Error("fell back");
    expect(guardMarkdown(text)).toEqual({ kind: "markdown", markdown: scanned.markdown, cappedLines: 1 });
    expect(scanned.literal).toEqual([0, scanned.markdown.length]);
  });

  it(`marks a block over ${MAX_INLINE_MARKERS} markers, not one at the limit`, () => {
    expect(literalRanges("*a".repeat(MAX_INLINE_MARKERS))).toEqual([]);
    const over = `${"*a".repeat(MAX_INLINE_MARKERS + 1)}\n\nfine`;
    expect(literalRanges(over)).toEqual([0, over.indexOf("\n\n") + 1]);
  });

  it("the parse takes the ranges already scanned instead of scanning again", () => {
    const processor = unified().use(remarkParse).use(remarkCitations).freeze();
    const text = `${cite()} and *em*`;
    const plain = new VFile(text);
    expect(JSON.stringify(processor.parse(plain))).toContain('"type":"link"');
    // Ranges handed over for this very text are used as they are: here, the whole text is literal.
    const given = new VFile(text);
    given.data.knowledgeLiteralRanges = [0, text.length];
    const tree = JSON.stringify(processor.parse(given));
    expect(tree).not.toContain('"type":"link"');
    expect(tree).not.toContain('"type":"emphasis"');
    // With no hostile block the parse matches the finder's.
    expect(findCitations(text)).toHaveLength(1);
  });
});

describe("capNesting", () => {
  it("escapes one marker past MAX_NESTING_DEPTH and none at it", () => {
    const at = "> ".repeat(MAX_NESTING_DEPTH) + "x";
    expect(capNesting(at)).toEqual({ markdown: at, edits: [] });
    const past = capNesting("> ".repeat(MAX_NESTING_DEPTH + 1) + "x");
    expect(past.markdown).toBe("> ".repeat(MAX_NESTING_DEPTH) + "\\> x");
    expect(originalOffset(past.edits, past.markdown.length)).toBe(2 * (MAX_NESTING_DEPTH + 1) + 1);
  });

  it("maps every character it kept back to itself", () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[> \-*+1.)\tx`~]{0,60}$/), { maxLength: 6 }), (lines) => {
        const markdown = lines.join("\n");
        const { markdown: capped, edits } = capNesting(markdown, { maxDepth: 3, maxIndentColumns: 8 });
        const inserted = new Set<number>();
        let delta = 0;
        for (const [start, end, text] of edits) {
          for (let k = 0; k < text.length; k++) inserted.add(start + delta + k);
          delta += text.length - (end - start);
        }
        for (let offset = 0; offset < capped.length; offset++) {
          if (!inserted.has(offset)) expect(markdown[originalOffset(edits, offset)]).toBe(capped[offset]);
        }
        expect(originalOffset(edits, capped.length)).toBe(markdown.length);
      }),
    );
  });
});

// guardMarkdown (the renderer's entry to the guard)

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
