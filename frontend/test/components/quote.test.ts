import { describe, expect, it } from "vitest";

import { MAX_POSITIONS_PER_WORD, MAX_SENTENCE_WORDS, MIN_QUOTE_WORDS, findQuote } from "../../src/components/quote.js";

describe("findQuote", () => {
  const excerpt = "The id is computed from the canonical identity. Readers recompute it and compare.";

  it("finds the longest run of shared words, case-insensitively", () => {
    const span = findQuote("As the docs say, readers RECOMPUTE it and compare", excerpt)!;
    expect(excerpt.slice(span.start, span.end)).toBe("Readers recompute it and compare");
  });

  it(`needs at least ${MIN_QUOTE_WORDS} words`, () => {
    expect(findQuote("the id is", excerpt)).toBeNull();
    expect(findQuote("so the id is computed", excerpt)).not.toBeNull();
    expect(findQuote("the id is", excerpt, { minWords: 3 })).not.toBeNull();
  });

  it("returns null without a shared run", () => {
    expect(findQuote("Nothing in common with that text here", excerpt)).toBeNull();
  });

  it.each([
    ["repeated word", (n: number) => "a ".repeat(n / 2)],
    ["two alternating words", (n: number) => "ab cd ".repeat(n / 6)],
    ["near misses", (n: number) => `${"a ".repeat(n / 4)}b ${"a ".repeat(n / 4)}`],
  ])("costs linear work on %s up to 10^6 characters", (_name, make) => {
    const bound = (n: number): number => n + MAX_POSITIONS_PER_WORD * MAX_SENTENCE_WORDS ** 2;
    for (const n of [1_000, 10_000, 1_000_000]) {
      const text = make(n);
      const work = { steps: 0 };
      findQuote(text, text, { work });
      expect(work.steps).toBeLessThanOrEqual(bound(n));
    }
  });
});
