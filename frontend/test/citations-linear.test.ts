/**
 * Counted work, not time: finding and relabeling citations stays linear on hostile input, and the
 * linearity guard's limits sit exactly where they are declared.
 *
 * What is counted. micromark reads its input only through `String#charCodeAt`: its preprocessor
 * and its tokenizer's main loop feed every character to a state function that way, and a failed
 * attempt (micromark's only backtracking) re-feeds the characters it revisits the same way. The
 * finder's own scans (the guard's pre-scan, label ends, bracket collection) use it too. So the
 * number of `charCodeAt` calls is the number of characters examined by the tokenizer and by us.
 *
 * The rest of micromark's work iterates over the events it produced: the mdast compiler once,
 * and the inline resolvers — where micromark is super-linear — once per inline marker it treats
 * as syntax (the emphasis resolver searches back from each closing delimiter run and splices each
 * match in, the label-end construct searches back from each `]` for its opener), each time over
 * at most the events of that marker's block. So the test takes micromark's own events for the
 * same input and bounds Σ over blocks of (syntax markers × events); the linearity guard is what
 * keeps it linear (without it `*a` × n makes it n²).
 *
 * Not counted here: micromark's document tokenizer rebuilds its event list whenever it closes
 * containers, so a long message alternating lists with other blocks parses super-linearly
 * (100 KB → 1 MB grew 20–50×) with no inline marker involved; neither count above sees that.
 * MAX_MARKDOWN_CHARS bounds it (only that many code points are parsed as Markdown); the
 * benchmark shows the resulting growth.
 */
import { parse, postprocess, preprocess } from "micromark";
import { describe, expect, it } from "vitest";

import {
  MAX_BRACKET_DEPTH,
  MAX_INLINE_MARKERS,
  MAX_MARKDOWN_CHARS,
  findCitations,
  literalMarkersExtension,
  relabelOrphans,
} from "../src/index.js";

const ID = "0123456789abcdef0123456789abcdef";
const OTHER = "fedcba9876543210fedcba9876543210";
const LINK = `](#knowledge-source-${ID})`;
const cite = (label = "x", id = ID) => `[citation:${label}](#knowledge-source-${id})`;

/** Hostile shapes, each built to about `n` characters. */
const HOSTILE: Record<string, (n: number) => string> = {
  "[ x n, then links x n": (n) => "[".repeat(n / 60) + cite().repeat(n / 60),
  "[citation: x n": (n) => "[citation:".repeat(n / 10),
  "backtick runs": (n) => "`".repeat(n / 20) + "``x".repeat(n / 4),
  "]( x n": (n) => "](".repeat(n / 2),
  "![ x n": (n) => "![".repeat(n / 2),
  "![ x n, then ](x) x n": (n) => "![".repeat(n / 6) + "](x)".repeat(n / 6),
  "nested [ x n a ](#…) x n": (n) => "[".repeat(n / 60) + "a" + LINK.repeat(n / 60),
  "[ x n, then ] x n": (n) => "[".repeat(n / 2) + "]".repeat(n / 2),
  "backslash runs": (n) => "\\".repeat(n / 2) + cite().repeat(n / 120),
  "emphasis *a x n": (n) => "*a".repeat(n / 2),
  "links, one paragraph": (n) => cite().repeat(n / 50),
  "definitions and references": (n) =>
    Array.from({ length: n / 100 }, (_, i) => `[r${i}]: #knowledge-source-${ID}\n`).join("") +
    "\n" +
    Array.from({ length: n / 100 }, (_, i) => `[citation:${i}][r${i}] `).join(""),
  "nested within the depth limit, many blocks": (n) =>
    `${"[".repeat(MAX_BRACKET_DEPTH - 1)}${cite("x", OTHER)}${LINK.repeat(MAX_BRACKET_DEPTH - 1)}\n\n`.repeat(
      n / 1_800,
    ),
};

function counted<T>(run: () => T): { value: T; reads: number } {
  const original = String.prototype.charCodeAt;
  let reads = 0;
  String.prototype.charCodeAt = function charCodeAt(this: string, index: number): number {
    reads += 1;
    return original.call(this, index);
  };
  try {
    return { value: run(), reads };
  } finally {
    String.prototype.charCodeAt = original;
  }
}

const SYNTAX_MARKERS: ReadonlySet<string> = new Set(["attentionSequence", "labelLink", "labelImage", "labelEnd"]);

/** micromark's events for `markdown` (with the guard), and Σ per block of markers × events. */
function eventWork(markdown: string): { events: number; resolverWork: number } {
  const extensions = [literalMarkersExtension(markdown)];
  const events = postprocess(parse({ extensions }).document().write(preprocess()(markdown, undefined, true)));
  // Blocks as the guard splits them: runs of lines between blank lines.
  const blockStarts = [0];
  for (const match of markdown.matchAll(/(?:\r\n|\r|\n)[ \t]*(?=\r\n|\r|\n)/g)) {
    blockStarts.push(match.index + match[0].length);
  }
  const markers = new Map<number, number>();
  const perBlock = new Map<number, number>();
  let block = 0;
  for (const [kind, token] of events) {
    const offset = token.start.offset;
    while (block + 1 < blockStarts.length && (blockStarts[block + 1] as number) <= offset) block += 1;
    while (block > 0 && (blockStarts[block] as number) > offset) block -= 1;
    perBlock.set(block, (perBlock.get(block) ?? 0) + 1);
    if (kind === "enter" && SYNTAX_MARKERS.has(token.type)) markers.set(block, (markers.get(block) ?? 0) + 1);
  }
  let resolverWork = 0;
  for (const [index, count] of markers) resolverWork += count * (perBlock.get(index) ?? 0);
  return { events: events.length, resolverWork };
}

