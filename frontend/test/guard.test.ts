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
  MAX_INLINE_MARKERS,
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