// Characters examined per input character (micromark re-reads a few on failed attempts, and a
// relabel pass parses again): generous constants, far below any quadratic growth at 10^6.
const READS_PER_CHAR = 12;
const EVENTS_PER_CHAR = 8;
const RELABEL_READS_PER_CHAR = 6 * READS_PER_CHAR;

describe("findCitations does linear work", () => {
  for (const [name, build] of Object.entries(HOSTILE)) {
    it(name, { timeout: 300_000 }, () => {
      for (const n of [10_000, 1_000_000]) {
        const markdown = build(n);
        const { reads } = counted(() => findCitations(markdown));
        expect(reads, `reads at ${markdown.length}`).toBeLessThanOrEqual(READS_PER_CHAR * markdown.length);
        const { events, resolverWork } = eventWork(markdown);
        expect(events, `events at ${markdown.length}`).toBeLessThanOrEqual(EVENTS_PER_CHAR * markdown.length);
        expect(resolverWork, `resolver work at ${markdown.length}`).toBeLessThanOrEqual(
          MAX_INLINE_MARKERS * EVENTS_PER_CHAR * markdown.length,
        );
      }
    });
  }
});

describe("relabelOrphans does linear work", () => {
  for (const name of ["nested [ x n a ](#…) x n", "nested within the depth limit, many blocks", "links, one paragraph"]) {
    it(name, { timeout: 300_000 }, () => {
      const markdown = (HOSTILE[name] as (n: number) => string)(1_000_000);
      const { value, reads } = counted(() => relabelOrphans(markdown, []));
      expect(reads).toBeLessThanOrEqual(RELABEL_READS_PER_CHAR * markdown.length);
      expect(findCitations(value).filter((c) => c.kind === "shared")).toEqual([]);
    });
  }
});

describe("the linearity guard", () => {
  const nested = (depth: number) => `${"[".repeat(depth - 1)}${cite()}${"]".repeat(depth - 1)}`;

  it(`keeps links at bracket depth ${MAX_BRACKET_DEPTH} and makes them text one deeper`, () => {
    expect(findCitations(nested(MAX_BRACKET_DEPTH))).toHaveLength(1);
    expect(findCitations(nested(MAX_BRACKET_DEPTH + 1))).toEqual([]);
    expect(findCitations(nested(4), { maxBracketDepth: 3 })).toEqual([]);
  });

  it(`keeps ${MAX_INLINE_MARKERS} inline markers in a block and makes one more text`, () => {
    const links = MAX_INLINE_MARKERS / 2; // two brackets per link
    expect(findCitations(cite().repeat(links))).toHaveLength(links);
    expect(findCitations(`${cite().repeat(links)}*`)).toEqual([]);
    // A delimiter run is one marker: 2 × (links − 1) brackets + 2 runs = the limit.
    const atLimit = `${cite().repeat(links - 1)} ***b***`;
    expect(findCitations(atLimit)).toHaveLength(links - 1);
    expect(findCitations(`${atLimit}_`)).toEqual([]);
    expect(findCitations(cite().repeat(3), { maxInlineMarkers: 5 })).toEqual([]);
  });

  it(`parses the whole lines within ${MAX_MARKDOWN_CHARS} code points, the rest is text`, () => {
    const line = `${cite()}\n`;
    const head = "\u{1F98C}".repeat(MAX_MARKDOWN_CHARS - 2 * [...line].length);
    // The 2nd line ends exactly at the limit …
    expect(findCitations(`${head}${line}${line}`)).toHaveLength(2);
    // … and one code point later it runs past it: plain text.
    const past = `${head}x${line}${line}`;
    const found = findCitations(past);
    expect(found).toHaveLength(1);
    expect(found[0]?.start).toBe(MAX_MARKDOWN_CHARS - 2 * [...line].length + 1);
    expect(findCitations(`${cite()}\n${cite()}`, { maxMarkdownChars: 5 })).toEqual([]);
    // Relabeling shortens the text, which brings the 2nd line within the limit: the next pass
    // relabels it too (each pass answers for the text it is given).
    expect(relabelOrphans(past, [])).toBe(`${head}xx\nx\n`);
  });

  it("only touches the block over the limit", () => {
    const markdown = `${"*a".repeat(MAX_INLINE_MARKERS)} ${cite()}\n\n${cite()}\n`;
    const found = findCitations(markdown);
    expect(found).toHaveLength(1);
    expect(found[0]?.start).toBe(markdown.lastIndexOf("[citation:"));
  });
});
